package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

func testIfAbsent(t *testing.T, s store.Store, _ *Clock) {
	mustTx(t, s, store.Put(item("P", "a", 1, `{}`), store.IfAbsent()))
	err := s.Transact(context.Background(), store.Put(item("P", "a", 1, `{"second":true}`), store.IfAbsent()))
	wantCondition(t, err, 0)
	got, _ := s.Get(context.Background(), store.Key{PK: "P", SK: "a"})
	if string(got.Data) != `{}` {
		t.Fatalf("failed put changed the item: %s", got.Data)
	}
}

func testIfVersion(t *testing.T, s store.Store, _ *Clock) {
	err := s.Transact(context.Background(), store.Put(item("P", "a", 2, `{}`), store.IfVersion(1)))
	wantCondition(t, err, 0)
	mustTx(t, s, store.Put(item("P", "a", 1, `{}`), store.IfAbsent()))
	mustTx(t, s, store.Put(item("P", "a", 2, `{"v":2}`), store.IfVersion(1)))
	err = s.Transact(context.Background(), store.Put(item("P", "a", 2, `{"v":"stale"}`), store.IfVersion(1)))
	wantCondition(t, err, 0)
	got, _ := s.Get(context.Background(), store.Key{PK: "P", SK: "a"})
	if got.Version != 2 || string(got.Data) != `{"v":2}` {
		t.Fatalf("Get = %+v", got)
	}
}

func testBounds(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "P", SK: "stock"}
	mustTx(t, s, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Nums: map[string]int64{"available": 5}}, store.IfAbsent()))
	for _, tc := range []struct {
		b  store.Bound
		ok bool
	}{
		{store.Bound{Attr: "available", Cmp: store.GE, Value: 5}, true},
		{store.Bound{Attr: "available", Cmp: store.GE, Value: 6}, false},
		{store.Bound{Attr: "available", Cmp: store.GT, Value: 4}, true},
		{store.Bound{Attr: "available", Cmp: store.GT, Value: 5}, false},
		{store.Bound{Attr: "available", Cmp: store.LT, Value: 6}, true},
		{store.Bound{Attr: "available", Cmp: store.LT, Value: 5}, false},
		{store.Bound{Attr: "available", Cmp: store.LE, Value: 5}, true},
		{store.Bound{Attr: "available", Cmp: store.LE, Value: 4}, false},
		{store.Bound{Attr: "available", Cmp: store.EQ, Value: 5}, true},
		{store.Bound{Attr: "available", Cmp: store.EQ, Value: 4}, false},
		{store.Bound{Attr: "missing", Cmp: store.EQ, Value: 0}, true},
		{store.Bound{Attr: "missing", Cmp: store.GE, Value: 1}, false},
	} {
		err := s.Transact(context.Background(), store.Check(k, store.Cond{Bounds: []store.Bound{tc.b}}))
		if tc.ok && err != nil {
			t.Errorf("bound %v: %v", tc.b, err)
		}
		if !tc.ok && !store.IsCondition(err) {
			t.Errorf("bound %v: want condition failure, got %v", tc.b, err)
		}
	}
	// Bounds imply existence.
	err := s.Transact(context.Background(), store.Check(store.Key{PK: "P", SK: "none"}, store.Cond{Bounds: []store.Bound{{Attr: "x", Cmp: store.GE, Value: 0}}}))
	wantCondition(t, err, 0)
}

func testAdd(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "P", SK: "counter"}
	mustTx(t, s, store.Add(k, map[string]int64{"a": 2, "b": -1}, 0, store.Cond{}))
	mustTx(t, s, store.Add(k, map[string]int64{"a": 3}, 0, store.Cond{Bounds: []store.Bound{{Attr: "a", Cmp: store.GE, Value: 2}}}))
	err := s.Transact(context.Background(), store.Add(k, map[string]int64{"a": -10}, 0, store.Cond{Bounds: []store.Bound{{Attr: "a", Cmp: store.GE, Value: 10}}}))
	wantCondition(t, err, 0)
	got, err := s.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Nums["a"] != 5 || got.Nums["b"] != -1 {
		t.Fatalf("nums = %v, want a=5 b=-1", got.Nums)
	}
	// Add keeps the document and version of an existing item.
	mustTx(t, s, store.Put(store.Item{PK: "P", SK: "doc", Version: 7, Data: []byte(`{"k":1}`), Nums: map[string]int64{"n": 1}}, store.Cond{}))
	mustTx(t, s, store.Add(store.Key{PK: "P", SK: "doc"}, map[string]int64{"n": 1}, 0, store.IfVersion(7)))
	got, _ = s.Get(context.Background(), store.Key{PK: "P", SK: "doc"})
	if got.Version != 7 || string(got.Data) != `{"k":1}` || got.Nums["n"] != 2 {
		t.Fatalf("after add: %+v", got)
	}
}

func testUpdate(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "P", SK: "product"}
	mustTx(t, s, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{"rev":1}`), Nums: map[string]int64{"oh_000": 5, "iv_000": 3}}, store.IfAbsent()))
	// A concurrent counter change lands between the read and the update...
	mustTx(t, s, store.Add(k, map[string]int64{"oh_000": 2, "iv_000": 1}, 0, store.Cond{}))
	// ...and the document update keeps it while adding a new counter.
	mustTx(t, s, store.Update(k, []byte(`{"rev":2}`), 2, map[string]int64{"oh_001": 0, "iv_001": 1}, store.IfVersion(1)))
	got, err := s.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 2 || string(got.Data) != `{"rev":2}` || got.Nums["oh_000"] != 7 || got.Nums["iv_000"] != 4 || got.Nums["iv_001"] != 1 {
		t.Fatalf("after update: %+v", got)
	}
	if v, ok := got.Nums["oh_001"]; !ok || v != 0 {
		t.Fatalf("a zero delta must create the attribute at 0: %v", got.Nums)
	}
	wantCondition(t, s.Transact(context.Background(), store.Update(k, []byte(`{}`), 3, nil, store.IfVersion(1))), 0)
	// With no data or version given, the update only adds.
	mustTx(t, s, store.Add(k, map[string]int64{"oh_000": -7}, 0, store.Cond{Bounds: []store.Bound{{Attr: "oh_000", Cmp: store.GE, Value: 7}}}))
	got, _ = s.Get(context.Background(), k)
	if got.Version != 2 || string(got.Data) != `{"rev":2}` || got.Nums["oh_000"] != 0 {
		t.Fatalf("after add: %+v", got)
	}
}

func testDeleteAndCheck(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "P", SK: "a"}
	mustTx(t, s, store.Put(item("P", "a", 1, `{}`), store.IfAbsent()))
	wantCondition(t, s.Transact(context.Background(), store.Delete(k, store.IfVersion(2))), 0)
	wantCondition(t, s.Transact(context.Background(), store.Check(k, store.IfAbsent())), 0)
	mustTx(t, s, store.Check(k, store.IfVersion(1)))
	mustTx(t, s, store.Delete(k, store.IfVersion(1)))
	if _, err := s.Get(context.Background(), k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after delete Get = %v", err)
	}
	mustTx(t, s, store.Check(k, store.IfAbsent()))
}

func testAllOrNothing(t *testing.T, s store.Store, _ *Clock) {
	mustTx(t, s, store.Put(item("P", "taken", 1, `{}`), store.IfAbsent()))
	err := s.Transact(context.Background(),
		store.Put(item("P", "new1", 1, `{}`), store.IfAbsent()),
		store.Add(store.Key{PK: "P", SK: "ctr"}, map[string]int64{"n": 1}, 0, store.Cond{}),
		store.Put(item("P", "taken", 2, `{}`), store.IfAbsent()),
		store.Delete(store.Key{PK: "P", SK: "taken2"}, store.Cond{}),
	)
	wantCondition(t, err, 2)
	if ce, _ := store.AsCondition(err); len(ce.Failed) > 0 && ce.Has(0) {
		t.Fatalf("operation 0 reported failed: %v", ce.Failed)
	}
	for _, sk := range []string{"new1", "ctr"} {
		if _, err := s.Get(context.Background(), store.Key{PK: "P", SK: sk}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s written by a failed transaction: %v", sk, err)
		}
	}
}

func testValidate(t *testing.T, s store.Store, _ *Clock) {
	ctx := context.Background()
	if err := s.Transact(ctx); err == nil || store.IsCondition(err) {
		t.Fatalf("empty transaction: %v", err)
	}
	dup := s.Transact(ctx, store.Put(item("P", "a", 1, `{}`), store.Cond{}), store.Check(store.Key{PK: "P", SK: "a"}, store.Cond{}))
	if dup == nil || store.IsCondition(dup) {
		t.Fatalf("duplicate key: %v", dup)
	}
	ops := make([]store.Op, store.MaxTransactOps+1)
	for i := range ops {
		ops[i] = store.Put(item("P", fmt.Sprintf("k%03d", i), 1, `{}`), store.Cond{})
	}
	if err := s.Transact(ctx, ops...); err == nil || store.IsCondition(err) {
		t.Fatalf("101 operations: %v", err)
	}
	bad := store.Item{PK: "P", SK: "x", Nums: map[string]int64{"Bad Name": 1}}
	if err := s.Transact(ctx, store.Put(bad, store.Cond{})); err == nil {
		t.Fatal("invalid attribute name accepted")
	}
}

// An item of exactly store.MaxItemBytes, counted as DynamoDB counts it,
// is written by both stores (DynamoDB Local agrees with the count); one byte
// more is refused before the write by both, with nothing of the
// transaction written.
func testItemSizeLimit(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	sized := func(sk string, size int) store.Item {
		it := store.Item{PK: "P", SK: sk, Version: 7, Nums: map[string]int64{"count": 123456},
			ExpiresAt: clock.Now().Add(24 * time.Hour).Unix(), Data: []byte(`{"x":""}`)}
		pad := size - store.ItemSize(it)
		it.Data = []byte(`{"x":"` + strings.Repeat("<&>", pad/3) + strings.Repeat("a", pad%3) + `"}`)
		if got := store.ItemSize(it); got != size {
			t.Fatalf("sized item is %d bytes, want %d", got, size)
		}
		return it
	}
	mustTx(t, s, store.Put(sized("exact", store.MaxItemBytes), store.IfAbsent()))
	if got, err := s.Get(ctx, store.Key{PK: "P", SK: "exact"}); err != nil || store.ItemSize(got) != store.MaxItemBytes {
		t.Fatalf("exact item: %v, %d bytes", err, store.ItemSize(got))
	}
	over := sized("over", store.MaxItemBytes+1)
	for _, ops := range [][]store.Op{
		{store.Put(over, store.IfAbsent())},
		{store.Put(item("P", "small", 1, `{}`), store.IfAbsent()), store.Put(over, store.IfAbsent())},
		{store.Update(over.Key(), over.Data, 2, map[string]int64{"count": 1}, store.Cond{})},
	} {
		err := s.Transact(ctx, ops...)
		var tl *store.ItemTooLargeError
		if !errors.As(err, &tl) || tl.Limit != store.MaxItemBytes || tl.Size <= store.MaxItemBytes || tl.Key.SK != "over" {
			t.Fatalf("over the limit: %v, want *store.ItemTooLargeError", err)
		}
	}
	for _, sk := range []string{"over", "small"} {
		if _, err := s.Get(ctx, store.Key{PK: "P", SK: sk}); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("%s: %v, want nothing written", sk, err)
		}
	}
}

func testHundredOps(t *testing.T, s store.Store, _ *Clock) {
	ops := make([]store.Op, store.MaxTransactOps)
	for i := range ops {
		ops[i] = store.Put(item("V", fmt.Sprintf("ITEM#%03d", i), 1, `{}`), store.IfAbsent())
	}
	mustTx(t, s, ops...)
	got, err := s.Query(context.Background(), store.Query{PK: "V", Prefix: "ITEM#", Limit: 200})
	if err != nil || len(got) != store.MaxTransactOps {
		t.Fatalf("query after 100-op transaction = %d items, %v", len(got), err)
	}
}
