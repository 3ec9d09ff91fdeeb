package main

import "bytes"

// repeatedScanJPEG is a hostile upload: a well-formed progressive greyscale
// JPEG of side x side pixels whose first scan codes every DC coefficient as
// zero and whose following scans each code the AC band 1..63 again as one
// end-of-band run over every block, as many such scans as fit in size
// bytes. Each scan is about 25 bytes, but a decoder that does not bound the
// scans walks every block in each of them. salt makes the bytes (and so
// the content address) differ between uploads.
func repeatedScanJPEG(side, size int, salt uint16) []byte {
	var b bytes.Buffer
	b.Write([]byte{0xFF, 0xD8})
	// A comment carrying the salt.
	b.Write([]byte{0xFF, 0xFE, 0x00, 0x04, byte(salt >> 8), byte(salt)})
	// DQT: table 0, all ones.
	b.Write([]byte{0xFF, 0xDB, 0x00, 0x43, 0x00})
	b.Write(bytes.Repeat([]byte{1}, 64))
	// SOF2: progressive, 8 bits, one component with table 0, 1x1 sampling.
	b.Write([]byte{0xFF, 0xC2, 0x00, 0x0B, 0x08, byte(side >> 8), byte(side), byte(side >> 8), byte(side), 0x01, 0x01, 0x11, 0x00})
	// DHT DC 0: the one symbol 0 (difference 0) coded as "0".
	b.Write([]byte{0xFF, 0xC4, 0x00, 0x14, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x00})
	// DHT AC 0: 0xE0 (EOBRUN of 2^14 + 14 extra bits) as "0", 0x00 (EOB) as "10".
	b.Write([]byte{0xFF, 0xC4, 0x00, 0x15, 0x10, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xE0, 0x00})

	blocks := ((side + 7) / 8) * ((side + 7) / 8)
	// The DC scan: one "0" bit per block.
	b.Write([]byte{0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00})
	var w bitWriter
	for range blocks {
		w.bits(0, 1)
	}
	b.Write(w.flush())

	// One AC scan's entropy data: EOB runs covering every block.
	var run bitWriter
	for left := blocks; left > 0; {
		n := min(left, 32767)
		if n >= 16384 {
			run.bits(0, 1) // 0xE0
			run.bits(uint32(n-16384), 14)
		} else {
			// Smaller remainders: runs of one block (EOB, "10").
			n = 1
			run.bits(0b10, 2)
		}
		left -= n
	}
	ac := run.flush()
	header := []byte{0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x01, 0x3F, 0x00}
	for b.Len()+len(header)+len(ac)+2 <= size {
		b.Write(header)
		b.Write(ac)
	}
	b.Write([]byte{0xFF, 0xD9})
	return b.Bytes()
}

// bitWriter writes entropy-coded bits, most significant first, stuffing a
// zero byte after every 0xFF, and pads the last byte with ones.
type bitWriter struct {
	out  []byte
	acc  uint32
	nacc uint
}

func (w *bitWriter) bits(v uint32, n uint) {
	for i := int(n) - 1; i >= 0; i-- {
		w.acc = w.acc<<1 | (v>>uint(i))&1
		w.nacc++
		if w.nacc == 8 {
			w.emit(byte(w.acc))
			w.acc, w.nacc = 0, 0
		}
	}
}

func (w *bitWriter) emit(c byte) {
	w.out = append(w.out, c)
	if c == 0xFF {
		w.out = append(w.out, 0x00)
	}
}

func (w *bitWriter) flush() []byte {
	if w.nacc > 0 {
		pad := 8 - w.nacc
		w.emit(byte(w.acc<<pad | (1<<pad - 1)))
		w.acc, w.nacc = 0, 0
	}
	return w.out
}
