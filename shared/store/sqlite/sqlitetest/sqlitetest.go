// Package sqlitetest opens embedded stores for tests.
package sqlitetest

import (
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/store/sqlite"
)

// Open opens an embedded store in a temporary directory, its expiry read
// from now, closed when the test ends.
func Open(t testing.TB, now func() time.Time) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
