// Package sqsqueue is the work-queue port over Amazon SQS (aws-sdk-go-v2):
// the stream router and the workers send with it, and the local binary on
// DynamoDB also receives with it, as the worker Lambdas' event source
// mappings do in AWS.
//
// Queues are named as in package queue ("webhook-deliveries", ...) and
// mapped to their URLs once, when the Queue is built: the stack passes each
// URL in the environment (config.QueueURLEnv()), so sending costs exactly one
// SendMessage and no GetQueueUrl, and the functions need no permission to
// look queues up. Resolve does the look-up by a name prefix, once, for
// setups that only know the names (the emulators, LocalStack).
//
// Retries and the dead-letter queue are the queue's own settings (its
// visibility timeout and redrive policy), not this package's: a message a
// worker fails stays on the queue and comes back, and after the redrive
// policy's maxReceiveCount SQS moves it to the dead-letter queue.
package sqsqueue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/queue"
)

// MaxVisibility is the longest a received message can be hidden (SQS's
// limit for ChangeMessageVisibility); longer retry delays are cut to it.
const MaxVisibility = 12 * time.Hour

// Queue sends to and receives from SQS queues by their names.
type Queue struct {
	client *sqs.Client
	urls   map[string]string
}

var _ queue.Sender = (*Queue)(nil)

// NewClient loads the default AWS configuration (so AWS_ENDPOINT_URL_SQS or
// AWS_ENDPOINT_URL can point it at an emulator or LocalStack) and returns
// an SQS client.
func NewClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*sqs.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: load AWS config: %w", err)
	}
	return sqs.NewFromConfig(cfg), nil
}

// New returns the queues whose URLs urls maps by name. It copies urls.
func New(client *sqs.Client, urls map[string]string) *Queue {
	m := make(map[string]string, len(urls))
	for name, u := range urls {
		m[name] = u
	}
	return &Queue{client: client, urls: m}
}

// Resolve looks up the URL of the queue prefix+name for each name, once,
// with GetQueueUrl.
func Resolve(ctx context.Context, client *sqs.Client, prefix string, names ...string) (map[string]string, error) {
	urls := make(map[string]string, len(names))
	for _, name := range names {
		out, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(prefix + name)})
		if err != nil {
			return nil, fmt.Errorf("sqsqueue: URL of queue %s%s: %w", prefix, name, err)
		}
		urls[name] = aws.ToString(out.QueueUrl)
	}
	return urls, nil
}

// URL returns the URL of the named queue.
func (q *Queue) URL(name string) (string, error) {
	u, ok := q.urls[name]
	if !ok {
		return "", fmt.Errorf("sqsqueue: no URL configured for queue %q", name)
	}
	return u, nil
}

// delaySeconds rounds a delay up to whole seconds, so that a retry never
// comes early, within [0, limit].
func delaySeconds(d, limit time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	d = min(d, limit)
	return int32(math.Ceil(d.Seconds()))
}

// Send enqueues body on the named queue, visible after delay (rounded up to
// whole seconds, at most queue.MaxDelay). SQS bodies are text: body must be
// UTF-8, which every message of the service (JSON) is.
func (q *Queue) Send(ctx context.Context, name string, body []byte, delay time.Duration) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	if !utf8.Valid(body) {
		return fmt.Errorf("sqsqueue: send to %s: body is not UTF-8", name)
	}
	_, err = q.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(u),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: delaySeconds(delay, queue.MaxDelay),
	})
	if err != nil {
		return fmt.Errorf("sqsqueue: send to %s: %w", name, err)
	}
	return nil
}

// Delivery is a received message and the handle that deletes it or
// changes its visibility.
type Delivery struct {
	queue.Message
	ReceiptHandle string
}

// Receive takes up to n (at most 10) visible messages of the named queue,
// waiting up to wait for the first (long polling; zero returns at once).
// They stay hidden for the queue's visibility timeout. (The emulator of
// the tests holds a long poll open for the whole wait, collecting messages
// as they become visible, so its callers poll with a wait of zero.)
func (q *Queue) Receive(ctx context.Context, name string, n int, wait time.Duration) ([]Delivery, error) {
	u, err := q.URL(name)
	if err != nil {
		return nil, err
	}
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(u),
		MaxNumberOfMessages:         int32(min(max(n, 1), 10)),
		WaitTimeSeconds:             delaySeconds(wait, 20*time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
		// The deprecated spelling too: the emulator reads only this one.
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeName(types.MessageSystemAttributeNameApproximateReceiveCount)},
	})
	if err != nil {
		return nil, fmt.Errorf("sqsqueue: receive from %s: %w", name, err)
	}
	ds := make([]Delivery, len(out.Messages))
	for i, m := range out.Messages {
		ds[i] = Delivery{
			Message: queue.Message{ID: aws.ToString(m.MessageId), Queue: name, Body: []byte(aws.ToString(m.Body)),
				Receives: Receives(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])},
			ReceiptHandle: aws.ToString(m.ReceiptHandle),
		}
	}
	return ds, nil
}

// Receives reads SQS's ApproximateReceiveCount attribute; 1 when it is
// missing or unreadable.
func Receives(attr string) int {
	n, err := strconv.Atoi(attr)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Delete removes a handled message.
func (q *Queue) Delete(ctx context.Context, name, receiptHandle string) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(u), ReceiptHandle: aws.String(receiptHandle)}); err != nil {
		return fmt.Errorf("sqsqueue: delete from %s: %w", name, err)
	}
	return nil
}

// ChangeVisibility hides a received message for d from now (rounded up to
// whole seconds, at most MaxVisibility): a failed message comes back then,
// instead of after the queue's visibility timeout.
func (q *Queue) ChangeVisibility(ctx context.Context, name, receiptHandle string, d time.Duration) error {
	u, err := q.URL(name)
	if err != nil {
		return err
	}
	_, err = q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(u), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: delaySeconds(d, MaxVisibility)})
	if err != nil {
		return fmt.Errorf("sqsqueue: change visibility on %s: %w", name, err)
	}
	return nil
}

// Work receives up to n messages of the named queue once, waiting up to
// wait, and handles them in order as the worker Lambda does: a handled
// message is deleted; a failed one stays for a retry after the delay its
// error asks for (queue.DelayOf) or else the queue's visibility timeout.
// It returns how many messages it received; an error means the queue
// could not be reached, never that a handler failed.
func (q *Queue) Work(ctx context.Context, name string, n int, wait time.Duration, h queue.Handler) (int, error) {
	ds, err := q.Receive(ctx, name, n, wait)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, d := range ds {
		herr := h(ctx, d.Message)
		if herr == nil {
			errs = append(errs, q.Delete(ctx, name, d.ReceiptHandle))
			continue
		}
		if delay, ok := queue.DelayOf(herr); ok {
			errs = append(errs, q.ChangeVisibility(ctx, name, d.ReceiptHandle, delay))
		}
	}
	return len(ds), errors.Join(errs...)
}
