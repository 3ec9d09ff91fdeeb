package media

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"

	"github.com/moku/sellerapi/shared/errs"
)

// Accepted content types, by the format their bytes must have.
const (
	TypeJPEG = "image/jpeg"
	TypePNG  = "image/png"
	TypeWebP = "image/webp"
)

// Header is what the bytes of an upload say before any pixel is decoded.
type Header struct {
	ContentType   string
	Width, Height int
	// Orientation is the EXIF orientation of a JPEG (1..8), 1 otherwise.
	Orientation int
	// Cost estimates, from the header alone, the memory decoding and
	// re-encoding the image holds at its peak, in bytes (see header.go).
	Cost int64
	// Traits name what makes Cost more than the pixel count suggests
	// (16-bit samples, interlaced, progressive, CMYK…), for messages.
	Traits []string
	// ScanWork is a JPEG's decoding work in block visits, read from its
	// scan headers (scans.go), at most MaxScanWork; zero for PNG and
	// WebP, whose decoding is linear in their pixels and bytes (both
	// bounded before this) and has no pass a file can repeat.
	ScanWork int64
}

func invalid(format string, args ...any) error {
	return errs.Ef(errs.CodeInvalidMedia, format, args...)
}

// sniff names the format of b by its signature.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return TypeJPEG
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return TypePNG
	case len(b) >= 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return TypeWebP
	case bytes.HasPrefix(b, []byte("GIF8")):
		return "image/gif"
	}
	return ""
}

// Inspect checks an upload's bytes against its declared content type and
// the limits that can be read from the header: one frame, at most maxPixels
// and VP8's 16383 pixels a side, and for a JPEG the scans' work
// (jpegScans). Nothing is decoded, so a header that announces a huge image,
// or scans that would take minutes to decode, cost a walk of the bytes.
func Inspect(b []byte, declared string, maxPixels int64) (Header, error) {
	format := sniff(b)
	switch {
	case format == "":
		return Header{}, invalid("body: not a JPEG, PNG or WebP image")
	case format != declared:
		return Header{}, invalid("body: Content-Type is %s but the bytes are %s", declared, format)
	}
	h := Header{ContentType: format, Orientation: 1}
	var cfg image.Config
	var err error
	switch format {
	case TypeJPEG:
		if h.Orientation, err = jpegOrientation(b); err != nil {
			return Header{}, err
		}
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(b))
	case TypePNG:
		if err := pngOneFrame(b); err != nil {
			return Header{}, err
		}
		cfg, err = png.DecodeConfig(bytes.NewReader(b))
	case TypeWebP:
		var w, ht int
		if w, ht, err = webpFrame(b); err != nil {
			return Header{}, err
		}
		cfg, err = webp.DecodeConfig(bytes.NewReader(b))
		if err == nil && (cfg.Width != w || cfg.Height != ht) {
			return Header{}, invalid("body: the WebP canvas (%dx%d) and its frame (%dx%d) differ", cfg.Width, cfg.Height, w, ht)
		}
	}
	if err != nil {
		return Header{}, invalid("body: the image header cannot be read (%v)", err)
	}
	h.Width, h.Height = cfg.Width, cfg.Height
	if h.Width < 1 || h.Height < 1 {
		return Header{}, invalid("body: the image is empty")
	}
	if int64(h.Width)*int64(h.Height) > maxPixels {
		return Header{}, invalid("body: %dx%d is %.1f megapixels; at most %.0f are accepted", h.Width, h.Height,
			float64(h.Width)*float64(h.Height)/1e6, float64(maxPixels)/1e6)
	}
	if h.Width > MaxDimension || h.Height > MaxDimension {
		return Header{}, invalid("body: %dx%d is wider or taller than %d pixels", h.Width, h.Height, MaxDimension)
	}
	var sh shape
	switch format {
	case TypeJPEG:
		if sh, err = jpegShape(b, h.Width, h.Height); err != nil {
			return Header{}, err
		}
		sw, err := jpegScans(b)
		if err != nil {
			return Header{}, err
		}
		h.ScanWork = sw.work
	case TypePNG:
		sh = pngShape(b, h.Width, h.Height)
	case TypeWebP:
		sh = webpShape(b, h.Width, h.Height)
	}
	if err := checkProfile(sh); err != nil {
		return Header{}, err
	}
	h.Cost = sh.decode + encodeBytesPerPixel*int64(h.Width)*int64(h.Height)
	h.Traits = sh.traits
	return h, nil
}

// pngOneFrame refuses an animated PNG (APNG): an acTL chunk before the
// image data.
func pngOneFrame(b []byte) error {
	for i := 8; i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		switch typ {
		case "acTL":
			return invalid("body: an animated PNG has more than one frame; upload one frame")
		case "IDAT", "IEND":
			return nil
		}
		if n < 0 || n > len(b) {
			return nil // the decoder reports the damage
		}
		i += 12 + n
	}
	return nil
}

// webpFrame walks the RIFF chunks of a WebP file: it refuses animation and
// returns the size of the one VP8 or VP8L frame.
func webpFrame(b []byte) (w, h int, err error) {
	if len(b) >= 21 && string(b[12:16]) == "VP8X" && b[20]&0x02 != 0 {
		return 0, 0, invalid("body: an animated WebP has more than one frame; upload one frame")
	}
	for i := 12; i+8 <= len(b); {
		typ := string(b[i : i+4])
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		p := b[i+8:]
		switch typ {
		case "ANIM", "ANMF":
			return 0, 0, invalid("body: an animated WebP has more than one frame; upload one frame")
		case "VP8 ":
			if len(p) < 10 {
				return 0, 0, invalid("body: the WebP frame is truncated")
			}
			return int(binary.LittleEndian.Uint16(p[6:]) & 0x3fff), int(binary.LittleEndian.Uint16(p[8:]) & 0x3fff), nil
		case "VP8L":
			if len(p) < 5 || p[0] != 0x2f {
				return 0, 0, invalid("body: the WebP frame is truncated")
			}
			bits := binary.LittleEndian.Uint32(p[1:])
			return int(bits&0x3fff) + 1, int(bits>>14&0x3fff) + 1, nil
		}
		if n < 0 || n > len(b) {
			break
		}
		i += 8 + n + n&1
	}
	return 0, 0, invalid("body: the WebP file has no image frame")
}

// jpegSegments walks the marker segments of a JPEG before its first scan,
// calling fn with each marker and its payload (cut short at the end of the
// bytes). A segment's length counts its own two bytes, so a length below 2
// is refused: it would make the walk go backwards. Anything else the walk
// cannot follow is left for the decoder to report.
func jpegSegments(b []byte, fn func(marker byte, payload []byte)) error {
	for i := 2; i+4 <= len(b); {
		if b[i] != 0xff {
			return nil
		}
		marker := b[i+1]
		switch {
		case marker == 0xff: // fill byte before a marker
			i++
			continue
		case marker == 0x01 || marker >= 0xd0 && marker <= 0xd7: // no payload
			i += 2
			continue
		case marker == 0xda || marker == 0xd9: // start of scan, end of image
			return nil
		}
		n := int(binary.BigEndian.Uint16(b[i+2:]))
		if n < 2 {
			return invalid("body: the image header cannot be read (the JPEG segment at byte %d declares length %d; at least 2 is possible)", i, n)
		}
		fn(marker, b[i+4:min(i+2+n, len(b))])
		i += 2 + n
	}
	return nil
}

// jpegOrientation reads the EXIF orientation tag of a JPEG, 1 when absent
// or unreadable: the pixels are turned upright before the metadata goes.
func jpegOrientation(b []byte) (int, error) {
	o := 1
	seen := false
	err := jpegSegments(b, func(marker byte, seg []byte) {
		if marker == 0xe1 && !seen && bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
			o, seen = exifOrientation(seg[6:]), true
		}
	})
	return o, err
}

func exifOrientation(t []byte) int {
	if len(t) < 8 {
		return 1
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 1
	}
	off := int(bo.Uint32(t[4:]))
	if off < 8 || off+2 > len(t) {
		return 1
	}
	count := int(bo.Uint16(t[off:]))
	for k := 0; k < count; k++ {
		e := off + 2 + 12*k
		if e+12 > len(t) {
			return 1
		}
		if bo.Uint16(t[e:]) == 0x0112 {
			if v := int(bo.Uint16(t[e+8:])); v >= 1 && v <= 8 {
				return v
			}
			return 1
		}
	}
	return 1
}

// Canonical is an upload re-encoded.
type Canonical struct {
	Data          []byte
	Width, Height int
}

// Encoder decodes the pixels of an inspected upload, turns them upright
// and re-encodes them as lossy WebP at quality, without metadata; a file
// that cannot be decoded is INVALID_MEDIA, an encoding above maxOutput
// bytes MEDIA_TOO_LARGE. When ctx ends, it stops as soon as it can and
// returns an error wrapping ctx's. media/canonical.Encode is the service's;
// only the processes that take uploads (the media Lambda, the local
// binary) link it.
type Encoder func(ctx context.Context, b []byte, h Header, quality int, maxOutput int64) (Canonical, error)

// MaxDimension is VP8's largest width or height, in pixels.
const MaxDimension = 16383
