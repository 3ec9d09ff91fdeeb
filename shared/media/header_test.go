package media_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/mediatest"
)

// The decode cost is read from the header before any pixel is decoded,
// and the shapes come out as what decoding them took.
func TestDecodeCost(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		body        []byte
		contentType string
		min, max    int64 // MiB
		traits      []string
	}{
		// 16 MP x 8 bytes (RGBA64), twice for the passes, + re-encoding.
		{"4000x4000 16-bit interlaced PNG", mediatest.PNGShape(4000, 4000, 16, 2, true), media.TypePNG, 330, 340, []string{"16-bit samples", "interlaced"}},
		{"4000x4000 16-bit PNG", mediatest.PNGShape(4000, 4000, 16, 2, false), media.TypePNG, 205, 215, []string{"16-bit samples"}},
		{"4000x4000 8-bit RGB PNG", mediatest.PNGShape(4000, 4000, 8, 2, false), media.TypePNG, 150, 155, nil},
		{"4000x4000 grey PNG", mediatest.PNGShape(4000, 4000, 8, 0, false), media.TypePNG, 105, 110, nil},
		// 4 components: planes, int32 coefficients, the CMYK image.
		{"4000x4000 progressive CMYK JPEG", mediatest.JPEGShape(4000, 4000, true, 4), media.TypeJPEG, 455, 460, []string{"progressive", "CMYK"}},
		{"4000x4000 baseline CMYK JPEG", mediatest.JPEGShape(4000, 4000, false, 4), media.TypeJPEG, 210, 215, []string{"CMYK"}},
		{"4000x4000 progressive 4:4:4 JPEG", mediatest.JPEGShape(4000, 4000, true, 3), media.TypeJPEG, 320, 325, []string{"progressive"}},
		{"4000x4000 baseline 4:4:4 JPEG", mediatest.JPEGShape(4000, 4000, false, 3), media.TypeJPEG, 135, 140, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := media.Inspect(tc.body, tc.contentType, media.MaxPixels)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Cost / mib; got < tc.min || got > tc.max {
				t.Errorf("cost %d MiB, want %d..%d", got, tc.min, tc.max)
			}
			if strings.Join(h.Traits, ",") != strings.Join(tc.traits, ",") {
				t.Errorf("traits %v, want %v", h.Traits, tc.traits)
			}
		})
	}
	// A real baseline 4:2:0 photo costs what its planes and the encoder
	// take: 7.5 bytes a pixel.
	h, err := media.Inspect(mediatest.JPEG(mediatest.Photo(640, 480, 3, 1), 90), media.TypeJPEG, media.MaxPixels)
	if err != nil || h.Cost < 640*480*7 || h.Cost > 640*480*8 {
		t.Fatalf("photo: cost %d, %v", h.Cost, err)
	}
}

// Embedded colour profiles: sRGB (and grey) pass, as the pixels already
// are what the canonical WebP means; any other profile is refused, naming
// it, since the pixels would be re-encoded without conversion.
func TestColourProfiles(t *testing.T) {
	jpg := mediatest.JPEG(mediatest.Photo(64, 48, 3, 1), 90)
	png := mediatest.PNG(mediatest.Photo(64, 48, 3, 1))
	srgb := mediatest.ICCProfile("RGB ", "sRGB IEC61966-2.1")
	adobe := mediatest.ICCProfile("RGB ", "Adobe RGB (1998)")
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		refused           string
	}{
		{"jpeg sRGB", media.TypeJPEG, mediatest.JPEGWithICC(jpg, srgb, 1000), ""},
		{"jpeg sRGB in chunks", media.TypeJPEG, mediatest.JPEGWithICC(jpg, srgb, 100), ""},
		{"jpeg grey", media.TypeJPEG, mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("GRAY", "Dot Gain 20%"), 1000), ""},
		{"jpeg Adobe RGB", media.TypeJPEG, mediatest.JPEGWithICC(jpg, adobe, 1000), `"Adobe RGB (1998)"`},
		{"jpeg CMYK profile", media.TypeJPEG, mediatest.JPEGWithICC(jpg, mediatest.ICCProfile("CMYK", "U.S. Web Coated (SWOP) v2"), 1000), "SWOP"},
		{"png Display P3", media.TypePNG, mediatest.PNGWithICC(png, mediatest.ICCProfile("RGB ", "Display P3")), `"Display P3"`},
		{"png sRGB", media.TypePNG, mediatest.PNGWithICC(png, srgb), ""},
		{"png unreadable profile", media.TypePNG, mediatest.PNGWithICC(png, []byte("not a profile")), "cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := media.Inspect(tc.body, tc.contentType, media.MaxPixels)
			if tc.refused == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			e := errs.As(err)
			if err == nil || e.Code != errs.CodeInvalidMedia || !strings.Contains(e.Detail, tc.refused) || !strings.Contains(e.Detail, "sRGB") {
				t.Fatalf("%v, want INVALID_MEDIA naming %s and sRGB", err, tc.refused)
			}
		})
	}
	// A profile split over APP2 segments with one missing cannot be read.
	split := mediatest.JPEGWithICC(jpg, adobe, 100)
	second := strings.Index(string(split), "ICC_PROFILE\x00\x02")
	broken := append(append([]byte{}, split[:second-4]...), split[second-4+2+int(split[second-2])<<8|int(split[second-1]):]...)
	if _, err := media.Inspect(broken, media.TypeJPEG, media.MaxPixels); errs.As(err).Code != errs.CodeInvalidMedia {
		t.Fatalf("missing chunk: %v", err)
	}
}

// The gate holds decodes to its memory budget and its slots, with real
// goroutines: each decode holds its room until the test lets it go.
func TestGateBoundsConcurrentDecodes(t *testing.T) {
	for _, tc := range []struct {
		name           string
		budget         int64
		slots          int
		cost           int64
		wantConcurrent int
	}{
		{"by memory", 100, 8, 40, 2},
		{"by slots", 1000, 3, 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := media.NewGate(tc.budget, tc.slots)
			const n = 7
			in := make(chan int, n)
			out := make([]chan struct{}, n)
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				out[i] = make(chan struct{})
				wg.Add(1)
				go func() {
					defer wg.Done()
					release, err := g.Acquire(context.Background(), fmt.Sprint("tenant-", i), tc.cost)
					if err != nil {
						t.Error(err)
						return
					}
					in <- i
					<-out[i]
					release()
				}()
			}
			// The first decodes get in; the rest queue.
			var inside []int
			for len(inside) < tc.wantConcurrent {
				inside = append(inside, <-in)
			}
			waitFor(t, func() bool { return g.Stats().Waiting == n-tc.wantConcurrent })
			if s := g.Stats(); s.Running != tc.wantConcurrent || s.Used != int64(tc.wantConcurrent)*tc.cost {
				t.Fatalf("stats %+v with %d inside", s, len(inside))
			}
			select {
			case i := <-in:
				t.Fatalf("decode %d got in past the bound", i)
			default:
			}
			// Each release lets exactly one more in.
			done := 0
			for done < n {
				close(out[inside[0]])
				inside = inside[1:]
				done++
				if want := min(n-done, tc.wantConcurrent); len(inside) < want {
					inside = append(inside, <-in)
				}
			}
			wg.Wait()
			if s := g.Stats(); s.PeakRunning != tc.wantConcurrent || s.PeakUsed > tc.budget || s.Running != 0 || s.Used != 0 || s.Waiting != 0 {
				t.Fatalf("after all: %+v", s)
			}
		})
	}
	// A waiter whose context ends leaves the queue without taking room,
	// and a large decode at the head is not overtaken by small ones.
	g := media.NewGate(100, 8)
	hold, _ := g.Acquire(context.Background(), "a", 60)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Acquire(ctx, "b", 80)
		errc <- err
	}()
	waitFor(t, func() bool { return g.Stats().Waiting == 1 })
	small := make(chan struct{})
	go func() {
		r, _ := g.Acquire(context.Background(), "c", 10)
		close(small)
		r()
	}()
	waitFor(t, func() bool { return g.Stats().Waiting == 2 })
	select {
	case <-small:
		t.Fatal("a small decode overtook the large one at the head")
	default:
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	<-small // the head left: the small one fits beside the 60
	hold()
	if s := g.Stats(); s.Used != 0 || s.Running != 0 || s.Waiting != 0 {
		t.Fatalf("after: %+v", s)
	}
}

// waitFor waits until cond holds: goroutines reaching a queue is
// synchronisation, not a timed assertion.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; !cond(); i++ {
		if i > 1_000_000 {
			t.Fatal("condition never held")
		}
		runtimeGosched()
	}
}

func runtimeGosched() { runtime.Gosched() }

// One tenant runs at most its share of the slots: its further decodes wait
// while another tenant's go past them, and get in as its own end.
func TestGateSharesSlotsBetweenTenants(t *testing.T) {
	g := media.NewGate(1000, 2)
	if g.PerTenant() != 1 {
		t.Fatalf("per tenant %d, want 1 of 2 slots", g.PerTenant())
	}
	first, err := g.Acquire(context.Background(), "hostile", 10)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan func())
	go func() {
		r, err := g.Acquire(context.Background(), "hostile", 10)
		if err != nil {
			t.Error(err)
		}
		second <- r
	}()
	waitFor(t, func() bool { return g.Stats().Waiting == 1 })
	// Another vendor is not queued behind the hostile one's second decode.
	other, err := g.Acquire(context.Background(), "other", 10)
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Stats(); s.Running != 2 || s.Waiting != 1 {
		t.Fatalf("stats %+v, want the other vendor running beside the first hostile decode", s)
	}
	other()
	if s := g.Stats(); s.Running != 1 || s.Waiting != 1 {
		t.Fatalf("stats %+v after the other vendor's decode, want the hostile second still waiting", s)
	}
	select {
	case <-second:
		t.Fatal("the hostile tenant's second decode ran beside its first")
	default:
	}
	first()
	(<-second)()
	if s := g.Stats(); s.Running != 0 || s.Waiting != 0 || s.PeakRunning != 2 {
		t.Fatalf("after: %+v", s)
	}
}
