package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/resources"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// emulators points the SDK at DynamoDB Local (started by make test) and at
// an in-process S3 emulator, and returns the S3 emulator's backend.
func emulators(t *testing.T) *s3mem.Backend {
	t.Helper()
	ddbtest.Client(t) // skips, or fails under REQUIRE_EMULATORS=1, without DynamoDB Local
	backend := s3mem.New()
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	return backend
}

// freshStage is a stage no other test uses, whose table is deleted at the end.
func freshStage(t *testing.T) resources.Names {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	names, err := resources.For("t" + hex.EncodeToString(b[:]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = ddbtest.Client(t).DeleteTable(context.Background(), &awsddb.DeleteTableInput{TableName: aws.String(names.Table())})
	})
	return names
}

func TestBootstrapCreatesTheStacksTableAndBucketOnce(t *testing.T) {
	backend := emulators(t)
	names := freshStage(t)
	ctx := t.Context()

	first, err := Bootstrap(ctx, names, "000000000000", true)
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	want := Result{Table: names.Table(), Bucket: names.MediaBucket("000000000000", "eu-west-1"), TableCreated: true, BucketCreated: true}
	if first != want {
		t.Fatalf("first run = %+v, want %+v", first, want)
	}
	second, err := Bootstrap(ctx, names, "000000000000", true)
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	want.TableCreated, want.BucketCreated = false, false
	if second != want {
		t.Fatalf("second run = %+v, want %+v (existing resources left as they are)", second, want)
	}

	// The table is laid out as the stack lays it out.
	c := ddbtest.Client(t)
	d, err := c.DescribeTable(ctx, &awsddb.DescribeTableInput{TableName: aws.String(names.Table())})
	if err != nil {
		t.Fatal(err)
	}
	tbl := d.Table
	keys := map[string]ddbtypes.KeyType{}
	for _, k := range tbl.KeySchema {
		keys[*k.AttributeName] = k.KeyType
	}
	if keys["pk"] != ddbtypes.KeyTypeHash || keys["sk"] != ddbtypes.KeyTypeRange || len(keys) != 2 {
		t.Errorf("key schema = %v, want pk HASH, sk RANGE", keys)
	}
	if s := tbl.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != ddbtypes.StreamViewTypeNewAndOldImages {
		t.Errorf("stream = %+v, want NEW_AND_OLD_IMAGES", s)
	}
	if b := tbl.BillingModeSummary; b == nil || b.BillingMode != ddbtypes.BillingModePayPerRequest {
		t.Errorf("billing = %+v, want PAY_PER_REQUEST", b)
	}
	ttl, err := c.DescribeTimeToLive(ctx, &awsddb.DescribeTimeToLiveInput{TableName: aws.String(names.Table())})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "ttl" {
		t.Errorf("TTL = %+v, want on attribute ttl", d)
	}

	buckets, err := backend.ListBuckets()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range buckets {
		got = append(got, b.Name)
	}
	if len(got) != 1 || got[0] != want.Bucket {
		t.Errorf("buckets = %v, want [%s]", got, want.Bucket)
	}
}

func TestBootstrapPrintsTheServiceVariables(t *testing.T) {
	emulators(t)
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	names := freshStage(t)
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--stage", names.Stage}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "export SELLERAPI_STORE=dynamodb SELLERAPI_TABLE=" + names.Table() + " SELLERAPI_MEDIA_BUCKET=" + names.MediaBucket("000000000000", "eu-west-1"); !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
}

// With DynamoDB Local alone, the table is made and the bucket and the
// queues skipped.
func TestBootstrapWithoutS3MakesTheTableOnly(t *testing.T) {
	emulators(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_ENDPOINT_URL_SQS", "")
	names := freshStage(t)
	var out bytes.Buffer
	if err := run(t.Context(), []string{"--stage", names.Stage}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "bucket skipped") || !strings.Contains(out.String(), "queues skipped") || !strings.Contains(out.String(), "export SELLERAPI_STORE=dynamodb SELLERAPI_TABLE="+names.Table()+"\n") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestBootstrapRefusesWithoutLocalEndpoints(t *testing.T) {
	for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(v, "")
	}
	err := run(t.Context(), nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "no local endpoint") {
		t.Fatalf("err = %v, want a refusal", err)
	}
}

func TestBootstrapRejectsABadStage(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	if err := run(t.Context(), []string{"--stage", "Prod_1"}, &bytes.Buffer{}); err == nil {
		t.Fatal("stage Prod_1 accepted")
	}
}

// TestBootstrapCreatesTheWorkQueues runs the queue part twice on the SQS
// emulator: each worker's queue exists with the stack's name and redrive to
// its dead-letter queue, and a second run finds the same queues.
func TestBootstrapCreatesTheWorkQueues(t *testing.T) {
	c := sqstest.Client(t) // skips, or fails under REQUIRE_EMULATORS=1, without the emulator
	names := freshStage(t)
	ctx := t.Context()
	first, err := Queues(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	second, err := Queues(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range resources.Workers() {
		url := first[w.URLEnv]
		if url == "" || second[w.URLEnv] != url || !strings.HasSuffix(url, names.Queue(w.Name)) {
			t.Fatalf("%s: urls %q and %q", w.Function, url, second[w.URLEnv])
		}
		attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameRedrivePolicy}})
		if err != nil {
			t.Fatal(err)
		}
		redrive := attrs.Attributes[string(sqstypes.QueueAttributeNameRedrivePolicy)]
		if !strings.Contains(redrive, names.DeadLetterQueue(w.Name)) || !strings.Contains(redrive, "5") {
			t.Fatalf("%s: redrive policy %q", w.Function, redrive)
		}
	}
}
