// Package ddbtest connects tests to DynamoDB Local (or any emulator named by
// AWS_ENDPOINT_URL_DYNAMODB; `make test` starts one with
// scripts/dynamodb-local). Without an emulator the tests skip, unless
// REQUIRE_EMULATORS=1 makes that a failure, as CI does.
package ddbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/moku/sellerapi/shared/awstest"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// EndpointEnv names the emulator's endpoint.
const EndpointEnv = "AWS_ENDPOINT_URL_DYNAMODB"

// Client returns a client of the emulator that counts round trips, with
// dummy credentials and region so that no AWS configuration is needed.
func Client(t testing.TB) *ddb.Client {
	t.Helper()
	endpoint := awstest.Endpoint(t, EndpointEnv, "DynamoDB Local", "scripts/dynamodb-local", "dynamodb-local.endpoint")
	c, err := dynamodb.NewClient(context.Background(), awstest.Options(endpoint)...)
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
