package vp8enc

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/image/webp"
)

// photo draws a photo-like picture: smooth gradients, a few shapes with
// edges and sensor-like noise.
func photo(w, h int, noise float64, seed uint64) *image.NRGBA {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			fx, fy := float64(x)/float64(w), float64(y)/float64(h)
			r := 200*fx + 40*math.Sin(fy*9)
			g := 180*fy + 30*math.Cos(fx*13)
			b := 120 + 80*math.Sin((fx+fy)*7)
			if dx, dy := fx-0.5, fy-0.5; dx*dx+dy*dy < 0.04 {
				r, g, b = 230-r/3, 60+g/4, 40
			}
			n := rng.NormFloat64() * noise
			m.Set(x, y, color.NRGBA{clampF(r + n), clampF(g + n), clampF(b + n), 255})
		}
	}
	return m
}

func clampF(v float64) uint8 { return uint8(math.Max(0, math.Min(255, v))) }

// psnr compares the luma planes of two images in VP8's colour space.
func psnr(a, b *image.YCbCr) float64 {
	var se float64
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			d := float64(a.Y[a.YOffset(x, y)]) - float64(b.Y[b.YOffset(x, y)])
			se += d * d
		}
	}
	mse := se / float64(r.Dx()*r.Dy())
	if mse == 0 {
		return math.Inf(1)
	}
	return 10 * math.Log10(255*255/mse)
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		w, h    int
		noise   float64
		quality int
		minPSNR float64
	}{
		{"tiny", 1, 1, 0, 82, 30},
		{"odd", 37, 23, 4, 82, 30},
		{"smooth", 320, 200, 0, 82, 38},
		{"noisy", 300, 210, 8, 82, 32},
		{"low quality", 300, 210, 8, 10, 22},
		{"best quality", 160, 96, 8, 100, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := FromImage(photo(tc.w, tc.h, tc.noise, 1), 1)
			b, err := Encode(src, tc.quality)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := webp.DecodeConfig(bytes.NewReader(b))
			if err != nil || cfg.Width != tc.w || cfg.Height != tc.h {
				t.Fatalf("DecodeConfig = %+v, %v", cfg, err)
			}
			m, err := webp.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := m.(*image.YCbCr)
			p := psnr(src, got)
			t.Logf("%dx%d q%d: %d bytes, PSNR %.1f dB", tc.w, tc.h, tc.quality, len(b), p)
			if p < tc.minPSNR {
				t.Errorf("PSNR %.1f dB < %.1f", p, tc.minPSNR)
			}
		})
	}
}

func TestDeterministic(t *testing.T) {
	src := FromImage(photo(200, 120, 6, 3), 1)
	a, _ := Encode(src, 82)
	b, _ := Encode(src, 82)
	if !bytes.Equal(a, b) {
		t.Fatal("two encodings of the same pixels differ")
	}
}

func TestQuantizerIndex(t *testing.T) {
	for q, want := range map[int]int{0: 127, 75: 26, 82: 17, 100: 0} {
		if got := QuantizerIndex(q); got != want {
			t.Errorf("QuantizerIndex(%d) = %d, want %d", q, got, want)
		}
	}
}

func TestTooLarge(t *testing.T) {
	if _, err := Encode(image.NewYCbCr(image.Rect(0, 0, MaxDimension+1, 1), image.YCbCrSubsampleRatio420), 82); err != ErrTooLarge {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestOrientation(t *testing.T) {
	// A 3x2 picture with one red pixel at the top left.
	m := image.NewNRGBA(image.Rect(0, 0, 3, 2))
	for i := range m.Pix {
		m.Pix[i] = 255
	}
	m.Set(0, 0, color.NRGBA{255, 0, 0, 255})
	red := FromImage(m, 1).Y[0]
	for o, want := range map[int]image.Point{1: {0, 0}, 2: {2, 0}, 3: {2, 1}, 4: {0, 1}, 5: {0, 0}, 6: {1, 0}, 7: {1, 2}, 8: {0, 2}} {
		got := FromImage(m, o)
		size := got.Bounds().Size()
		if (o >= 5) != (size == image.Pt(2, 3)) {
			t.Errorf("orientation %d: size %v", o, size)
		}
		if got.Y[got.YOffset(want.X, want.Y)] != red {
			t.Errorf("orientation %d: the red pixel is not at %v", o, want)
		}
	}
}
