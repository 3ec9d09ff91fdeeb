package sqlite_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// BenchmarkGetMany reads a request's admission batch (token and vendor)
// and a read alone, the embedded store's hottest reads.
func BenchmarkGetMany(b *testing.B) {
	s, err := sqlite.Open(b.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var keys []store.Key
	for i := range 3 {
		k := store.Key{PK: fmt.Sprintf("P#%d", i), SK: "S"}
		keys = append(keys, k)
		if err := s.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{"id":"x"}`)}, store.Cond{})); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("batch-of-3", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.GetMany(ctx, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Get(ctx, keys[0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
