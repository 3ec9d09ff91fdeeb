package sqlite_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
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

func TestChangeLog(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := store.Key{PK: "P", SK: "a"}
	steps := [][]store.Op{
		{store.Put(store.Item{PK: "P", SK: "a", Version: 1, Data: []byte(`{"v":1}`)}, store.IfAbsent())},
		{store.Update(k, []byte(`{"v":2}`), 2, map[string]int64{"n": 1}, store.IfVersion(1)), store.Check(store.Key{PK: "P", SK: "x"}, store.IfAbsent())},
		{store.Delete(k, store.Cond{}), store.Delete(store.Key{PK: "P", SK: "never"}, store.Cond{})},
	}
	for _, ops := range steps {
		if err := s.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	// A failed transaction logs nothing; counters are not logged.
	s.Transact(ctx, store.Put(store.Item{PK: "P", SK: "b", Version: 1}, store.Cond{}), store.Check(k, store.Cond{Exists: true}))
	s.Increment(ctx, store.Key{PK: "P", SK: "rate"}, "n", 1, 10, 0)

	got, err := s.Changes(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d changes, want 3: %+v", len(got), got)
	}
	if got[0].Kind != store.Inserted || got[0].Old != nil || string(got[0].New.Data) != `{"v":1}` {
		t.Fatalf("insert: %+v", got[0])
	}
	if got[1].Kind != store.Modified || string(got[1].Old.Data) != `{"v":1}` || string(got[1].New.Data) != `{"v":2}` || got[1].New.Nums["n"] != 1 {
		t.Fatalf("modify: %+v", got[1])
	}
	if got[2].Kind != store.Removed || got[2].New != nil || got[2].Old.Version != 2 {
		t.Fatalf("remove: %+v", got[2])
	}
	// Cursors keep their place; the log is trimmed behind the slowest.
	if err := s.Advance(ctx, "router", got[1].Seq); err != nil {
		t.Fatal(err)
	}
	if seq, _ := s.Cursor(ctx, "router"); seq != got[1].Seq {
		t.Fatalf("cursor %d", seq)
	}
	rest, _ := s.Changes(ctx, 0, 100)
	if len(rest) != 1 || rest[0].Seq != got[2].Seq {
		t.Fatalf("after trim: %+v", rest)
	}
}
