package sqlite_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}
