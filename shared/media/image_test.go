package media_test

import (
	"bytes"
	"context"
	"image"
	"strings"
	"testing"

	"golang.org/x/image/webp"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

func reencode(t *testing.T, b []byte, contentType string) (media.Header, image.Image) {
	t.Helper()
	h, err := media.Inspect(b, contentType, media.MaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	c, err := canonical.Encode(context.Background(), b, h, media.Quality, media.MaxOutputBytes)
	if err != nil {
		t.Fatal(err)
	}
	m, err := webp.Decode(bytes.NewReader(c.Data))
	if err != nil {
		t.Fatal(err)
	}
	if m.Bounds().Dx() != c.Width || m.Bounds().Dy() != c.Height {
		t.Fatalf("canonical %v, reported %dx%d", m.Bounds(), c.Width, c.Height)
	}
	return h, m
}

// TestOrientation: a JPEG's EXIF orientation is applied to the pixels,
// since the canonical file carries no metadata.
func TestOrientation(t *testing.T) {
	jpg := mediatest.JPEG(mediatest.Photo(64, 32, 0, 1), 95)
	for o, want := range map[int]image.Point{1: {64, 32}, 3: {64, 32}, 6: {32, 64}, 8: {32, 64}} {
		h, m := reencode(t, mediatest.WithOrientation(jpg, o), media.TypeJPEG)
		if h.Orientation != o || m.Bounds().Size() != want {
			t.Errorf("orientation %d: header %+v, canonical %v; want %v", o, h, m.Bounds().Size(), want)
		}
	}
}

// TestTransparencyOverWhite: transparent pixels come out white.
func TestTransparencyOverWhite(t *testing.T) {
	_, m := reencode(t, mediatest.TransparentPNG(64, 32), media.TypePNG)
	y := m.(*image.YCbCr).Y
	if v := y[m.(*image.YCbCr).YOffset(8, 16)]; v < 230 {
		t.Fatalf("luma of a transparent pixel is %d, want white (235)", v)
	}
}

// TestWebPInput: a WebP upload is re-encoded from its own planes.
func TestWebPInput(t *testing.T) {
	src := mediatest.WebP(mediatest.Photo(80, 60, 3, 2), 90)
	if _, m := reencode(t, src, media.TypeWebP); m.Bounds().Size() != image.Pt(80, 60) {
		t.Fatalf("canonical %v", m.Bounds())
	}
}

func TestInspect(t *testing.T) {
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		detail            string
	}{
		{"megapixels", media.TypePNG, mediatest.PNGHeader(8000, 2001), "megapixels"},
		{"apng", media.TypePNG, mediatest.APNG(), "animated PNG"},
		{"animated webp", media.TypeWebP, mediatest.AnimatedWebP(), "animated WebP"},
		{"gif", media.TypePNG, mediatest.AnimatedGIF(), "image/gif"},
		{"riff without frame", media.TypeWebP, []byte("RIFF\x04\x00\x00\x00WEBP"), "no image frame"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := media.Inspect(tc.body, tc.contentType, media.MaxPixels)
			if !errs.Is(err, errs.CodeInvalidMedia) || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("err = %v, want INVALID_MEDIA about %q", err, tc.detail)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	b := mediatest.PNG(mediatest.Photo(200, 200, 30, 3))
	h, err := media.Inspect(b, media.TypePNG, media.MaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := canonical.Encode(context.Background(), b, h, media.Quality, 1000); !errs.Is(err, errs.CodeMediaTooLarge) {
		t.Fatalf("err = %v, want MEDIA_TOO_LARGE", err)
	}
}
