package vp8enc

import (
	"errors"
	"math"
)

// tokenSink receives the coefficient tokens of the frame: once to count
// them, once to write them.
type tokenSink struct {
	enc    *boolEncoder // nil while counting
	counts *[numTypes][numBands][numCtx][numProbs][2]uint32
	probs  *[numTypes][numBands][numCtx][numProbs]uint8
}

// bit codes one branch of the token tree: node of the probabilities of
// (typ, band, ctx).
func (s *tokenSink) bit(typ, band, ctx, node int, b bool) {
	if s.enc == nil {
		s.counts[typ][band][ctx][node][btoi(b)]++
		return
	}
	s.enc.putBit(s.probs[typ][band][ctx][node], b)
}

// raw codes a bit with a fixed probability (extra bits and signs).
func (s *tokenSink) raw(prob uint8, b bool) {
	if s.enc != nil {
		s.enc.putBit(prob, b)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// block codes the levels of one block (zigzag order, from index first,
// n = 1 + last non-zero index, 0 when none) in context ctx, mirroring the
// decoder's token loop (RFC 6386, section 13). It reports whether the block
// has a non-zero level, the context its neighbours use.
func (s *tokenSink) block(typ, ctx, first, n int, lv []int16) bool {
	i := first
	if n == 0 {
		s.bit(typ, int(bands[i]), ctx, 0, false) // end of block
		return false
	}
	s.bit(typ, int(bands[i]), ctx, 0, true)
	for i < 16 {
		v := int(lv[i-first])
		band := int(bands[i])
		i++
		if v == 0 {
			s.bit(typ, band, ctx, 1, false)
			ctx = 0
			continue // no end of block can follow a zero
		}
		s.bit(typ, band, ctx, 1, true)
		a := v
		if a < 0 {
			a = -a
		}
		if a == 1 {
			s.bit(typ, band, ctx, 2, false)
			ctx = 1
		} else {
			s.bit(typ, band, ctx, 2, true)
			switch {
			case a <= 4:
				s.bit(typ, band, ctx, 3, false)
				if a == 2 {
					s.bit(typ, band, ctx, 4, false)
				} else {
					s.bit(typ, band, ctx, 4, true)
					s.bit(typ, band, ctx, 5, a == 4)
				}
			case a <= 10:
				s.bit(typ, band, ctx, 3, true)
				s.bit(typ, band, ctx, 6, false)
				if a <= 6 {
					s.bit(typ, band, ctx, 7, false)
					s.raw(159, a == 6)
				} else {
					s.bit(typ, band, ctx, 7, true)
					s.raw(165, (a-7)&2 != 0)
					s.raw(145, (a-7)&1 != 0)
				}
			default:
				s.bit(typ, band, ctx, 3, true)
				s.bit(typ, band, ctx, 6, true)
				cat := 3
				switch {
				case a < 19:
					cat = 0
				case a < 35:
					cat = 1
				case a < 67:
					cat = 2
				}
				s.bit(typ, band, ctx, 8, cat >= 2)
				s.bit(typ, band, ctx, 9+cat>>1, cat&1 != 0)
				extra := a - (3 + 8<<uint(cat))
				tab := cat3456[cat]
				for k := range tab {
					s.raw(tab[k], extra>>uint(len(tab)-1-k)&1 != 0)
				}
			}
			ctx = 2
		}
		s.raw(128, v < 0)
		if i == 16 {
			return true
		}
		more := i < n
		s.bit(typ, int(bands[i]), ctx, 0, more)
		if !more {
			return true
		}
	}
	return true
}

// tokens runs every macroblock's blocks through s with the decoder's
// non-zero contexts.
func (e *encoder) tokens(s *tokenSink, perMB func(mb int)) {
	topY := make([]uint8, 4*e.mbw)
	topU := make([]uint8, 2*e.mbw)
	topV := make([]uint8, 2*e.mbw)
	topY2 := make([]uint8, e.mbw)
	off := 0
	for mby := 0; mby < e.mbh; mby++ {
		var leftY [4]uint8
		var leftU, leftV [2]uint8
		var leftY2 uint8
		for mbx := 0; mbx < e.mbw; mbx++ {
			mb := mby*e.mbw + mbx
			if perMB != nil {
				perMB(mb)
			}
			base := mb * blocksPerMB
			if e.skip[mb] {
				leftY, leftU, leftV, leftY2 = [4]uint8{}, [2]uint8{}, [2]uint8{}, 0
				clear(topY[4*mbx : 4*mbx+4])
				clear(topU[2*mbx : 2*mbx+2])
				clear(topV[2*mbx : 2*mbx+2])
				topY2[mbx] = 0
				continue
			}
			code := func(typ, ctx, first, blk int) uint8 {
				n := int(e.lens[blk])
				cnt := 0
				if n > first {
					cnt = n - first
				}
				nz := s.block(typ, ctx, first, n, e.levels[off:off+cnt])
				off += cnt
				return uint8(btoi(nz))
			}
			nz := code(typeY2, int(leftY2+topY2[mbx]), 0, base)
			leftY2, topY2[mbx] = nz, nz
			for y := 0; y < 4; y++ {
				for x := 0; x < 4; x++ {
					nz := code(typeYAC, int(leftY[y]+topY[4*mbx+x]), 1, base+1+4*y+x)
					leftY[y], topY[4*mbx+x] = nz, nz
				}
			}
			for p, pl := range [2]struct {
				left *[2]uint8
				top  []uint8
			}{{&leftU, topU}, {&leftV, topV}} {
				for y := 0; y < 2; y++ {
					for x := 0; x < 2; x++ {
						nz := code(typeChrom, int(pl.left[y]+pl.top[2*mbx+x]), 0, base+17+4*p+2*y+x)
						pl.left[y], pl.top[2*mbx+x] = nz, nz
					}
				}
			}
		}
	}
}

// bitCost[p] is the cost in 1/256 bits of coding a zero with probability p.
var bitCost = func() (t [256]uint32) {
	for p := 1; p < 256; p++ {
		t[p] = uint32(math.Round(-math.Log2(float64(p)/256) * 256))
	}
	return t
}()

func cost(p uint8, zeros, ones uint32) uint64 {
	return uint64(zeros)*uint64(bitCost[p]) + uint64(ones)*uint64(bitCost[255-p+1])
}

// bitstream writes the frame: the tag, the key frame header, the first
// partition (header, probability updates, modes) and the token partition.
func (e *encoder) bitstream() ([]byte, error) {
	// Count the tokens with the default probabilities, then send the
	// probabilities that pay for their own update.
	e.tokens(&tokenSink{counts: &e.counts}, nil)
	var update [numTypes][numBands][numCtx][numProbs]bool
	for t := range e.probs {
		for b := range e.probs[t] {
			for c := range e.probs[t][b] {
				for n := range e.probs[t][b][c] {
					z, o := e.counts[t][b][c][n][0], e.counts[t][b][c][n][1]
					if z+o == 0 {
						continue
					}
					np := uint8(min(max((uint64(z)*256+uint64(z+o)/2)/uint64(z+o), 1), 255))
					old := e.probs[t][b][c][n]
					up := coeffUpdateProb[t][b][c][n]
					keep := cost(old, z, o) + cost(up, 1, 0)
					change := cost(np, z, o) + cost(up, 0, 1) + 8*256
					if change < keep {
						e.probs[t][b][c][n] = np
						update[t][b][c][n] = true
					}
				}
			}
		}
	}
	skipped := 0
	for _, s := range e.skip {
		skipped += btoi(s)
	}
	skipProb := uint8(min(max((len(e.skip)-skipped)*256/len(e.skip), 1), 255))

	hdr := newBoolEncoder(64 + len(e.skip)/2)
	hdr.putLiteral(0, 1) // colour space: BT.601
	hdr.putLiteral(0, 1) // clamping required
	hdr.putLiteral(0, 1) // no segmentation
	hdr.putLiteral(0, 1) // normal loop filter
	hdr.putLiteral(uint32(filterLevel(e.qi)), 6)
	hdr.putLiteral(0, 3) // sharpness
	hdr.putLiteral(0, 1) // no loop-filter deltas
	hdr.putLiteral(0, 2) // one token partition
	hdr.putLiteral(uint32(e.qi), 7)
	for i := 0; i < 5; i++ {
		hdr.putSigned(0, 4) // no quantizer deltas
	}
	hdr.putLiteral(0, 1) // refresh_entropy_probs: irrelevant for one frame
	for t := range e.probs {
		for b := range e.probs[t] {
			for c := range e.probs[t][b] {
				for n := range e.probs[t][b][c] {
					u := update[t][b][c][n]
					hdr.putBit(coeffUpdateProb[t][b][c][n], u)
					if u {
						hdr.putLiteral(uint32(e.probs[t][b][c][n]), 8)
					}
				}
			}
		}
	}
	hdr.putLiteral(1, 1) // macroblocks without coefficients are flagged
	hdr.putLiteral(uint32(skipProb), 8)

	tok := newBoolEncoder(len(e.levels) + 1024)
	e.tokens(&tokenSink{enc: tok, probs: &e.probs}, func(mb int) {
		hdr.putBit(skipProb, e.skip[mb])
		hdr.putBit(145, true) // 16x16 luma prediction
		switch e.yMode[mb] {
		case modeDC:
			hdr.putBit(156, false)
			hdr.putBit(163, false)
		case modeV:
			hdr.putBit(156, false)
			hdr.putBit(163, true)
		case modeH:
			hdr.putBit(156, true)
			hdr.putBit(128, false)
		case modeTM:
			hdr.putBit(156, true)
			hdr.putBit(128, true)
		}
		switch e.uvMode[mb] {
		case modeDC:
			hdr.putBit(142, false)
		case modeV:
			hdr.putBit(142, true)
			hdr.putBit(114, false)
		case modeH:
			hdr.putBit(142, true)
			hdr.putBit(114, true)
			hdr.putBit(183, false)
		case modeTM:
			hdr.putBit(142, true)
			hdr.putBit(114, true)
			hdr.putBit(183, true)
		}
	})
	first := hdr.finish()
	tokens := tok.finish()
	if len(first) >= 1<<19 {
		return nil, errors.New("vp8enc: first partition too large")
	}
	out := make([]byte, 10, 10+len(first)+len(tokens))
	tag := uint32(0) | 0<<1 | 1<<4 | uint32(len(first))<<5 // key frame, version 0, shown
	out[0], out[1], out[2] = byte(tag), byte(tag>>8), byte(tag>>16)
	out[3], out[4], out[5] = 0x9d, 0x01, 0x2a
	out[6], out[7] = byte(e.w), byte(e.w>>8)
	out[8], out[9] = byte(e.h), byte(e.h>>8)
	out = append(out, first...)
	return append(out, tokens...), nil
}

// filterLevel is the loop-filter strength for a quantizer index: stronger
// as blocks get coarser.
func filterLevel(qi int) int {
	return min(63, 2+qi*5/8)
}
