package s3blob_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/blob/blobtest"
	"github.com/moku/sellerapi/shared/blob/s3blob/s3test"
)

// TestContract runs the contract against gofakes3, in process.
func TestContract(t *testing.T) {
	blobtest.Run(t, s3test.New(t))
}
