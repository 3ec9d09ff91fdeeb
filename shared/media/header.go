package media

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"sort"
	"strings"
	"unicode/utf16"
)

// What decoding costs, read from the header before any pixel is decoded.
// The figures follow the decoders this package uses (image/jpeg,
// image/png, x/image/webp) and the encoder (vp8enc), rounded up:
//
//   - JPEG: one byte per sample of every component at its sampling, four
//     more per sample when progressive (the decoder keeps every coefficient
//     as an int32 until the last scan), four per pixel when the decoder
//     converts to RGBA (Adobe RGB transform) or to CMYK (four components).
//   - PNG: the decoded image's bytes per pixel (16-bit samples take twice
//     the 8-bit ones, RGB becomes RGBA), twice over when interlaced (each
//     of the seven passes is decoded into its own image, then merged).
//   - WebP: 4:2:0 planes for VP8 (plus alpha), 12 bytes a pixel for VP8L.
//   - Re-encoding: encodeBytesPerPixel for the YCbCr copy, the encoder's
//     source and reconstruction planes and its coefficients.
const encodeBytesPerPixel = 6

// shape is what the header says about the pixels beyond their count.
type shape struct {
	decode int64    // bytes the decoder holds at its peak
	traits []string // what makes decode large, for messages
	icc    []byte   // the embedded ICC profile, nil when none
	iccBad bool     // a profile is announced but cannot be assembled
}

// jpegShape reads a JPEG's frame header, Adobe marker and ICC chunks.
func jpegShape(b []byte, w, h int) (shape, error) {
	var (
		progressive  bool
		ids          []byte
		hs, vs       []int
		adobe        bool
		transform    byte
		chunks       = map[int][]byte{}
		chunkCount   int
		iccAnnounced bool
	)
	err := jpegSegments(b, func(marker byte, p []byte) {
		switch {
		case marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc:
			if len(p) < 6 || hs != nil {
				return
			}
			progressive = marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce
			n := int(p[5])
			for i := 0; i < n && 6+3*i+2 < len(p); i++ {
				ids = append(ids, p[6+3*i])
				hs = append(hs, max(1, int(p[6+3*i+1]>>4)))
				vs = append(vs, max(1, int(p[6+3*i+1]&15)))
			}
		case marker == 0xee && len(p) >= 12 && string(p[:5]) == "Adobe":
			adobe, transform = true, p[11]
		case marker == 0xe2 && bytes.HasPrefix(p, []byte("ICC_PROFILE\x00")):
			iccAnnounced = true
			if len(p) < 14 {
				return
			}
			seq, count := int(p[12]), int(p[13])
			chunkCount = max(chunkCount, count)
			if _, dup := chunks[seq]; !dup {
				chunks[seq] = p[14:]
			}
		}
	})
	if err != nil {
		return shape{}, err
	}
	var s shape
	px := int64(w) * int64(h)
	if len(hs) > 0 {
		hmax, vmax := 1, 1
		for i := range hs {
			hmax, vmax = max(hmax, hs[i]), max(vmax, vs[i])
		}
		mxx := (int64(w) + 8*int64(hmax) - 1) / (8 * int64(hmax))
		myy := (int64(h) + 8*int64(vmax) - 1) / (8 * int64(vmax))
		var samples int64
		for i := range hs {
			samples += mxx * myy * int64(hs[i]) * int64(vs[i]) * 64
		}
		s.decode = samples
		if progressive {
			s.decode += 4 * samples
			s.traits = append(s.traits, "progressive")
		}
		switch {
		case len(hs) == 4:
			s.decode += 4 * px
			s.traits = append(s.traits, "CMYK")
		case len(hs) == 3 && (adobe && transform == 0 || string(ids) == "RGB"):
			s.decode += 4 * px
			s.traits = append(s.traits, "RGB components")
		}
	} else {
		s.decode = 5 * px // no frame header seen: the decoder will refuse it
	}
	if iccAnnounced {
		var icc []byte
		for seq := 1; seq <= chunkCount; seq++ {
			c, ok := chunks[seq]
			if !ok {
				s.iccBad = true
				break
			}
			icc = append(icc, c...)
		}
		if chunkCount == 0 {
			s.iccBad = true
		}
		s.icc = icc
	}
	return s, nil
}

// pngShape reads a PNG's header and the chunks before its image data.
func pngShape(b []byte, w, h int) shape {
	var s shape
	depth, colour, interlaced, trns := byte(8), byte(2), false, false
	for i := 8; i+8 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[i:]))
		typ := string(b[i+4 : i+8])
		if n < 0 || n > len(b)-i-8 {
			break
		}
		data := b[i+8 : i+8+n]
		switch typ {
		case "IHDR":
			if len(data) >= 13 {
				depth, colour, interlaced = data[8], data[9], data[12] == 1
			}
		case "tRNS":
			trns = true
		case "iCCP":
			s.icc, s.iccBad = pngProfile(data)
			if s.icc == nil {
				s.iccBad = true
			}
		}
		if typ == "IDAT" || typ == "IEND" {
			break
		}
		i += 12 + n
	}
	bpp := int64(4)
	switch {
	case colour == 3:
		bpp = 1
	case colour == 0 && !trns:
		bpp = 1
	}
	if depth == 16 {
		bpp *= 2
		if colour == 0 && trns {
			bpp = 8
		}
		s.traits = append(s.traits, "16-bit samples")
	}
	px := int64(w) * int64(h)
	s.decode = px*bpp + 16*int64(w)
	if interlaced {
		s.decode += px * bpp
		s.traits = append(s.traits, "interlaced")
	}
	return s
}

// maxProfile bounds an inflated ICC profile.
const maxProfile = 4 << 20

// pngProfile inflates an iCCP chunk: a name, a NUL, the method (0, zlib)
// and the compressed profile.
func pngProfile(data []byte) ([]byte, bool) {
	nul := bytes.IndexByte(data, 0)
	if nul < 1 || nul+2 > len(data) || data[nul+1] != 0 {
		return nil, true
	}
	r, err := zlib.NewReader(bytes.NewReader(data[nul+2:]))
	if err != nil {
		return nil, true
	}
	defer r.Close()
	p, err := io.ReadAll(io.LimitReader(r, maxProfile+1))
	if err != nil || len(p) > maxProfile {
		return nil, true
	}
	return p, false
}

// webpShape reads a WebP's chunks: the frame's kind, alpha and ICC.
func webpShape(b []byte, w, h int) shape {
	var s shape
	lossless, alpha := false, false
	if len(b) >= 21 && string(b[12:16]) == "VP8X" {
		alpha = b[20]&0x10 != 0
		if b[20]&0x20 != 0 {
			s.iccBad = true // announced; the ICCP chunk must follow
		}
	}
	for i := 12; i+8 <= len(b); {
		typ := string(b[i : i+4])
		n := int(binary.LittleEndian.Uint32(b[i+4:]))
		if n < 0 || n > len(b)-i-8 {
			break
		}
		switch typ {
		case "ICCP":
			s.icc, s.iccBad = b[i+8:i+8+n], false
		case "ALPH":
			alpha = true
		case "VP8L":
			lossless = true
		}
		i += 8 + n + n&1
	}
	px := int64(w) * int64(h)
	switch {
	case lossless:
		s.decode = 12 * px
		s.traits = append(s.traits, "lossless")
	case alpha:
		s.decode = px*3/2 + 2*px
	default:
		s.decode = px * 3 / 2
	}
	return s
}

// iccProfile is what an ICC profile says about itself.
type iccProfile struct {
	space       string // data colour space: "RGB ", "GRAY", "CMYK", …
	description string
}

// parseICC reads an ICC profile's header and its description tag ('desc',
// as the v2 textDescriptionType or the v4 multiLocalizedUnicodeType). It
// reports false when the profile is not readable.
func parseICC(p []byte) (iccProfile, bool) {
	if len(p) < 132 || string(p[36:40]) != "acsp" {
		return iccProfile{}, false
	}
	prof := iccProfile{space: string(p[16:20])}
	count := int(binary.BigEndian.Uint32(p[128:]))
	for k := 0; k < count && k < 1024; k++ {
		e := 132 + 12*k
		if e+12 > len(p) {
			return iccProfile{}, false
		}
		if string(p[e:e+4]) != "desc" {
			continue
		}
		off, size := int(binary.BigEndian.Uint32(p[e+4:])), int(binary.BigEndian.Uint32(p[e+8:]))
		if off < 0 || size < 12 || off > len(p) || size > len(p)-off {
			return iccProfile{}, false
		}
		prof.description = iccText(p[off : off+size])
	}
	return prof, true
}

// iccText reads a description tag's text.
func iccText(t []byte) string {
	switch string(t[:4]) {
	case "desc":
		n := int(binary.BigEndian.Uint32(t[8:]))
		if n < 0 || n > len(t)-12 {
			n = len(t) - 12
		}
		return strings.TrimRight(string(t[12:12+n]), "\x00")
	case "mluc":
		if len(t) < 16 {
			return ""
		}
		recs, recSize := int(binary.BigEndian.Uint32(t[8:])), int(binary.BigEndian.Uint32(t[12:]))
		type rec struct {
			lang string
			text string
		}
		var out []rec
		for r := 0; r < recs && r < 64 && recSize >= 12; r++ {
			e := 16 + r*recSize
			if e+12 > len(t) {
				break
			}
			n, off := int(binary.BigEndian.Uint32(t[e+4:])), int(binary.BigEndian.Uint32(t[e+8:]))
			if off < 0 || n < 0 || off > len(t) || n > len(t)-off {
				continue
			}
			u := make([]uint16, n/2)
			for i := range u {
				u[i] = binary.BigEndian.Uint16(t[off+2*i:])
			}
			out = append(out, rec{lang: string(t[e : e+2]), text: string(utf16.Decode(u))})
		}
		// English first, for a stable message.
		sort.SliceStable(out, func(i, j int) bool { return out[i].lang == "en" && out[j].lang != "en" })
		if len(out) > 0 {
			return strings.TrimRight(out[0].text, "\x00")
		}
	}
	return ""
}

// checkProfile accepts an image whose embedded profile says its pixels are
// sRGB (or grey), the colour space the canonical WebP is read in; any
// other profile is refused, since the pixels would be re-encoded without
// conversion and come out with the wrong colours.
func checkProfile(s shape) error {
	if s.icc == nil && !s.iccBad {
		return nil
	}
	if s.iccBad {
		return invalid("body: the image announces an embedded ICC colour profile that cannot be read; the service cannot tell its colours. " +
			"Convert the image to sRGB without a profile (or with an sRGB one) and upload again")
	}
	prof, ok := parseICC(s.icc)
	if !ok {
		return invalid("body: the image's embedded ICC colour profile cannot be read; the service cannot tell its colours. " +
			"Convert the image to sRGB without a profile (or with an sRGB one) and upload again")
	}
	if prof.space == "GRAY" || prof.space == "RGB " && strings.Contains(strings.ToLower(prof.description), "srgb") {
		return nil
	}
	name := prof.description
	if name == "" {
		name = "unnamed " + strings.TrimSpace(prof.space)
	}
	return invalid("body: the image carries an embedded ICC colour profile (%q, %s) other than sRGB; the service does not convert colours, "+
		"so the canonical image would show them wrong. Convert the image to sRGB (most editors: Export, Convert to sRGB) and upload again",
		name, strings.TrimSpace(prof.space))
}
