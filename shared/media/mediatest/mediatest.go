// Package mediatest makes real image files for tests and benchmarks: photo
// -like JPEG, PNG and WebP files, and the malformed ones an upload must
// refuse (truncated, animated, a header announcing too many pixels).
package mediatest

import (
	"bytes"
	"compress/zlib"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"image"
	"image/color"
	"image/color/palette"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"math/bits"
	"math/rand/v2"
	"sync"

	"github.com/moku/sellerapi/shared/media/vp8enc"
)

// Digest is the lowercase hex SHA-256 of b, the path digest of an upload.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Photo draws a w x h photo-like picture: smooth gradients and shading, a
// shape with hard edges and sensor-like noise of the given strength. seed
// makes different pictures of the same size.
func Photo(w, h int, noise float64, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 200*fx + 40*math.Sin(fy*9+float64(seed))
			g := 180*fy + 30*math.Cos(fx*13)
			b := 120 + 80*math.Sin((fx+fy)*7)
			if dx, dy := fx-0.5, fy-0.5; dx*dx+dy*dy < 0.04 {
				r, g, b = 230-r/3, 60+g/4, 40
			}
			n := rng.NormFloat64() * noise
			m.Pix[m.PixOffset(x, y)+0] = clamp(r + n)
			m.Pix[m.PixOffset(x, y)+1] = clamp(g + n)
			m.Pix[m.PixOffset(x, y)+2] = clamp(b + n)
			m.Pix[m.PixOffset(x, y)+3] = 255
		}
	}
	return m
}

func clamp(v float64) uint8 { return uint8(math.Max(0, math.Min(255, v))) }

// JPEG encodes m at quality.
func JPEG(m image.Image, quality int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, m, &jpeg.Options{Quality: quality}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// PNG encodes m.
func PNG(m image.Image) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WebP encodes m as lossy WebP.
func WebP(m image.Image, quality int) []byte {
	b, err := vp8enc.Encode(vp8enc.FromImage(m, 1), quality)
	if err != nil {
		panic(err)
	}
	return b
}

var (
	bigOnce sync.Once
	bigJPEG []byte
)

// LargePhotoJPEG is a 3000x2000 (6 MP) photo-like JPEG of about 2 MiB,
// just under the upload limit: what a seller's camera sends. It is made
// once per process.
func LargePhotoJPEG() []byte {
	bigOnce.Do(func() {
		bigJPEG = JPEG(Photo(3000, 2000, 7, 1), 92)
	})
	return bigJPEG
}

// chunk is one PNG chunk with its CRC.
func chunk(typ string, data []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	out = append(out, typ...)
	out = append(out, data...)
	return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(append([]byte(typ), data...)))
}

// PNGHeader is a PNG signature and header announcing a w x h RGB image,
// then the end: no pixel data at all.
func PNGHeader(w, h int) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	ihdr = append(ihdr, 8, 2, 0, 0, 0)
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	return append(out, chunk("IEND", nil)...)
}

// APNG is a valid PNG with an animation control chunk (two frames) after
// its header: an animated PNG that plain decoders show as a still.
func APNG() []byte {
	p := PNG(Photo(32, 24, 2, 2))
	ihdrEnd := 8 + 12 + 13
	actl := binary.BigEndian.AppendUint32(nil, 2)
	actl = binary.BigEndian.AppendUint32(actl, 0)
	out := append([]byte{}, p[:ihdrEnd]...)
	out = append(out, chunk("acTL", actl)...)
	return append(out, p[ihdrEnd:]...)
}

// AnimatedWebP is the start of an animated WebP: a VP8X header with the
// animation flag and an ANIM chunk.
func AnimatedWebP() []byte {
	vp8x := []byte{0x02, 0, 0, 0, 31, 0, 0, 23, 0, 0} // animation; canvas 32x24
	anim := []byte{0, 0, 0, 0, 0, 0}
	body := []byte("WEBP")
	body = append(body, "VP8X"...)
	body = binary.LittleEndian.AppendUint32(body, uint32(len(vp8x)))
	body = append(body, vp8x...)
	body = append(body, "ANIM"...)
	body = binary.LittleEndian.AppendUint32(body, uint32(len(anim)))
	body = append(body, anim...)
	out := []byte("RIFF")
	out = binary.LittleEndian.AppendUint32(out, uint32(len(body)))
	return append(out, body...)
}

// AnimatedGIF is a two-frame GIF.
func AnimatedGIF() []byte {
	var b bytes.Buffer
	frames := []*image.Paletted{image.NewPaletted(image.Rect(0, 0, 8, 8), palette.Plan9), image.NewPaletted(image.Rect(0, 0, 8, 8), palette.Plan9)}
	frames[1].Set(1, 1, color.White)
	if err := gif.EncodeAll(&b, &gif.GIF{Image: frames, Delay: []int{10, 10}}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// NoisePNG is a 4000x4000 (16 MP) PNG of about 1 MiB whose rows repeat a
// random 48-pixel pattern: deflate compresses it, VP8 cannot, so its
// canonical WebP is far above 2 MiB.
func NoisePNG() []byte {
	rng := rand.New(rand.NewPCG(9, 9))
	m := image.NewNRGBA(image.Rect(0, 0, 4000, 4000))
	for y := 0; y < 4000; y++ {
		row := m.Pix[y*m.Stride : (y+1)*m.Stride]
		for x := 0; x < 48*4; x++ {
			row[x] = uint8(rng.IntN(256))
			if x%4 == 3 {
				row[x] = 255
			}
		}
		for x := 48 * 4; x < len(row); x++ {
			row[x] = row[x-48*4]
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&b, m); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// WithOrientation inserts an EXIF segment carrying orientation o (1..8)
// after the start of a JPEG, as cameras write it.
func WithOrientation(jpg []byte, o int) []byte {
	tiff := []byte("MM\x00\x2a\x00\x00\x00\x08") // big-endian, IFD0 at 8
	tiff = binary.BigEndian.AppendUint16(tiff, 1)
	tiff = binary.BigEndian.AppendUint16(tiff, 0x0112) // Orientation
	tiff = binary.BigEndian.AppendUint16(tiff, 3)      // SHORT
	tiff = binary.BigEndian.AppendUint32(tiff, 1)
	tiff = binary.BigEndian.AppendUint16(tiff, uint16(o))
	tiff = append(tiff, 0, 0, 0, 0, 0, 0) // value padding, no next IFD
	seg := append([]byte("Exif\x00\x00"), tiff...)
	app1 := []byte{0xff, 0xe1}
	app1 = binary.BigEndian.AppendUint16(app1, uint16(len(seg)+2))
	app1 = append(app1, seg...)
	out := append([]byte{}, jpg[:2]...)
	out = append(out, app1...)
	return append(out, jpg[2:]...)
}

// TransparentPNG is a w x h PNG whose left half is fully transparent.
func TransparentPNG(w, h int) []byte {
	m := Photo(w, h, 0, 4)
	for y := 0; y < h; y++ {
		for x := 0; x < w/2; x++ {
			m.Pix[m.PixOffset(x, y)+3] = 0
		}
	}
	return PNG(m)
}

// PNGShape is a PNG signature and header announcing a w x h image of the
// given bit depth, colour type (0 grey, 2 RGB, 4 grey+alpha, 6 RGBA) and
// interlacing, then the end: no pixel data, so only what the header says can
// be judged.
func PNGShape(w, h int, depth, colour byte, interlaced bool) []byte {
	ihdr := binary.BigEndian.AppendUint32(nil, uint32(w))
	ihdr = binary.BigEndian.AppendUint32(ihdr, uint32(h))
	il := byte(0)
	if interlaced {
		il = 1
	}
	ihdr = append(ihdr, depth, colour, 0, 0, il)
	out := []byte("\x89PNG\r\n\x1a\n")
	out = append(out, chunk("IHDR", ihdr)...)
	return append(out, chunk("IEND", nil)...)
}

// jpegSegment is a JPEG marker segment with its length.
func jpegSegment(marker byte, payload []byte) []byte {
	out := []byte{0xff, marker}
	out = binary.BigEndian.AppendUint16(out, uint16(len(payload)+2))
	return append(out, payload...)
}

// JPEGShape is the start of a JPEG announcing a w x h frame: progressive
// (SOF2) or baseline (SOF0), with comps components (1, 3 or 4) sampled
// 1x1, an Adobe marker with transform when comps is 4 (0: CMYK), a scan
// header and the end: no scan data, so only what the header says can be
// judged.
func JPEGShape(w, h int, progressive bool, comps int) []byte {
	out := []byte{0xff, 0xd8}
	if comps == 4 {
		out = append(out, jpegSegment(0xee, []byte("Adobe\x00\x64\x00\x00\x00\x00\x00"))...)
	}
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	for i := 0; i < comps; i++ {
		sof = append(sof, byte(i+1), 0x11, 0)
	}
	marker := byte(0xc0)
	if progressive {
		marker = 0xc2
	}
	out = append(out, jpegSegment(marker, sof)...)
	sos := []byte{byte(comps)}
	for i := 0; i < comps; i++ {
		sos = append(sos, byte(i+1), 0)
	}
	se := byte(63)
	if progressive {
		se = 0 // a progressive JPEG's first scan codes the DC coefficients
	}
	out = append(out, jpegSegment(0xda, append(sos, 0, se, 0))...)
	return append(out, 0xff, 0xd9)
}

// ICCProfile is a minimal ICC profile: a header naming the data colour
// space ("RGB ", "GRAY", "CMYK") and one v2 description tag.
func ICCProfile(space, description string) []byte {
	desc := []byte("desc\x00\x00\x00\x00")
	desc = binary.BigEndian.AppendUint32(desc, uint32(len(description)+1))
	desc = append(desc, description...)
	desc = append(desc, 0)
	desc = append(desc, make([]byte, 12+67)...) // empty Unicode and ScriptCode parts
	p := make([]byte, 128)
	copy(p[12:], "mntr")
	copy(p[16:], space)
	copy(p[20:], "XYZ ")
	copy(p[36:], "acsp")
	p = binary.BigEndian.AppendUint32(p, 1)
	p = append(p, "desc"...)
	p = binary.BigEndian.AppendUint32(p, uint32(128+4+12))
	p = binary.BigEndian.AppendUint32(p, uint32(len(desc)))
	p = append(p, desc...)
	binary.BigEndian.PutUint32(p[0:], uint32(len(p)))
	return p
}

// JPEGWithICC inserts profile after the start of a JPEG, in APP2
// ICC_PROFILE segments of at most chunk bytes each, as editors write it.
func JPEGWithICC(jpg, profile []byte, chunkSize int) []byte {
	var segs []byte
	n := (len(profile) + chunkSize - 1) / chunkSize
	for i := 0; i < n; i++ {
		part := profile[i*chunkSize : min(len(profile), (i+1)*chunkSize)]
		payload := append([]byte("ICC_PROFILE\x00"), byte(i+1), byte(n))
		segs = append(segs, jpegSegment(0xe2, append(payload, part...))...)
	}
	out := append([]byte{}, jpg[:2]...)
	out = append(out, segs...)
	return append(out, jpg[2:]...)
}

// PNGWithICC inserts profile as an iCCP chunk after a PNG's header.
func PNGWithICC(p, profile []byte) []byte {
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(profile)
	zw.Close()
	data := append([]byte("test profile\x00\x00"), z.Bytes()...)
	ihdrEnd := 8 + 12 + 13
	out := append([]byte{}, p[:ihdrEnd]...)
	out = append(out, chunk("iCCP", data)...)
	return append(out, p[ihdrEnd:]...)
}

// Scan is one scan of a progressive JPEG: the components it codes (indexes
// into the frame's), its spectral band Ss..Se (zig-zag order) and its
// successive approximation bit positions Ah, Al.
type Scan struct {
	Comps          []int
	Ss, Se, Ah, Al int
}

// StandardScript is libjpeg's default progression (jpeg_simple_progression,
// what cjpeg -progressive and jpegtran -progressive write): 10 scans for
// three components, 6 for one.
func StandardScript(comps int) []Scan {
	if comps == 1 {
		return []Scan{
			{[]int{0}, 0, 0, 0, 1},
			{[]int{0}, 1, 5, 0, 2},
			{[]int{0}, 6, 63, 0, 2},
			{[]int{0}, 1, 63, 2, 1},
			{[]int{0}, 0, 0, 1, 0},
			{[]int{0}, 1, 63, 1, 0},
		}
	}
	return []Scan{
		{[]int{0, 1, 2}, 0, 0, 0, 1},
		{[]int{0}, 1, 5, 0, 2},
		{[]int{2}, 1, 63, 0, 1},
		{[]int{1}, 1, 63, 0, 1},
		{[]int{0}, 6, 63, 0, 2},
		{[]int{0}, 1, 63, 2, 1},
		{[]int{0, 1, 2}, 0, 0, 1, 0},
		{[]int{2}, 1, 63, 1, 0},
		{[]int{1}, 1, 63, 1, 0},
		{[]int{0}, 1, 63, 1, 0},
	}
}

// ProgressiveJPEG is a progressive JPEG of a flat grey w x h picture with
// comps components (1 or 3, each sampled 1x1), coded by script. Every scan
// codes every block of its components: DC differences of zero, and AC
// coefficients as end-of-band runs (up to 32,767 blocks a run, a few bits),
// so a scan takes a few bytes whatever the picture's size. That is what
// makes a file of many scans cheap to send and, to a decoder that walks
// every block in every scan, costly to decode.
func ProgressiveJPEG(w, h, comps int, script []Scan) []byte {
	out := []byte{0xff, 0xd8}
	q := []byte{0}
	for range 64 {
		q = append(q, 1)
	}
	out = append(out, jpegSegment(0xdb, q)...)
	sof := []byte{8, byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(comps)}
	for i := 0; i < comps; i++ {
		sof = append(sof, byte(i+1), 0x11, 0)
	}
	out = append(out, jpegSegment(0xc2, sof)...)
	// DC table 0: categories 0 and 1, a bit each. AC table 0: end-of-band
	// runs EOB0..EOB14, four bits each (code R is R in four bits).
	dht := []byte{0x00, 2}
	dht = append(dht, make([]byte, 15)...)
	dht = append(dht, 0, 1)
	ac := []byte{0x10, 0, 0, 0, 15}
	ac = append(ac, make([]byte, 12)...)
	for r := 0; r < 15; r++ {
		ac = append(ac, byte(r<<4))
	}
	out = append(out, jpegSegment(0xc4, append(dht, ac...))...)
	blocks := ((w + 7) / 8) * ((h + 7) / 8)
	for _, s := range script {
		sos := []byte{byte(len(s.Comps))}
		for _, c := range s.Comps {
			sos = append(sos, byte(c+1), 0x00)
		}
		sos = append(sos, byte(s.Ss), byte(s.Se), byte(s.Ah<<4|s.Al))
		out = append(out, jpegSegment(0xda, sos)...)
		var bw bitWriter
		switch {
		case s.Ss == 0: // DC: category 0 (first) or a zero correction bit (refinement), per block
			for range blocks * len(s.Comps) {
				bw.put(0, 1)
			}
		default:
			for n := blocks; n > 0; {
				run := min(n, 32767)
				r := bits.Len(uint(run)) - 1
				bw.put(uint32(r), 4)
				bw.put(uint32(run-1<<r), r)
				n -= run
			}
		}
		out = append(out, bw.flush()...)
	}
	return append(out, 0xff, 0xd9)
}

// bitWriter writes a scan's entropy-coded bits, most significant first,
// stuffing a zero byte after each 0xFF.
type bitWriter struct {
	out  []byte
	acc  uint64
	nacc int
}

func (b *bitWriter) put(v uint32, n int) {
	b.acc = b.acc<<n | uint64(v)&(1<<n-1)
	b.nacc += n
	for b.nacc >= 8 {
		c := byte(b.acc >> (b.nacc - 8))
		b.out = append(b.out, c)
		if c == 0xff {
			b.out = append(b.out, 0)
		}
		b.nacc -= 8
	}
}

// flush pads the last byte with one bits.
func (b *bitWriter) flush() []byte {
	if pad := (8 - b.nacc%8) % 8; pad > 0 {
		b.put(1<<pad-1, pad)
	}
	return b.out
}
