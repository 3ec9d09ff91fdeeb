package vp8enc

import (
	"math"
)

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
