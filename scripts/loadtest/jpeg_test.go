package main

import (
	"bytes"
	"image/jpeg"
	"testing"
)

// The crafted file is a valid JPEG: a decoder without a scan bound accepts
// it, which is what makes it hostile.
func TestRepeatedScanJPEGDecodes(t *testing.T) {
	b := repeatedScanJPEG(64, 4096, 7)
	if len(b) > 4096 {
		t.Fatalf("%d bytes, want at most 4096", len(b))
	}
	scans := bytes.Count(b, []byte{0xFF, 0xDA})
	if scans < 100 {
		t.Fatalf("%d scans, want over 100 in 4 KiB", scans)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got := img.Bounds().Dx(); got != 64 {
		t.Fatalf("width %d, want 64", got)
	}
	if bytes.Equal(b, repeatedScanJPEG(64, 4096, 8)) {
		t.Fatal("the salt does not change the bytes")
	}
}

// The full-size file fits the upload limit and names 16 megapixels.
func TestRepeatedScanJPEGFull(t *testing.T) {
	b := repeatedScanJPEG(4000, 2_000_000, 1)
	if len(b) > 2_000_000 {
		t.Fatalf("%d bytes", len(b))
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil || cfg.Width != 4000 || cfg.Height != 4000 {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if scans := bytes.Count(b, []byte{0xFF, 0xDA}); scans < 50_000 {
		t.Fatalf("%d scans, want tens of thousands", scans)
	}
}
