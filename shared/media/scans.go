package media

import "bytes"

// What a JPEG's decoding costs in CPU, read from its marker segments before
// any pixel is decoded.
//
// A scan is a pass over the blocks of the components it names; Go's
// image/jpeg visits every block of those components in every scan, whatever
// the scan's data says: a progressive scan whose data is one end-of-band run
// over all blocks takes a few bytes and a full pass. So the pixel count
// bounds what one pass costs, not what a file costs: 2 MiB hold tens of
// thousands of such scans. No real photo needs that. An encoder codes each
// coefficient of each component once, then refines it one bit at a time
// (libjpeg's default progression: 10 scans for a colour picture, 6 for a
// grey one), so the walk below refuses, before decoding:
//
//   - more than MaxJPEGScans scans;
//   - a progressive scan that codes a band (or a DC coefficient) of a
//     component again, or refines bits that were not the last ones coded
//     (the JPEG standard's G.1.1.1.1: each refinement adds the next lower
//     bit); a sequential JPEG that codes a component twice;
//   - scans whose block visits, summed, exceed MaxScanWork.

// MaxJPEGScans is the most scans a JPEG may have. libjpeg-turbo's guarded
// decoding (the TurboJPEG scan limit, djpeg -maxscans) suggests 500 for
// untrusted input; standard encoders write at most a few dozen. The same
// figure means that nothing libjpeg-turbo's guarded mode decodes is refused
// for its scan count alone; MaxScanWork is what bounds the CPU.
const MaxJPEGScans = 500

// MaxScanWork bounds a JPEG's scan work: the block visits of all its scans,
// a refinement scan's weighted by its band (visiting a block to refine
// coefficients 1..63 costs about five times a visit that skips it, measured
// with image/jpeg). libjpeg's default progression of a 16-megapixel picture
// with full-resolution colour (4:4:4), the costliest shape of the largest
// picture accepted, is about 7.4 million; MaxScanWork allows five times
// that, about a second of one core. A baseline JPEG of any accepted size is
// at most 0.75 million.
const MaxScanWork = 40_000_000

// scanWalk is what the walk of a JPEG's segments found.
type scanWalk struct {
	scans int
	work  int64 // block visits, weighted as MaxScanWork says
	steps int64 // the walk's own iterations: at most twice the bytes
}

// jpegScans walks every marker segment of a JPEG, skipping the entropy-
// coded data after each scan header without decoding it, and refuses what
// MaxJPEGScans, the coding rules above and MaxScanWork do not allow. It
// follows the bytes as image/jpeg does (fill bytes, restart markers and
// extraneous bytes between segments are skipped; the walk ends at the end
// of the image), so that every scan the decoder would visit is counted: a
// walk that stopped earlier than the decoder would let scans through
// uncounted.
func jpegScans(b []byte) (scanWalk, error) {
	var (
		w           scanWalk
		frame       []frameComp
		progressive bool
		mcus        int64 // MCUs in the frame, as the decoder counts them
		seen        []codedState
	)
	for i := 2; ; {
		j, marker, ok := nextMarker(b, i, &w.steps)
		if !ok || marker == 0xd9 { // the bytes or the image end
			return w, nil
		}
		if marker == 0x01 { // TEM: no payload
			i = j + 2
			continue
		}
		if j+4 > len(b) {
			return w, nil
		}
		n := int(b[j+2])<<8 | int(b[j+3])
		if n < 2 {
			return w, invalid("body: the image cannot be read (the JPEG segment at byte %d declares length %d; at least 2 is possible)", j, n)
		}
		p := b[j+4 : min(j+2+n, len(b))]
		i = j + 2 + n
		w.steps++
		switch {
		case isSOF(marker):
			if frame != nil {
				continue // the decoder refuses a second frame
			}
			if frame = readFrame(p); frame == nil {
				continue
			}
			progressive = marker == 0xc2 || marker == 0xc6 || marker == 0xca || marker == 0xce
			width, height := int64(p[3])<<8|int64(p[4]), int64(p[1])<<8|int64(p[2])
			h0, v0 := int64(frame[0].h), int64(frame[0].v)
			mcus = (width + 8*h0 - 1) / (8 * h0) * ((height + 8*v0 - 1) / (8 * v0))
			seen = make([]codedState, len(frame))
			for k := range seen {
				seen[k] = newCodedState()
			}
		case marker == 0xda:
			if frame == nil {
				return w, invalid("body: the JPEG has a scan before its frame header")
			}
			w.scans++
			if w.scans > MaxJPEGScans {
				return w, invalid("body: the JPEG has more than %d scans; no photo needs that many (a progressive JPEG from a standard encoder has about 10). "+
					"Save it as baseline or with the encoder's standard progressive setting and upload again", MaxJPEGScans)
			}
			if err := scan(p, w.scans, frame, progressive, seen, mcus, &w.work); err != nil {
				return w, err
			}
			if w.work > MaxScanWork {
				return w, invalid("body: decoding this JPEG's %d scans would visit its 8x8 blocks about %d million times; at most %d million are allowed, "+
					"about five times what a standard progressive encoding of the largest accepted picture needs. "+
					"Save it as baseline or with the encoder's standard progressive setting and upload again", w.scans, w.work/1_000_000, MaxScanWork/1_000_000)
			}
		}
	}
}

// nextMarker finds the next marker at or after i, skipping what the decoder
// skips between segments and inside entropy-coded data: bytes other than
// 0xFF, stuffed zero bytes (0xFF 0x00), fill bytes (0xFF 0xFF) and restart
// markers (0xFF 0xD0..0xD7). It returns the marker's offset and code.
func nextMarker(b []byte, i int, steps *int64) (int, byte, bool) {
	for i < len(b) {
		k := bytes.IndexByte(b[i:], 0xff)
		if k < 0 {
			*steps += int64(len(b) - i)
			return 0, 0, false
		}
		*steps += int64(k) + 1
		j := i + k
		if j+1 >= len(b) {
			return 0, 0, false
		}
		switch m := b[j+1]; {
		case m == 0xff:
			i = j + 1
		case m == 0x00 || m >= 0xd0 && m <= 0xd7:
			i = j + 2
		default:
			return j, m, true
		}
	}
	return 0, 0, false
}

// isSOF reports a start-of-frame marker (not DHT, JPG or DAC, which share
// the range).
func isSOF(m byte) bool { return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc }

// frameComp is a frame's component: its identifier and sampling factors.
type frameComp struct {
	id   byte
	h, v int
}

// readFrame reads a frame header's components, nil when it cannot.
func readFrame(p []byte) []frameComp {
	if len(p) < 6 {
		return nil
	}
	n := int(p[5])
	if n < 1 || len(p) < 6+3*n {
		return nil
	}
	out := make([]frameComp, n)
	for k := range out {
		c := p[6+3*k:]
		out[k] = frameComp{id: c[0], h: max(1, int(c[1]>>4)), v: max(1, int(c[1]&15))}
	}
	return out
}

// codedState is what a component's scans have coded so far: for the DC
// coefficient and each AC coefficient (zig-zag order), the lowest bit
// position coded, or -1 when not yet coded.
type codedState [64]int8

func newCodedState() codedState {
	var s codedState
	for k := range s {
		s[k] = -1
	}
	return s
}

// scan checks the scan header p (the n-th scan) against what the earlier
// scans coded, records what it codes and adds its block visits to work.
func scan(p []byte, n int, frame []frameComp, progressive bool, seen []codedState, mcus int64, work *int64) error {
	if len(p) < 1 || len(p) < 1+2*int(p[0])+3 || p[0] == 0 {
		return invalid("body: the JPEG's scan %d has a malformed header", n)
	}
	ns := int(p[0])
	ss, se := int(p[1+2*ns]), int(p[2+2*ns])
	ah, al := int(p[3+2*ns]>>4), int(p[3+2*ns]&15)
	if !progressive { // sequential: the decoder codes 0..63 at full precision, whatever the header says
		ss, se, ah, al = 0, 63, 0, 0
	}
	switch {
	case ss > se || se > 63 || ss == 0 && se != 0 && progressive:
		return invalid("body: the JPEG's scan %d has a spectral band %d..%d the standard does not allow", n, ss, se)
	case al > 13 || ah != 0 && ah != al+1:
		return invalid("body: the JPEG's scan %d has successive-approximation bits %d/%d the standard does not allow (each refinement adds the next lower bit, 13 at most)", n, ah, al)
	case ss > 0 && ns != 1:
		return invalid("body: the JPEG's scan %d codes AC coefficients of %d components at once; the standard allows one", n, ns)
	}
	weight := int64(16)
	if progressive && ss > 0 && ah > 0 {
		weight += int64(se - ss + 1) // refining a band costs a visit per coefficient
	}
	for c := 0; c < ns; c++ {
		k := -1
		for x := range frame {
			if frame[x].id == p[1+2*c] {
				k = x
			}
		}
		if k < 0 {
			return invalid("body: the JPEG's scan %d names component %d, which its frame does not have", n, p[1+2*c])
		}
		s := &seen[k]
		for z := ss; z <= se; z++ {
			first, refines := s[z] < 0 && ah == 0, s[z] >= 0 && ah > 0 && int(s[z]) == ah
			if !first && !refines {
				if !progressive {
					return invalid("body: the JPEG's scan %d codes component %d again; a sequential JPEG codes each component once", n, p[1+2*c])
				}
				return invalid("body: the JPEG's scan %d codes coefficient %d of component %d again (bits %d/%d); "+
					"a progressive JPEG codes each coefficient once and then refines it one lower bit at a time", n, z, p[1+2*c], ah, al)
			}
			s[z] = int8(al)
		}
		*work += mcus * int64(frame[k].h*frame[k].v) * weight / 16
	}
	return nil
}
