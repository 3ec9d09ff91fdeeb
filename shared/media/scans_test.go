package media_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

type scan = mediatest.Scan

// repeatedBand is the shape: a DC scan, then the same AC band of
// the one component n times over.
func repeatedBand(n int) []scan {
	s := []scan{{Comps: []int{0}, Ss: 0, Se: 0}}
	for range n {
		s = append(s, scan{Comps: []int{0}, Ss: 1, Se: 63})
	}
	return s
}

// lawfulScans is the costliest script the coding rules allow, cut at n
// scans: each coefficient coded alone at bit 13, then refined one bit at a
// time, coefficient by coefficient.
func lawfulScans(n int) []scan {
	s := []scan{{Comps: []int{0}, Ss: 0, Se: 0, Al: 13}}
	for z := 1; z < 64 && len(s) < n; z++ {
		s = append(s, scan{Comps: []int{0}, Ss: z, Se: z, Al: 13})
	}
	for al := 12; al >= 0 && len(s) < n; al-- {
		for z := 1; z < 64 && len(s) < n; z++ {
			s = append(s, scan{Comps: []int{0}, Ss: z, Se: z, Ah: al + 1, Al: al})
		}
	}
	return s
}

// What no real photo needs is refused before decoding, with 400
// INVALID_MEDIA naming the rule.
func TestScanWorkRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want string
	}{
		{"the same band twice", mediatest.ProgressiveJPEG(64, 64, 1, repeatedBand(2)), "codes coefficient 1 of component 1 again"},
		{"the issue's file, smaller", mediatest.ProgressiveJPEG(256, 256, 1, repeatedBand(5000)), "again"},
		{"a DC coefficient twice", mediatest.ProgressiveJPEG(64, 64, 3, []scan{{Comps: []int{0, 1, 2}}, {Comps: []int{1}}}), "coefficient 0 of component 2 again"},
		{"a refinement of bits not coded", mediatest.ProgressiveJPEG(64, 64, 1, []scan{{Comps: []int{0}, Al: 2}, {Comps: []int{0}, Ss: 1, Se: 63, Ah: 1}}), "codes coefficient 1 of component 1 again"},
		{"a refinement skipping a bit", mediatest.ProgressiveJPEG(64, 64, 1, []scan{{Comps: []int{0}, Al: 2}, {Comps: []int{0}, Ah: 1}}), "coefficient 0 of component 1 again"},
		{"bits out of range", mediatest.ProgressiveJPEG(64, 64, 1, []scan{{Comps: []int{0}, Al: 14}}), "13 at most"},
		{"more than 500 scans", mediatest.ProgressiveJPEG(64, 64, 1, lawfulScans(501)), "more than 500 scans"},
		{"500 lawful scans of 16 megapixels", mediatest.ProgressiveJPEG(4000, 4000, 1, lawfulScans(500)), "at most 40 million"},
		{"a sequential JPEG coding a component twice", sequentialTwice(), "codes component 1 again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := media.Inspect(tc.body, media.TypeJPEG, media.MaxPixels)
			if e := errs.As(err); e.Code != errs.CodeInvalidMedia || !strings.Contains(e.Detail, tc.want) {
				t.Fatalf("%v, want INVALID_MEDIA naming %q", err, tc.want)
			}
		})
	}
}

// sequentialTwice is a baseline JPEG with its one scan repeated: a decoder
// that follows it decodes and transforms every block twice.
func sequentialTwice() []byte {
	jpg := mediatest.JPEG(mediatest.Photo(32, 32, 2, 1), 90)
	sos := strings.Index(string(jpg), "\xff\xda")
	end := len(jpg) - 2 // before EOI
	out := append([]byte{}, jpg[:end]...)
	return append(append(out, jpg[sos:end]...), 0xff, 0xd9)
}

// What real encoders write passes: libjpeg's standard progressions at the
// largest accepted size (header only: 16 megapixels are not decoded here),
// and libjpeg's files, decoded.
func TestScanWorkAccepted(t *testing.T) {
	for _, comps := range []int{1, 3} {
		b := mediatest.ProgressiveJPEG(4000, 4000, comps, mediatest.StandardScript(comps))
		h, err := media.Inspect(b, media.TypeJPEG, media.MaxPixels)
		if err != nil {
			t.Fatalf("standard progression, %d components: %v", comps, err)
		}
		if h.ScanWork < 250_000*int64(len(mediatest.StandardScript(comps))) || h.ScanWork > media.MaxScanWork/5 {
			t.Errorf("standard progression, %d components: work %d, want a visit of every block per scan and at most a fifth of %d", comps, h.ScanWork, media.MaxScanWork)
		}
	}
	// A flat grey picture of the standard progression decodes.
	b := mediatest.ProgressiveJPEG(320, 200, 3, mediatest.StandardScript(3))
	h, err := media.Inspect(b, media.TypeJPEG, media.MaxPixels)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := canonical.Encode(context.Background(), b, h, media.Quality, media.MaxOutputBytes); err != nil || c.Width != 320 || c.Height != 200 {
		t.Fatalf("standard progression 320x200: %v %+v", err, c)
	}
	files, err := filepath.Glob("testdata/*.jpeg")
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := media.Inspect(b, media.TypeJPEG, media.MaxPixels)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := canonical.Encode(context.Background(), b, h, media.Quality, media.MaxOutputBytes); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// The walk follows the bytes as the decoder does: scans hidden behind
// extraneous bytes, fill bytes and restart markers between segments are
// counted, and the walk's own work is linear in the bytes.
func TestScanWalkFollowsDecoder(t *testing.T) {
	b := mediatest.ProgressiveJPEG(64, 64, 1, repeatedBand(2))
	second := strings.LastIndex(string(b), "\xff\xda")
	junk := append([]byte{}, b[:second]...)
	junk = append(junk, "junk\xff\x00\xff\xd3\xff\xff"...)
	junk = append(junk, b[second:]...)
	if _, err := media.Inspect(junk, media.TypeJPEG, media.MaxPixels); !errs.Is(err, errs.CodeInvalidMedia) || !strings.Contains(err.Error(), "again") {
		t.Fatalf("a repeated scan behind extraneous bytes: %v", err)
	}
	n, _, steps, err := media.JPEGScans(junk)
	if n != 3 || steps > 2*int64(len(junk)) {
		t.Fatalf("walk: %d scans, %d steps for %d bytes (%v)", n, steps, len(junk), err)
	}
}
