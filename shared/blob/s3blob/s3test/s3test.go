// Package s3test runs an in-process S3 emulator (gofakes3) for tests and
// returns an s3blob store over a fresh bucket in it.
package s3test

import (
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/moku/sellerapi/shared/blob/s3blob"
)

// Bucket is the bucket New creates.
const Bucket = "sellerapi-test-media"

// New starts gofakes3 on a loopback port for the test's lifetime and
// returns a store over an empty bucket in it, with a client configured as
// s3blob.NewClient configures one for an emulator.
func New(t testing.TB) *s3blob.Store {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(srv.URL),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider("local", "local", ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	if _, err := client.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(Bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return s3blob.New(client, Bucket)
}
