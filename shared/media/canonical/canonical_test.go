package canonical_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/vp8enc"
)

// media refuses, from the header, what the encoder cannot encode.
func TestInspectBoundsAreTheEncoders(t *testing.T) {
	if media.MaxDimension != vp8enc.MaxDimension {
		t.Fatalf("media.MaxDimension = %d, vp8enc.MaxDimension = %d", media.MaxDimension, vp8enc.MaxDimension)
	}
}
