// Package ddbtest connects tests to DynamoDB Local (or any emulator named by
// AWS_ENDPOINT_URL_DYNAMODB; `make test` starts one with
// scripts/dynamodb-local). Without an emulator the tests skip, unless
// REQUIRE_EMULATORS=1 makes that a failure, as CI does.
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// EndpointEnv names the emulator's endpoint.
const EndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

// Client returns a client of the emulator that counts round trips, with
// dummy credentials and region so that no AWS configuration is needed.
func Client(t testing.TB) *ddb.Client {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		if os.Getenv("REQUIRE_EMULATORS") == "1" {
			t.Fatalf("REQUIRE_EMULATORS=1 but %s is not set: start DynamoDB Local with scripts/dynamodb-local start DIR and export %s=$(cat DIR/dynamodb-local.endpoint), or run make test", EndpointEnv, EndpointEnv)
		}
		t.Skip("DynamoDB Local not running; run make test")
	}
	c, err := dynamodb.NewClient(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(endpoint),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
	)
	if err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	return c
}

var unsafe = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// NewTable creates a table with a unique name on the emulator, laid out as
// dynamodb.CreateTable does, and deletes it when the test ends. The table's
// TTL is off: DynamoDB Local would delete items by the wall clock, and tests
// decide expiry with a clock of their own (the store hides expired items).
func NewTable(t testing.TB) (*ddb.Client, string) {
	t.Helper()
	c := Client(t)
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	base := unsafe.ReplaceAllString(t.Name(), "_")
	if len(base) > 200 {
		base = base[len(base)-200:]
	}
	name := "t_" + base + "_" + hex.EncodeToString(suffix[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamodb.CreateTable(ctx, c, name, dynamodb.WithoutTTL()); err != nil {
		t.Fatalf("ddbtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("ddbtest: delete table %s: %v", name, err)
		}
	})
	return c, name
}
