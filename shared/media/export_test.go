package media

// JPEGScans exposes the scan walk to the external tests: its scans, its
// work and its own iterations.
func JPEGScans(b []byte) (scans int, work, steps int64, err error) {
	w, err := jpegScans(b)
	return w.scans, w.work, w.steps, err
}
