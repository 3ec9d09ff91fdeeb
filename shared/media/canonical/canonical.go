// Package canonical re-encodes an inspected upload as the service's
// canonical WebP: decode (JPEG, PNG, WebP), turn upright, encode lossy VP8
// (vp8enc). media.Service calls it through its Encode field, so that only
// the processes that take uploads (the media Lambda, the local binary)
// link the encoder.
package canonical

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/vp8enc"
)

// Encode is a media.Encoder.
var _ media.Encoder = Encode

func invalid(format string, args ...any) error {
	return errs.Ef(errs.CodeInvalidMedia, format, args...)
}

// Encode decodes the pixels of an inspected upload, turns them
// upright and re-encodes them as lossy WebP at quality, without metadata.
// A file that cannot be decoded (truncated, corrupt) is INVALID_MEDIA; an
// encoding above maxOutput bytes is MEDIA_TOO_LARGE.
//
// The decoders read the bytes through a reader that fails once ctx ends,
// so a decode stops at its next read past the deadline (image/jpeg reads
// 4 KiB at a time, between scans as within them; the WebP decoder reads
// a frame whole, and the VP8 encoding is not interrupted: both are
// bounded by the pixel count). The error then wraps ctx's.
func Encode(ctx context.Context, b []byte, h media.Header, quality int, maxOutput int64) (media.Canonical, error) {
	var m image.Image
	var err error
	src := ctxReader{ctx: ctx, r: bytes.NewReader(b)}
	switch h.ContentType {
	case media.TypeJPEG:
		m, err = jpeg.Decode(src)
	case media.TypePNG:
		m, err = png.Decode(src)
	case media.TypeWebP:
		m, err = webp.Decode(src)
	}
	if cerr := ctx.Err(); cerr != nil {
		return media.Canonical{}, fmt.Errorf("canonical: decode stopped: %w", cerr)
	}
	if err != nil {
		return media.Canonical{}, invalid("body: the image cannot be decoded (%v); it may be truncated or corrupt", err)
	}
	if r := m.Bounds(); r.Dx() != h.Width || r.Dy() != h.Height {
		return media.Canonical{}, invalid("body: the decoded image (%dx%d) differs from its header (%dx%d)", r.Dx(), r.Dy(), h.Width, h.Height)
	}
	var yuv *image.YCbCr
	switch p := m.(type) {
	case *image.YCbCr:
		if h.ContentType == media.TypeWebP && p.SubsampleRatio == image.YCbCrSubsampleRatio420 {
			yuv = p // already in VP8's colour space
		}
	case *image.NYCbCrA:
		if h.ContentType == media.TypeWebP {
			yuv = vp8enc.FromVP8(p)
		}
	}
	if yuv == nil {
		yuv = vp8enc.FromImage(m, h.Orientation)
	}
	if cerr := ctx.Err(); cerr != nil {
		return media.Canonical{}, fmt.Errorf("canonical: stopped before encoding: %w", cerr)
	}
	out, err := vp8enc.Encode(yuv, quality)
	if err != nil {
		return media.Canonical{}, invalid("body: the image cannot be encoded (%v)", err)
	}
	if int64(len(out)) > maxOutput {
		return media.Canonical{}, errs.Ef(errs.CodeMediaTooLarge, "body: the canonical WebP is %d bytes; at most %d are accepted", len(out), maxOutput)
	}
	r := yuv.Bounds()
	return media.Canonical{Data: out, Width: r.Dx(), Height: r.Dy()}, nil
}

// ctxReader reads r until ctx ends, then fails with ctx's error.
type ctxReader struct {
	ctx context.Context
	r   *bytes.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
