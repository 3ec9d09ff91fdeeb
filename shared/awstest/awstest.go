// Package awstest connects tests to the local AWS emulators `make test`
// starts (DynamoDB Local, local-aws-sqs): the emulator's endpoint, named by
// an AWS_ENDPOINT_URL_* variable, and the client options that reach it with
// dummy credentials and region, so that no AWS configuration is needed.
// Without an emulator the tests skip, unless REQUIRE_EMULATORS=1 makes that
// a failure, as CI does. Packages ddbtest and sqstest build on it.
package awstest

import (
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// Endpoint is the endpoint the variable env names. Without one the test
// skips, or fails under REQUIRE_EMULATORS=1, saying how to start the
// emulator (name, started by script, which writes its endpoint to
// DIR/file).
func Endpoint(t testing.TB, env, name, script, file string) string {
	t.Helper()
	endpoint := os.Getenv(env)
	if endpoint == "" {
		if os.Getenv("REQUIRE_EMULATORS") == "1" {
			t.Fatalf("REQUIRE_EMULATORS=1 but %s is not set: start %s with %s start DIR and export %s=$(cat DIR/%s), or run make test", env, name, script, env, file)
		}
		t.Skipf("%s is not running; run make test", name)
	}
	return endpoint
}

// Options are the client options of an emulator at endpoint.
func Options(endpoint string) []func(*config.LoadOptions) error {
	return []func(*config.LoadOptions) error{
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(endpoint),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
	}
}
