package canonical_test

import (
	"context"
	"errors"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/media/mediatest"
	"github.com/moku/sellerapi/shared/media/vp8enc"
)

// media refuses, from the header, what the encoder cannot encode.
func TestInspectBoundsAreTheEncoders(t *testing.T) {
	if media.MaxDimension != vp8enc.MaxDimension {
		t.Fatalf("media.MaxDimension = %d, vp8enc.MaxDimension = %d", media.MaxDimension, vp8enc.MaxDimension)
	}
}

// A decode whose context has ended stops at its next read of the bytes
// and says why: the deadline, not a fault of the file (which would be a
// 400 the client must not retry).
func TestEncodeStopsWhenContextEnds(t *testing.T) {
	photo := mediatest.Photo(64, 48, 3, 2)
	for _, tc := range []struct {
		ct   string
		body []byte
	}{
		{media.TypeJPEG, mediatest.ProgressiveJPEG(640, 480, 3, mediatest.StandardScript(3))},
		{media.TypePNG, mediatest.PNG(photo)},
		{media.TypeWebP, mediatest.WebP(photo, 80)},
	} {
		h, err := media.Inspect(tc.body, tc.ct, media.MaxPixels)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := canonical.Encode(context.Background(), tc.body, h, media.Quality, media.MaxOutputBytes); err != nil {
			t.Fatalf("%s: %v", tc.ct, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = canonical.Encode(ctx, tc.body, h, media.Quality, media.MaxOutputBytes)
		if !errors.Is(err, context.Canceled) || errs.Is(err, errs.CodeInvalidMedia) {
			t.Fatalf("%s after the context ended: %v, want context.Canceled", tc.ct, err)
		}
	}
}
