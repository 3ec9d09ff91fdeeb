package vp8enc

import (
	"image"
	"image/color"
)

// FromImage converts m to 4:2:0 YCbCr in VP8's colour space: BT.601 with
// studio swing (luma 16..235), chroma averaged over 2x2 pixels, with
// libwebp's fixed-point coefficients. Transparent pixels are composited over
// white. An *image.YCbCr is read as Go defines it (JFIF, full range), which
// is what image/jpeg returns; for planes already in VP8's space (a WebP
// decoded by golang.org/x/image/webp) use them as they are, or FromVP8.
//
// orientation is an EXIF orientation (1 to 8; others count as 1): the
// result is m turned as that tag tells a viewer to show it, so the pixels
// stand upright without the tag.
func FromImage(m image.Image, orientation int) *image.YCbCr {
	b := m.Bounds()
	rgb := rgbOf(m)
	w, h := b.Dx(), b.Dy()
	// src maps a pixel of the upright result to one of m.
	var src func(x, y int) (int, int)
	switch orientation {
	case 2:
		src = func(x, y int) (int, int) { return w - 1 - x, y }
	case 3:
		src = func(x, y int) (int, int) { return w - 1 - x, h - 1 - y }
	case 4:
		src = func(x, y int) (int, int) { return x, h - 1 - y }
	case 5:
		src = func(x, y int) (int, int) { return y, x }
	case 6:
		src = func(x, y int) (int, int) { return y, h - 1 - x }
	case 7:
		src = func(x, y int) (int, int) { return w - 1 - y, h - 1 - x }
	case 8:
		src = func(x, y int) (int, int) { return w - 1 - y, x }
	default:
		return convert(b, rgb)
	}
	out := image.Rect(0, 0, w, h)
	if orientation >= 5 {
		out = image.Rect(0, 0, h, w)
	}
	return convert(out, func(x, y int) (int32, int32, int32) {
		sx, sy := src(x, y)
		return rgb(b.Min.X+sx, b.Min.Y+sy)
	})
}

// FromVP8 flattens a VP8 image with alpha (as golang.org/x/image/webp
// decodes one) over white.
func FromVP8(m *image.NYCbCrA) *image.YCbCr {
	return convert(m.Bounds(), func(x, y int) (int32, int32, int32) {
		yi, ci := m.YOffset(x, y), m.COffset(x, y)
		r, g, b := studioToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
		return over(r, g, b, int32(m.A[m.AOffset(x, y)]))
	})
}

// studioToRGB inverts BT.601 studio-swing YCbCr as libwebp's decoder does.
func studioToRGB(y, cb, cr uint8) (int32, int32, int32) {
	yy := 19077 * (int32(y) - 16)
	u, v := int32(cb)-128, int32(cr)-128
	r := (yy + 26149*v + 1<<13) >> 14
	g := (yy - 6419*u - 13320*v + 1<<13) >> 14
	b := (yy + 33050*u + 1<<13) >> 14
	return clamp255(r), clamp255(g), clamp255(b)
}

// over composites a non-premultiplied colour with alpha a over white.
func over(r, g, b, a int32) (int32, int32, int32) {
	if a == 255 {
		return r, g, b
	}
	w := 255 * (255 - a)
	return (r*a + w + 127) / 255, (g*a + w + 127) / 255, (b*a + w + 127) / 255
}

// rgbOf returns a reader of opaque 8-bit RGB, with fast paths for what the
// standard decoders return.
func rgbOf(m image.Image) func(x, y int) (int32, int32, int32) {
	switch p := m.(type) {
	case *image.YCbCr:
		return func(x, y int) (int32, int32, int32) {
			ci := p.COffset(x, y)
			r, g, b := color.YCbCrToRGB(p.Y[p.YOffset(x, y)], p.Cb[ci], p.Cr[ci])
			return int32(r), int32(g), int32(b)
		}
	case *image.NRGBA:
		return func(x, y int) (int32, int32, int32) {
			s := p.Pix[p.PixOffset(x, y):]
			return over(int32(s[0]), int32(s[1]), int32(s[2]), int32(s[3]))
		}
	case *image.RGBA:
		return func(x, y int) (int32, int32, int32) {
			s := p.Pix[p.PixOffset(x, y):]
			w := 255 - int32(s[3]) // premultiplied: add the white that shows through
			return int32(s[0]) + w, int32(s[1]) + w, int32(s[2]) + w
		}
	case *image.Gray:
		return func(x, y int) (int32, int32, int32) {
			v := int32(p.Pix[p.PixOffset(x, y)])
			return v, v, v
		}
	}
	return func(x, y int) (int32, int32, int32) {
		c := color.NRGBAModel.Convert(m.At(x, y)).(color.NRGBA)
		return over(int32(c.R), int32(c.G), int32(c.B), int32(c.A))
	}
}

// convert samples rgb over bounds b into 4:2:0 planes.
func convert(b image.Rectangle, rgb func(x, y int) (int32, int32, int32)) *image.YCbCr {
	w, h := b.Dx(), b.Dy()
	out := image.NewYCbCr(image.Rect(0, 0, w, h), image.YCbCrSubsampleRatio420)
	for cy := 0; cy < (h+1)/2; cy++ {
		for cx := 0; cx < (w+1)/2; cx++ {
			var sr, sg, sb int32
			for dy := 0; dy < 2; dy++ {
				for dx := 0; dx < 2; dx++ {
					x, y := 2*cx+dx, 2*cy+dy
					// Odd edges repeat their last pixel into the chroma average.
					r, g, bl := rgb(b.Min.X+min(x, w-1), b.Min.Y+min(y, h-1))
					sr, sg, sb = sr+r, sg+g, sb+bl
					if x < w && y < h {
						out.Y[y*out.YStride+x] = uint8((16839*r + 33059*g + 6420*bl + 1<<15 + 16<<16) >> 16)
					}
				}
			}
			ci := cy*out.CStride + cx
			out.Cb[ci] = uint8(clamp255((-9719*sr - 19081*sg + 28800*sb + 1<<17 + 128<<18) >> 18))
			out.Cr[ci] = uint8(clamp255((28800*sr - 24116*sg - 4684*sb + 1<<17 + 128<<18) >> 18))
		}
	}
	return out
}
