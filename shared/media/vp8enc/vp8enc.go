// Package vp8enc encodes a still image as a lossy WebP file: one VP8 key
// frame (RFC 6386) in a simple RIFF container, with no metadata chunks. It is
// pure Go, so Lambda builds need no cgo.
//
// The encoder is deliberately small: every macroblock is predicted as a
// whole (16x16 luma, 8x8 chroma: DC, vertical, horizontal or TrueMotion,
// chosen by squared error), residuals go through the forward DCT and the
// Walsh-Hadamard transform of libvpx, are quantized with one quantizer for
// the frame, and the token probabilities are re-estimated from the frame and
// sent where that saves bits. Reconstruction uses exactly the decoder's
// arithmetic, so intra prediction never drifts. There are no 4x4 intra modes,
// segments or rate-distortion search: files are somewhat larger than
// libwebp's at the same quantizer, and every decoder reads them.
//
// What does not live here: choosing the quality, image decoding and the
// service's limits (shared/media does that).
package vp8enc

import (
	"encoding/binary"
	"errors"
	"image"
	"math"
)

// MaxDimension is the largest width or height a VP8 frame can carry.
const MaxDimension = 16383

const (
	numTypes  = 4
	numBands  = 8
	numCtx    = 3
	numProbs  = 11
	typeYAC   = 0 // luma blocks whose DC travels in the Y2 block
	typeY2    = 1
	typeChrom = 2
)

// Intra modes of 16x16 luma and 8x8 chroma prediction.
const (
	modeDC = iota
	modeV
	modeH
	modeTM
	numModes
)

var (
	zigzag = [16]uint8{0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15}
	bands  = [17]uint8{0, 1, 2, 3, 6, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 7, 0}
	// Extra-bit probabilities of token categories 3 to 6.
	cat3456 = [4][]uint8{
		{173, 148, 140},
		{176, 155, 140, 135},
		{180, 157, 141, 134, 130},
		{254, 254, 243, 230, 196, 177, 153, 140, 133, 130, 129},
	}
)

// QuantizerIndex maps a quality from 0 (smallest) to 100 (best) to VP8's
// quantizer index (127 to 0) with libwebp's curve, so that a quality means
// roughly what it means to cwebp.
func QuantizerIndex(quality int) int {
	c := float64(min(max(quality, 0), 100)) / 100
	linear := 2*c - 1
	if c < 0.75 {
		linear = c * 2 / 3
	}
	q := int(127 * (1 - math.Cbrt(linear)))
	return min(max(q, 0), 127)
}

// ErrTooLarge reports a frame wider or taller than MaxDimension.
var ErrTooLarge = errors.New("vp8enc: image wider or taller than 16383 pixels")

// Encode returns m, 4:2:0 YCbCr in VP8's colour space (BT.601, studio range,
// as FromImage makes it), as a lossy WebP file at quality (0..100).
func Encode(m *image.YCbCr, quality int) ([]byte, error) {
	b := m.Bounds()
	w, h := b.Dx(), b.Dy()
	if w < 1 || h < 1 {
		return nil, errors.New("vp8enc: empty image")
	}
	if w > MaxDimension || h > MaxDimension {
		return nil, ErrTooLarge
	}
	if m.SubsampleRatio != image.YCbCrSubsampleRatio420 {
		return nil, errors.New("vp8enc: image is not 4:2:0")
	}
	e := newEncoder(m, QuantizerIndex(quality))
	e.analyse()
	frame, err := e.bitstream()
	if err != nil {
		return nil, err
	}
	return container(frame), nil
}

// container wraps a VP8 frame in the simple WebP file format.
func container(frame []byte) []byte {
	pad := len(frame) & 1
	out := make([]byte, 20, 20+len(frame)+pad)
	copy(out[0:], "RIFF")
	binary.LittleEndian.PutUint32(out[4:], uint32(4+8+len(frame)+pad))
	copy(out[8:], "WEBPVP8 ")
	binary.LittleEndian.PutUint32(out[16:], uint32(len(frame)))
	out = append(out, frame...)
	if pad == 1 {
		out = append(out, 0)
	}
	return out
}

type quant struct{ dc, ac int32 }

type encoder struct {
	w, h, mbw, mbh int
	qi             int
	// Source and reconstruction planes, padded to whole macroblocks.
	src, rec       [3][]uint8
	yStride, cStr  int
	y1, y2, uv     quant
	yMode, uvMode  []uint8
	skip           []bool
	levels         []int16 // quantized levels in zigzag order, per block up to its last non-zero
	lens           []uint8 // per block: 1 + index of its last non-zero level, 0 when none
	probs          [numTypes][numBands][numCtx][numProbs]uint8
	counts         [numTypes][numBands][numCtx][numProbs][2]uint32
	residual, coef [16]int32
}

// blocksPerMB are the coded blocks of a macroblock: Y2, 16 luma, 4 Cb, 4 Cr.
const blocksPerMB = 25

func newEncoder(m *image.YCbCr, qi int) *encoder {
	b := m.Bounds()
	e := &encoder{w: b.Dx(), h: b.Dy(), qi: qi}
	e.mbw, e.mbh = (e.w+15)/16, (e.h+15)/16
	e.yStride, e.cStr = 16*e.mbw, 8*e.mbw
	cw, ch := (e.w+1)/2, (e.h+1)/2
	e.src[0] = pad(m.Y[m.YOffset(b.Min.X, b.Min.Y):], m.YStride, e.w, e.h, e.yStride, 16*e.mbh)
	e.src[1] = pad(m.Cb[m.COffset(b.Min.X, b.Min.Y):], m.CStride, cw, ch, e.cStr, 8*e.mbh)
	e.src[2] = pad(m.Cr[m.COffset(b.Min.X, b.Min.Y):], m.CStride, cw, ch, e.cStr, 8*e.mbh)
	for i := range e.rec {
		e.rec[i] = make([]uint8, len(e.src[i]))
	}
	e.y1 = quant{int32(dcTable[qi]), int32(acTable[qi])}
	e.y2 = quant{2 * int32(dcTable[qi]), max(int32(acTable[qi])*155/100, 8)}
	e.uv = quant{int32(dcTable[min(qi, 117)]), int32(acTable[qi])}
	n := e.mbw * e.mbh
	e.yMode, e.uvMode, e.skip = make([]uint8, n), make([]uint8, n), make([]bool, n)
	e.lens = make([]uint8, n*blocksPerMB)
	e.levels = make([]int16, 0, n*64)
	e.probs = defaultCoeffProb
	return e
}

// pad copies a w x h plane into a pw x ph one, repeating the last column
// and row into the padding.
func pad(p []uint8, stride, w, h, pw, ph int) []uint8 {
	out := make([]uint8, pw*ph)
	for y := 0; y < ph; y++ {
		sy := min(y, h-1)
		row := out[y*pw : (y+1)*pw]
		copy(row, p[sy*stride:sy*stride+w])
		for x := w; x < pw; x++ {
			row[x] = row[w-1]
		}
	}
	return out
}
