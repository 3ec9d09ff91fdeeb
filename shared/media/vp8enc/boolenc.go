package vp8enc

// boolEncoder is the arithmetic coder of RFC 6386, section 7.3: every bit is
// written with the probability (out of 256) that it is zero.
type boolEncoder struct {
	out      []byte
	rng      uint32 // 128 <= rng <= 255
	bottom   uint32
	bitCount int
}

func newBoolEncoder(capacity int) *boolEncoder {
	return &boolEncoder{out: make([]byte, 0, capacity), rng: 255, bitCount: 24}
}

// addOne propagates a carry into the bytes already written.
func (e *boolEncoder) addOne() {
	i := len(e.out) - 1
	for i >= 0 && e.out[i] == 255 {
		e.out[i] = 0
		i--
	}
	if i >= 0 {
		e.out[i]++
	}
}

func (e *boolEncoder) putBit(prob uint8, bit bool) {
	split := 1 + (((e.rng - 1) * uint32(prob)) >> 8)
	if bit {
		e.bottom += split
		e.rng -= split
	} else {
		e.rng = split
	}
	for e.rng < 128 {
		e.rng <<= 1
		if e.bottom&(1<<31) != 0 {
			e.addOne()
		}
		e.bottom <<= 1
		e.bitCount--
		if e.bitCount == 0 {
			e.out = append(e.out, byte(e.bottom>>24))
			e.bottom &= 1<<24 - 1
			e.bitCount = 8
		}
	}
}

// putLiteral writes the n low bits of v, most significant first, each with
// probability one half: the L(n) of the specification.
func (e *boolEncoder) putLiteral(v uint32, n int) {
	for i := n - 1; i >= 0; i-- {
		e.putBit(128, v>>uint(i)&1 != 0)
	}
}

// putSigned writes a flagged magnitude and sign, as the quantizer and
// loop-filter deltas are coded.
func (e *boolEncoder) putSigned(v int, n int) {
	if v == 0 {
		e.putBit(128, false)
		return
	}
	e.putBit(128, true)
	m := v
	if m < 0 {
		m = -m
	}
	e.putLiteral(uint32(m), n)
	e.putBit(128, v < 0)
}

// finish flushes the coder and returns its bytes.
func (e *boolEncoder) finish() []byte {
	c := e.bitCount
	v := e.bottom
	if v&(1<<uint(32-c)) != 0 {
		e.addOne()
	}
	v <<= uint(c & 7)
	for c >>= 3; c > 0; c-- {
		v <<= 8
	}
	for i := 0; i < 4; i++ {
		e.out = append(e.out, byte(v>>24))
		v <<= 8
	}
	return e.out
}
