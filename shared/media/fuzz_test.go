package media_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

// fuzzDecodeBudget bounds what one fuzz input may make the decoder hold,
// as the gate bounds an upload.
const fuzzDecodeBudget = 16 << 20

// FuzzImage drives image inspection and decoding with the bytes of an
// upload, under each declared type. Nothing panics; every refusal is an
// INVALID_MEDIA (400) or MEDIA_TOO_LARGE (413); what Inspect admits within
// the budget decodes to the size its header announced, or is refused.
//
// It counts work too: the scan walk's own iterations are linear in the
// bytes (at most two per byte), and a JPEG Inspect admits has at most
// MaxJPEGScans scans and MaxScanWork block visits, and at least one visit
// of each of its MCUs (what one pass of the decoder makes).
func FuzzImage(f *testing.F) {
	photo := mediatest.Photo(24, 16, 3, 1)
	jpg := mediatest.JPEG(photo, 80)
	for _, seed := range [][]byte{
		jpg,
		mediatest.WithOrientation(jpg, 6),
		mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("RGB ", "sRGB IEC61966-2.1"), 200),
		mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("RGB ", "Adobe RGB (1998)"), 200),
		append([]byte("\xff\xd8\xff\xe1\x00\x00"), jpg[2:]...),
		append([]byte("\xff\xd8\xff\xe1\x00\x01"), jpg[2:]...),
		mediatest.JPEGShape(64, 48, true, 4),
		mediatest.ProgressiveJPEG(40, 24, 3, mediatest.StandardScript(3)),
		mediatest.ProgressiveJPEG(40, 24, 1, mediatest.StandardScript(1)),
		mediatest.ProgressiveJPEG(40, 24, 1, repeatedBand(40)),
		mediatest.ProgressiveJPEG(16, 16, 1, lawfulScans(501)),
		mediatest.PNG(photo),
		mediatest.PNGWithICC(mediatest.PNG(photo), mediatest.ICCProfile("RGB ", "Display P3")),
		mediatest.PNGShape(32, 32, 16, 6, true),
		mediatest.APNG(),
		mediatest.TransparentPNG(16, 8),
		mediatest.WebP(photo, 80),
		mediatest.AnimatedWebP(),
		mediatest.AnimatedGIF(),
		jpg[:len(jpg)/2],
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		scans, work, steps, walkErr := media.JPEGScans(b)
		if steps > 2*int64(len(b)) {
			t.Fatalf("the scan walk took %d steps over %d bytes", steps, len(b))
		}
		for _, ct := range []string{media.TypeJPEG, media.TypePNG, media.TypeWebP} {
			h, err := media.Inspect(b, ct, media.MaxPixels)
			if err != nil {
				wantMediaRefusal(t, "inspect", err)
				continue
			}
			if h.Width < 1 || h.Height < 1 || h.Cost < int64(h.Width)*int64(h.Height) {
				t.Fatalf("header %+v", h)
			}
			if ct == media.TypeJPEG {
				// A scan visits at least every MCU once; an MCU is at most
				// 32x32 pixels (sampling factors are at most 4).
				blocks := int64((h.Width+31)/32) * int64((h.Height+31)/32)
				if walkErr != nil || scans > media.MaxJPEGScans || work > media.MaxScanWork || h.ScanWork != work || scans > 0 && work < blocks {
					t.Fatalf("admitted a JPEG of %d scans and %d block visits (header %d, %d blocks, walk %v)", scans, work, h.ScanWork, blocks, walkErr)
				}
			} else if h.ScanWork != 0 {
				t.Fatalf("%s with scan work %d", ct, h.ScanWork)
			}
			if h.Cost > fuzzDecodeBudget {
				continue // the gate refuses it: 413
			}
			c, err := canonical.Encode(context.Background(), b, h, media.Quality, media.MaxOutputBytes)
			if err != nil {
				wantMediaRefusal(t, "canonicalize", err)
				continue
			}
			w, ht := h.Width, h.Height
			if h.Orientation >= 5 {
				w, ht = ht, w
			}
			if c.Width != w || c.Height != ht || len(c.Data) == 0 {
				t.Fatalf("canonical %dx%d (%d bytes) from header %+v", c.Width, c.Height, len(c.Data), h)
			}
		}
	})
}

func wantMediaRefusal(t *testing.T, what string, err error) {
	t.Helper()
	e := errs.As(err)
	if e.Code != errs.CodeInvalidMedia && e.Code != errs.CodeMediaTooLarge {
		t.Fatalf("%s: %v, want INVALID_MEDIA or MEDIA_TOO_LARGE", what, err)
	}
}
