// Command bootstrap creates a stage's table, media bucket and work queues on LocalStack
// or the emulators, with the names the CDK stack gives them
// (shared/resources), and leaves them as they are when they exist. The AWS
// SDK finds the endpoints through the standard variables: AWS_ENDPOINT_URL
// (LocalStack), or AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_S3 and
// AWS_ENDPOINT_URL_SQS (the emulators; without an S3 or SQS endpoint the
// bucket or the queues are skipped). Without a
// DynamoDB endpoint it refuses to run, so that it never creates anything in
// AWS, where the stack owns these resources.
//
//	go run ./localstack/bootstrap [--stage local] [--account 000000000000]
//
// It prints the variables that point the service at what it created. The
// local bucket is a stand-in: its public-access block and encryption are the
// stack's job and are asserted by infra's tests, not set here (the S3
// emulator used in tests implements neither).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/blob/s3blob"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/resources"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// localStackAccount is the account id LocalStack answers with by default.
const localStackAccount = "000000000000"

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bootstrap:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("bootstrap", flag.ContinueOnError)
	stage := fs.String("stage", resources.LocalStage, "stage whose resources to create")
	account := fs.String("account", localStackAccount, "account id in the bucket name (LocalStack's is "+localStackAccount+")")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !endpoint("DYNAMODB") {
		return errors.New("no local endpoint: set AWS_ENDPOINT_URL (LocalStack, e.g. http://localhost:4566) or AWS_ENDPOINT_URL_DYNAMODB (and AWS_ENDPOINT_URL_S3); this program is not meant for AWS, where the stack creates these")
	}
	names, err := resources.For(*stage)
	if err != nil {
		return err
	}
	created, err := Bootstrap(ctx, names, *account, endpoint("S3"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "table  %s: %s\n", created.Table, state(created.TableCreated))
	vars := fmt.Sprintf("%s=%s %s=%s", config.EnvStore, config.StoreDynamoDB, config.EnvTable, created.Table)
	if created.Bucket != "" {
		fmt.Fprintf(stdout, "bucket %s: %s\n", created.Bucket, state(created.BucketCreated))
		vars += fmt.Sprintf(" %s=%s", config.EnvMediaBucket, created.Bucket)
	} else {
		fmt.Fprintln(stdout, "bucket skipped: no S3 endpoint (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_S3)")
	}
	if endpoint("SQS") {
		urls, err := Queues(ctx, names)
		if err != nil {
			return err
		}
		for _, w := range resources.Workers() {
			fmt.Fprintf(stdout, "queue  %s: ready\n", names.Queue(w.Name))
			vars += fmt.Sprintf(" %s=%s", w.URLEnv, urls[w.URLEnv])
		}
	} else {
		fmt.Fprintln(stdout, "queues skipped: no SQS endpoint (AWS_ENDPOINT_URL or AWS_ENDPOINT_URL_SQS)")
	}
	fmt.Fprintf(stdout, "\nPoint the service at them:\n  export %s\n", vars)
	return nil
}

// MaxReceiveCount is how often a worker's queue delivers a message before
// it moves to the dead-letter queue, as the stack sets it.
const MaxReceiveCount = 5

// Queues creates every worker's queue and its dead-letter queue, with the
// stack's names and redrive, and returns the queue URLs by the variable
// that carries each. CreateQueue is idempotent for the same attributes, so
// a second run finds the same queues.
func Queues(ctx context.Context, names resources.Names) (map[string]string, error) {
	client, err := sqsqueue.NewClient(ctx)
	if err != nil {
		return nil, err
	}
	urls := map[string]string{}
	for _, w := range resources.Workers() {
		dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(names.DeadLetterQueue(w.Name))})
		if err != nil {
			return nil, fmt.Errorf("create queue %s: %w", names.DeadLetterQueue(w.Name), err)
		}
		attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return nil, fmt.Errorf("queue %s: %w", names.DeadLetterQueue(w.Name), err)
		}
		redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], MaxReceiveCount)
		q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(names.Queue(w.Name)),
			Attributes: map[string]string{string(sqstypes.QueueAttributeNameRedrivePolicy): redrive}})
		if err != nil {
			return nil, fmt.Errorf("create queue %s: %w", names.Queue(w.Name), err)
		}
		urls[w.URLEnv] = aws.ToString(q.QueueUrl)
	}
	return urls, nil
}

// endpoint reports whether the SDK is pointed away from AWS for service.
func endpoint(service string) bool {
	return os.Getenv("AWS_ENDPOINT_URL") != "" || os.Getenv("AWS_ENDPOINT_URL_"+service) != ""
}

func state(created bool) string {
	if created {
		return "created"
	}
	return "exists, left as it is"
}

// Result tells what Bootstrap found and made; Bucket is empty when it was
// not asked for.
type Result struct {
	Table, Bucket               string
	TableCreated, BucketCreated bool
}

// Bootstrap creates the table (laid out by dynamodb.CreateTable, as the
// stack lays it out) and, when bucket is true, the media bucket of names,
// when they are missing.
func Bootstrap(ctx context.Context, names resources.Names, account string, bucket bool) (Result, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("load AWS config: %w", err)
	}
	r := Result{Table: names.Table()}

	ddb, err := dynamodb.NewClient(ctx)
	if err != nil {
		return r, err
	}
	_, err = ddb.DescribeTable(ctx, &awsddb.DescribeTableInput{TableName: aws.String(r.Table)})
	var missing *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &missing):
		r.TableCreated = true
	case err != nil:
		return r, fmt.Errorf("describe table %s: %w", r.Table, err)
	}
	if err := dynamodb.CreateTable(ctx, ddb, r.Table); err != nil {
		return r, err
	}

	if !bucket {
		return r, nil
	}
	r.Bucket = names.MediaBucket(account, cfg.Region)
	// The service's own S3 client: path-style addressing on emulators.
	s3c, err := s3blob.NewClient(ctx)
	if err != nil {
		return r, err
	}
	in := &s3.CreateBucketInput{Bucket: aws.String(r.Bucket)}
	if cfg.Region != "" && cfg.Region != "us-east-1" {
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(cfg.Region)}
	}
	_, err = s3c.CreateBucket(ctx, in)
	var owned *s3types.BucketAlreadyOwnedByYou
	var exists *s3types.BucketAlreadyExists
	switch {
	case err == nil:
		r.BucketCreated = true
	case errors.As(err, &owned), errors.As(err, &exists):
	default:
		return r, fmt.Errorf("create bucket %s: %w", r.Bucket, err)
	}
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(r.Bucket)}); err != nil {
		return r, fmt.Errorf("bucket %s: %w", r.Bucket, err)
	}
	return r, nil
}
