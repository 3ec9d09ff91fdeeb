// Package canonical re-encodes an inspected upload as the service's
// canonical WebP: decode (JPEG, PNG, WebP), turn upright, encode lossy VP8
// (vp8enc). media.Service calls it through its Encode field, so that only
// the processes that take uploads (the media Lambda, the local binary)
// link the encoder.
package canonical

import (
	"bytes"
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
func Encode(b []byte, h media.Header, quality int, maxOutput int64) (media.Canonical, error) {
	var m image.Image
	var err error
	switch h.ContentType {
	case media.TypeJPEG:
		m, err = jpeg.Decode(bytes.NewReader(b))
	case media.TypePNG:
		m, err = png.Decode(bytes.NewReader(b))
	case media.TypeWebP:
		m, err = webp.Decode(bytes.NewReader(b))
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
