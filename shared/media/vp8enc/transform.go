package vp8enc

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
