package main

// The emulators (DynamoDB Local, the SQS emulator, the S3 stand-in), their
// clients, and the resources the template declares on them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type emulators struct {
	root, dir      string
	dynamo, sqsURL string
	s3             *s3Server
	log            io.Writer
}

func startEmulators(ctx context.Context, root, dir string, stderr io.Writer) (*emulators, error) {
	e := &emulators{root: root, dir: dir, log: stderr}
	var err error
	if e.dynamo, err = startEmulator(ctx, root, "dynamodb-local", dir, stderr); err != nil {
		return nil, err
	}
	if e.sqsURL, err = startEmulator(ctx, root, "sqs-local", dir, stderr); err != nil {
		e.stop()
		return nil, err
	}
	if e.s3, err = startS3(); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *emulators) stop() {
	if e.s3 != nil {
		e.s3.Close()
	}
	for _, script := range []string{"sqs-local", "dynamodb-local"} {
		stopEmulator(e.root, script, e.dir, e.log)
	}
}

// startEmulator starts an emulator with its script of the repository at
// root (scripts/dynamodb-local, scripts/sqs-local), keeping its files in
// dir, and returns its endpoint.
func startEmulator(ctx context.Context, root, script, dir string, stderr io.Writer) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", script), "start", dir)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/%s start: %w", script, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// stopEmulator stops what startEmulator started in dir.
func stopEmulator(root, script, dir string, stderr io.Writer) {
	cmd := exec.Command("bash", filepath.Join(root, "scripts", script), "stop", dir)
	cmd.Stderr = stderr
	cmd.Run()
}

func (e *emulators) endpoints() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": e.dynamo,
		"AWS_ENDPOINT_URL_SQS":      e.sqsURL,
		"AWS_ENDPOINT_URL_S3":       e.s3.URL,
	}
}

// baseEnv is what every function's process gets besides its template
// environment: the emulators' endpoints and local credentials, as Lambda
// gives its region and the role's credentials.
func baseEnv(endpoints map[string]string) []string {
	env := []string{
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_REGION=" + region(), "AWS_DEFAULT_REGION=" + region(),
		"LAMBDA_TASK_ROOT=/var/task", "TZ=:UTC",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range endpoints {
		env = append(env, k+"="+v)
	}
	return env
}

type clients struct {
	ddb     *dynamodb.Client
	streams *dynamodbstreams.Client
	sqs     *sqs.Client
	s3      *s3.Client
}

func newClients(e *emulators) *clients {
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	return &clients{
		ddb:     dynamodb.New(dynamodb.Options{Region: region(), BaseEndpoint: aws.String(e.dynamo), Credentials: creds}),
		streams: dynamodbstreams.New(dynamodbstreams.Options{Region: region(), BaseEndpoint: aws.String(e.dynamo), Credentials: creds}),
		sqs:     sqs.New(sqs.Options{Region: region(), BaseEndpoint: aws.String(e.sqsURL), Credentials: creds}),
		s3: s3.New(s3.Options{Region: region(), BaseEndpoint: aws.String(e.s3.URL), Credentials: creds, UsePathStyle: true,
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired, ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired}),
	}
}

// createResources creates the table, queues and bucket as the template
// declares them (a table or queue that exists, from an earlier run on the
// same emulators, is kept).
func createResources(ctx context.Context, tpl *Template, c *clients) error {
	t := tpl.Table
	in := &dynamodb.CreateTableInput{TableName: aws.String(t.Name), BillingMode: ddbtypes.BillingModePayPerRequest}
	for _, k := range t.Keys {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(k.Name), AttributeType: ddbtypes.ScalarAttributeType(k.Type)})
		in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.Name), KeyType: ddbtypes.KeyType(k.KeyType)})
	}
	if t.StreamView != "" {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(t.StreamView)}
	}
	if _, err := c.ddb.CreateTable(ctx, in); err != nil {
		var inUse *ddbtypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", t.Name, err)
		}
	}
	if t.TTLAttribute != "" {
		if _, err := c.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(t.Name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)}}); err != nil && !strings.Contains(err.Error(), "already enabled") {
			return fmt.Errorf("table %s time to live: %w", t.Name, err)
		}
	}
	if err := createQueues(ctx, tpl, c.sqs); err != nil {
		return err
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(tpl.Bucket.Name)}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
		return fmt.Errorf("create bucket %s: %w", tpl.Bucket.Name, err)
	}
	return nil
}

// createQueues creates the template's queues with their visibility
// timeouts, retention and redrive policies, and records their URLs.
func createQueues(ctx context.Context, tpl *Template, client *sqs.Client) error {
	// Dead-letter queues first: a queue's redrive policy names its DLQ's ARN.
	arns := map[string]string{}
	var create func(id string) error
	create = func(id string) error {
		q := tpl.Queues[id]
		if q.URL != "" {
			return nil
		}
		attrs := map[string]string{
			string(sqstypes.QueueAttributeNameVisibilityTimeout):      fmt.Sprint(int(q.VisibilityTimeout.Seconds())),
			string(sqstypes.QueueAttributeNameMessageRetentionPeriod): fmt.Sprint(int(q.Retention.Seconds())),
		}
		if q.DeadLetter != "" {
			if err := create(q.DeadLetter); err != nil {
				return err
			}
			rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arns[q.DeadLetter], "maxReceiveCount": q.MaxReceiveCount})
			attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(rp)
		}
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", q.Name, err)
		}
		q.URL = aws.ToString(out.QueueUrl)
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("queue %s: %w", q.Name, err)
		}
		arns[id] = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		return nil
	}
	for id := range tpl.Queues {
		if err := create(id); err != nil {
			return err
		}
	}
	return nil
}

func (c *clients) streamARN(ctx context.Context, table string) (string, error) {
	out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}
