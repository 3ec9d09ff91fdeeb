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

// edges are the reconstructed neighbours a block is predicted from, with
// the specification's stand-ins at the frame's top (127) and left (129).
type edges struct {
	top, left [16]int32
	corner    int32
	hasTop    bool
	hasLeft   bool
}

func (e *encoder) edgesOf(plane, mbx, mby, size int) edges {
	var g edges
	stride := e.cStr
	if plane == 0 {
		stride = e.yStride
	}
	rec := e.rec[plane]
	x0, y0 := mbx*size, mby*size
	g.hasTop, g.hasLeft = mby > 0, mbx > 0
	for i := 0; i < size; i++ {
		g.top[i], g.left[i] = 127, 129
		if g.hasTop {
			g.top[i] = int32(rec[(y0-1)*stride+x0+i])
		}
		if g.hasLeft {
			g.left[i] = int32(rec[(y0+i)*stride+x0-1])
		}
	}
	switch {
	case !g.hasTop:
		g.corner = 127
	case !g.hasLeft:
		g.corner = 129
	default:
		g.corner = int32(rec[(y0-1)*stride+x0-1])
	}
	return g
}

// predict fills pred (size x size) with mode from g, exactly as a decoder
// does, including the DC variants at the frame's edges.
func predict(pred []int32, g *edges, mode, size int) {
	switch mode {
	case modeDC:
		var dc int32 = 128
		shift := 3
		if size == 16 {
			shift = 4
		}
		switch {
		case g.hasTop && g.hasLeft:
			var s int32
			for i := 0; i < size; i++ {
				s += g.top[i] + g.left[i]
			}
			dc = (s + int32(size)) >> uint(shift+1)
		case g.hasTop:
			var s int32
			for i := 0; i < size; i++ {
				s += g.top[i]
			}
			dc = (s + int32(size/2)) >> uint(shift)
		case g.hasLeft:
			var s int32
			for i := 0; i < size; i++ {
				s += g.left[i]
			}
			dc = (s + int32(size/2)) >> uint(shift)
		}
		for i := range pred[:size*size] {
			pred[i] = dc
		}
	case modeV:
		for y := 0; y < size; y++ {
			copy(pred[y*size:(y+1)*size], g.top[:size])
		}
	case modeH:
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				pred[y*size+x] = g.left[y]
			}
		}
	case modeTM:
		for y := 0; y < size; y++ {
			for x := 0; x < size; x++ {
				pred[y*size+x] = clamp255(g.left[y] + g.top[x] - g.corner)
			}
		}
	}
}

func clamp255(v int32) int32 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return v
}

// sse is the squared error of pred against the source block at (x0, y0).
func sse(src []uint8, stride, x0, y0 int, pred []int32, size int) int64 {
	var s int64
	for y := 0; y < size; y++ {
		row := src[(y0+y)*stride+x0:]
		for x := 0; x < size; x++ {
			d := int64(row[x]) - int64(pred[y*size+x])
			s += d * d
		}
	}
	return s
}

// analyse chooses modes, transforms, quantizes and reconstructs every
// macroblock in decoding order, keeping the levels for the bitstream.
func (e *encoder) analyse() {
	var predY [256]int32
	var predU, predV [64]int32
	var best [256]int32
	var bestU, bestV [64]int32
	for mby := 0; mby < e.mbh; mby++ {
		for mbx := 0; mbx < e.mbw; mbx++ {
			mb := mby*e.mbw + mbx
			g := e.edgesOf(0, mbx, mby, 16)
			bestErr := int64(math.MaxInt64)
			for mode := 0; mode < numModes; mode++ {
				predict(predY[:], &g, mode, 16)
				if s := sse(e.src[0], e.yStride, 16*mbx, 16*mby, predY[:], 16); s < bestErr {
					bestErr, best, e.yMode[mb] = s, predY, uint8(mode)
				}
			}
			gu, gv := e.edgesOf(1, mbx, mby, 8), e.edgesOf(2, mbx, mby, 8)
			bestErr = math.MaxInt64
			for mode := 0; mode < numModes; mode++ {
				predict(predU[:], &gu, mode, 8)
				predict(predV[:], &gv, mode, 8)
				s := sse(e.src[1], e.cStr, 8*mbx, 8*mby, predU[:], 8) + sse(e.src[2], e.cStr, 8*mbx, 8*mby, predV[:], 8)
				if s < bestErr {
					bestErr, bestU, bestV, e.uvMode[mb] = s, predU, predV, uint8(mode)
				}
			}
			nz := e.codeLuma(mb, mbx, mby, best[:])
			nz = e.codeChroma(mb, 1, mbx, mby, bestU[:]) || nz
			nz = e.codeChroma(mb, 2, mbx, mby, bestV[:]) || nz
			e.skip[mb] = !nz
		}
	}
}

// codeLuma codes the 16x16 luma residual of a macroblock through the Y2
// block and reconstructs it; it reports whether any level is non-zero.
func (e *encoder) codeLuma(mb, mbx, mby int, pred []int32) bool {
	var dcs [16]int32
	var ac [16][16]int32
	src := e.src[0]
	for n := 0; n < 16; n++ {
		bx, by := 16*mbx+4*(n&3), 16*mby+4*(n>>2)
		for y := 0; y < 4; y++ {
			for x := 0; x < 4; x++ {
				e.residual[y*4+x] = int32(src[(by+y)*e.yStride+bx+x]) - pred[(4*(n>>2)+y)*16+4*(n&3)+x]
			}
		}
		fdct(&e.residual, &ac[n])
		dcs[n] = ac[n][0]
	}
	var wht [16]int32
	fwht(&dcs, &wht)
	nonZero := false
	// Y2: quantize, keep, and dequantize through the decoder's inverse WHT.
	var y2 [16]int32
	if e.quantize(mb*blocksPerMB, &wht, &y2, e.y2, 0) {
		nonZero = true
	}
	var dc [16]int32
	iwht(&y2, &dc)
	for n := 0; n < 16; n++ {
		var deq [16]int32
		if e.quantize(mb*blocksPerMB+1+n, &ac[n], &deq, e.y1, 1) {
			nonZero = true
		}
		deq[0] = dc[n]
		bx, by := 16*mbx+4*(n&3), 16*mby+4*(n>>2)
		reconstruct(e.rec[0], e.yStride, bx, by, pred, 16, 4*(n&3), 4*(n>>2), &deq)
	}
	return nonZero
}

// codeChroma codes one 8x8 chroma plane of a macroblock.
func (e *encoder) codeChroma(mb, plane, mbx, mby int, pred []int32) bool {
	src := e.src[plane]
	nonZero := false
	for n := 0; n < 4; n++ {
		bx, by := 8*mbx+4*(n&1), 8*mby+4*(n>>1)
		for y := 0; y < 4; y++ {
			for x := 0; x < 4; x++ {
				e.residual[y*4+x] = int32(src[(by+y)*e.cStr+bx+x]) - pred[(4*(n>>1)+y)*8+4*(n&1)+x]
			}
		}
		fdct(&e.residual, &e.coef)
		var deq [16]int32
		if e.quantize(mb*blocksPerMB+17+4*(plane-1)+n, &e.coef, &deq, e.uv, 0) {
			nonZero = true
		}
		reconstruct(e.rec[plane], e.cStr, bx, by, pred, 8, 4*(n&1), 4*(n>>1), &deq)
	}
	return nonZero
}

// quantize turns coefficients (natural order) into levels from index first
// on, appends them in zigzag order for block blk, and leaves the
// dequantized values a decoder will see in deq. It reports whether any level
// is non-zero.
func (e *encoder) quantize(blk int, c, deq *[16]int32, q quant, first int) bool {
	var lv [16]int16
	last := -1
	for i := first; i < 16; i++ {
		z := zigzag[i]
		step, bias := q.ac, q.ac*3/8
		if z == 0 {
			step, bias = q.dc, q.dc/2
		}
		v := c[z]
		a := v
		if a < 0 {
			a = -a
		}
		l := (a + bias) / step
		if l > 2047 {
			l = 2047
		}
		if v < 0 {
			l = -l
		}
		lv[i] = int16(l)
		deq[z] = l * step
		if l != 0 {
			last = i
		}
	}
	e.lens[blk] = uint8(last + 1)
	if last >= first {
		e.levels = append(e.levels, lv[first:last+1]...)
		return true
	}
	e.lens[blk] = 0
	return false
}

// reconstruct adds the inverse DCT of deq to the prediction block at
// (px, py) of pred (pstride wide) and stores the result at (x0, y0).
func reconstruct(rec []uint8, stride, x0, y0 int, pred []int32, pstride, px, py int, deq *[16]int32) {
	const (
		c1 = 85627 // 65536 * cos(pi/8) * sqrt(2)
		c2 = 35468 // 65536 * sin(pi/8) * sqrt(2)
	)
	var m [4][4]int32
	for i := 0; i < 4; i++ {
		a := deq[i] + deq[8+i]
		b := deq[i] - deq[8+i]
		c := (deq[4+i]*c2)>>16 - (deq[12+i]*c1)>>16
		d := (deq[4+i]*c1)>>16 + (deq[12+i]*c2)>>16
		m[i][0] = a + d
		m[i][1] = b + c
		m[i][2] = b - c
		m[i][3] = a - d
	}
	for j := 0; j < 4; j++ {
		dc := m[0][j] + 4
		a := dc + m[2][j]
		b := dc - m[2][j]
		c := (m[1][j]*c2)>>16 - (m[3][j]*c1)>>16
		d := (m[1][j]*c1)>>16 + (m[3][j]*c2)>>16
		p := pred[(py+j)*pstride+px:]
		r := rec[(y0+j)*stride+x0:]
		r[0] = uint8(clamp255(p[0] + (a+d)>>3))
		r[1] = uint8(clamp255(p[1] + (b+c)>>3))
		r[2] = uint8(clamp255(p[2] + (b-c)>>3))
		r[3] = uint8(clamp255(p[3] + (a-d)>>3))
	}
}

// fdct is libvpx's forward 4x4 DCT (vp8_short_fdct4x4_c).
func fdct(in, out *[16]int32) {
	var t [16]int32
	for i := 0; i < 4; i++ {
		ip := in[4*i:]
		a1 := (ip[0] + ip[3]) * 8
		b1 := (ip[1] + ip[2]) * 8
		c1 := (ip[1] - ip[2]) * 8
		d1 := (ip[0] - ip[3]) * 8
		t[4*i+0] = a1 + b1
		t[4*i+2] = a1 - b1
		t[4*i+1] = (c1*2217 + d1*5352 + 14500) >> 12
		t[4*i+3] = (d1*2217 - c1*5352 + 7500) >> 12
	}
	for i := 0; i < 4; i++ {
		a1 := t[i] + t[12+i]
		b1 := t[4+i] + t[8+i]
		c1 := t[4+i] - t[8+i]
		d1 := t[i] - t[12+i]
		out[i] = (a1 + b1 + 7) >> 4
		out[8+i] = (a1 - b1 + 7) >> 4
		out[4+i] = (c1*2217 + d1*5352 + 12000) >> 16
		if d1 != 0 {
			out[4+i]++
		}
		out[12+i] = (d1*2217 - c1*5352 + 51000) >> 16
	}
}

// fwht is libvpx's forward Walsh-Hadamard transform of the 16 luma DCs
// (vp8_short_walsh4x4_c).
func fwht(in, out *[16]int32) {
	var t [16]int32
	for i := 0; i < 4; i++ {
		ip := in[4*i:]
		a1 := (ip[0] + ip[2]) * 4
		d1 := (ip[1] + ip[3]) * 4
		c1 := (ip[1] - ip[3]) * 4
		b1 := (ip[0] - ip[2]) * 4
		t[4*i+0] = a1 + d1
		if a1 != 0 {
			t[4*i+0]++
		}
		t[4*i+1] = b1 + c1
		t[4*i+2] = b1 - c1
		t[4*i+3] = a1 - d1
	}
	for i := 0; i < 4; i++ {
		a1 := t[i] + t[8+i]
		d1 := t[4+i] + t[12+i]
		c1 := t[4+i] - t[12+i]
		b1 := t[i] - t[8+i]
		a2, b2, c2, d2 := a1+d1, b1+c1, b1-c1, a1-d1
		for _, v := range []*int32{&a2, &b2, &c2, &d2} {
			if *v < 0 {
				*v++
			}
		}
		out[i] = (a2 + 3) >> 3
		out[4+i] = (b2 + 3) >> 3
		out[8+i] = (c2 + 3) >> 3
		out[12+i] = (d2 + 3) >> 3
	}
}

// iwht is the decoder's inverse Walsh-Hadamard transform: it turns the
// dequantized Y2 block into the DC of each luma block, in raster order.
func iwht(in, out *[16]int32) {
	var m [16]int32
	for i := 0; i < 4; i++ {
		a0 := in[i] + in[12+i]
		a1 := in[4+i] + in[8+i]
		a2 := in[4+i] - in[8+i]
		a3 := in[i] - in[12+i]
		m[i] = a0 + a1
		m[8+i] = a0 - a1
		m[4+i] = a3 + a2
		m[12+i] = a3 - a2
	}
	for i := 0; i < 4; i++ {
		dc := m[4*i] + 3
		a0 := dc + m[4*i+3]
		a1 := m[4*i+1] + m[4*i+2]
		a2 := m[4*i+1] - m[4*i+2]
		a3 := dc - m[4*i+3]
		out[4*i+0] = (a0 + a1) >> 3
		out[4*i+1] = (a3 + a2) >> 3
		out[4*i+2] = (a0 - a1) >> 3
		out[4*i+3] = (a3 - a2) >> 3
	}
}
