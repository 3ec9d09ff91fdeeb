// Package sqstest connects tests to the SQS emulator (or any endpoint named
// by AWS_ENDPOINT_URL_SQS; `make test` starts local-aws-sqs with
// scripts/sqs-local) and creates throwaway queues laid out as the stack's:
// each work queue with a dead-letter queue behind a redrive policy. Without
// an emulator the tests skip, unless REQUIRE_EMULATORS=1 makes that a
// failure, as CI does.
//
// Where local-aws-sqs 2.0.2 differs from SQS: a long poll stays open for
// its whole wait, collecting messages as they become visible (so poll with
// a wait of zero); a ChangeMessageVisibility counts as a receive in
// ApproximateReceiveCount and towards the redrive policy; and a message is
// moved to the dead-letter queue when its last visibility timeout ends,
// not on the next receive.
package sqstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/awstest"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
)

// EndpointEnv names the emulator's endpoint.
const EndpointEnv = "AWS_ENDPOINT_URL_SQS"

// Client returns a client of the emulator, with dummy credentials and
// region so that no AWS configuration is needed.
func Client(t testing.TB) *sqs.Client {
	t.Helper()
	endpoint := awstest.Endpoint(t, EndpointEnv, "the SQS emulator", "scripts/sqs-local", "sqs-local.endpoint")
	c, err := sqsqueue.NewClient(context.Background(), awstest.Options(endpoint)...)
	if err != nil {
		t.Fatalf("sqstest: %v", err)
	}
	return c
}

// Layout is how Queues makes each queue.
type Layout struct {
	// Visibility is the queue's visibility timeout (default 30 s).
	Visibility time.Duration
	// MaxReceives is the redrive policy's maxReceiveCount (default 5).
	MaxReceives int
	// MaxMessageSize, when set, is the queue's MaximumMessageSize in
	// bytes (SQS's least is 1,024): a longer message is refused.
	MaxMessageSize int
}

// Queues are the throwaway queues of one test, by name.
type Queues struct {
	Prefix string
	// URLs and DLQs map each name to its queue's and its dead-letter
	// queue's URL.
	URLs, DLQs map[string]string
}

// NewQueues creates, for each name, a queue and its dead-letter queue under
// a prefix unique to the test, and deletes them when the test ends.
func NewQueues(t testing.TB, c *sqs.Client, l Layout, names ...string) Queues {
	t.Helper()
	if l.Visibility == 0 {
		l.Visibility = 30 * time.Second
	}
	if l.MaxReceives == 0 {
		l.MaxReceives = 5
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	qs := Queues{Prefix: "t" + hex.EncodeToString(suffix[:]) + "-", URLs: map[string]string{}, DLQs: map[string]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(name string, attrs map[string]string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("sqstest: create queue %s: %v", name, err)
		}
		u := aws.ToString(out.QueueUrl)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
				t.Errorf("sqstest: delete queue %s: %v", name, err)
			}
		})
		return u
	}
	for _, name := range names {
		dlq := create(qs.Prefix+name+"-dlq", nil)
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlq),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatalf("sqstest: ARN of %s: %v", dlq, err)
		}
		arn := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
		qs.DLQs[name] = dlq
		qattrs := map[string]string{
			string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(l.Visibility.Seconds())),
			string(types.QueueAttributeNameRedrivePolicy):     fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, arn, l.MaxReceives),
		}
		if l.MaxMessageSize > 0 {
			qattrs[string(types.QueueAttributeNameMaximumMessageSize)] = strconv.Itoa(l.MaxMessageSize)
		}
		qs.URLs[name] = create(qs.Prefix+name, qattrs)
	}
	return qs
}
