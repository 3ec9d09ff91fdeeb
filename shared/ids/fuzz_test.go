package ids

import (
	"strings"
	"testing"
)

// FuzzIssued drives the path-id check routes run before any read: an id
// passes only in the exact shape New and Sortable make.
func FuzzIssued(f *testing.F) {
	for _, seed := range []string{New("prd"), New("ven"), "prd_", "prd_ABCDEFGHIJKLMNOPQRSTUVWXYZ", "prd_abcdefghijklmnopqrstuvwxy\u00e9", "../prd", "prd_" + strings.Repeat("a", 27)} {
		f.Add("prd", seed)
	}
	f.Fuzz(func(t *testing.T, prefix, id string) {
		if !Issued(prefix, id) {
			return
		}
		suffix, ok := strings.CutPrefix(id, prefix+"_")
		if !ok || len(suffix) != 26 || strings.Trim(suffix, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Fatalf("Issued(%q, %q) accepted a foreign shape", prefix, id)
		}
	})
}
