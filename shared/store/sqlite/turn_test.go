package sqlite

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
)

// TestWritersTakeTheirTurn: writes in one process wait for the write in
// progress on the store's turn, not in SQLite's busy handler: many
// concurrent writers all commit, and a writer whose context has ended
// while the turn is taken gives up with the context's error, writing
// nothing.
func TestWritersTakeTheirTurn(t *testing.T) {
	ctx := context.Background()
	s, err := Open(t.TempDir(), WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 20 {
				k := store.Item{PK: "P", SK: string(rune('a'+i)) + string(rune('a'+j)), Version: 1}
				if err := s.Transact(ctx, store.Put(k, store.IfAbsent())); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if got, _ := s.Changes(ctx, 0, 1000); len(got) != 320 {
		t.Fatalf("%d writes committed, want 320", len(got))
	}

	end, err := s.turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waiting, cancel := context.WithCancel(ctx)
	cancel()
	err = s.Transact(waiting, store.Put(store.Item{PK: "P", SK: "late", Version: 1}, store.Cond{}))
	end()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a writer whose context ended while waiting: %v", err)
	}
	if _, err := s.Get(ctx, store.Key{PK: "P", SK: "late"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the late write was made: %v", err)
	}
}
