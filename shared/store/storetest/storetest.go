// Package storetest is the contract suite every store adapter passes. The
// embedded adapter runs it directly; the DynamoDB adapter runs it against
// DynamoDB Local.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// Clock is a settable clock the suite uses to test expiry.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Factory opens an empty store whose expiry decisions follow clock.
type Factory func(t *testing.T, clock *Clock) store.Store

// Run runs the contract suite.
func Run(t *testing.T, open Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store, *Clock)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"IfAbsent", testIfAbsent},
		{"IfVersion", testIfVersion},
		{"Bounds", testBounds},
		{"AddCreatesAndAccumulates", testAdd},
		{"UpdateKeepsOtherNums", testUpdate},
		{"DeleteAndCheck", testDeleteAndCheck},
		{"AllOrNothing", testAllOrNothing},
		{"Validate", testValidate},
		{"QueryOrderPrefixAfterLimit", testQuery},
		{"Expiry", testExpiry},
		{"GetMany", testGetMany},
		{"Increment", testIncrement},
		{"ConcurrentIncrementBound", testConcurrentIncrement},
		{"ConcurrentCreateOneWinner", testConcurrentCreate},
		{"ConcurrentVersionedUpdates", testConcurrentVersioned},
		{"HundredOpTransaction", testHundredOps},
		{"ItemSizeLimit", testItemSizeLimit},
		{"RoundTripsCounted", testRoundTrips},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock(clocktest.Date(2026, 1, 2, 3, 4, 5))
			s := open(t, clock)
			tc.fn(t, s, clock)
		})
	}
}

func item(pk, sk string, v int64, data string) store.Item {
	return store.Item{PK: pk, SK: sk, Version: v, Data: []byte(data)}
}

func mustTx(t *testing.T, s store.Store, ops ...store.Op) {
	t.Helper()
	if err := s.Transact(context.Background(), ops...); err != nil {
		t.Fatalf("Transact: %v", err)
	}
}

func wantCondition(t *testing.T, err error, failed ...int) {
	t.Helper()
	ce, ok := store.AsCondition(err)
	if !ok {
		t.Fatalf("want a condition error, got %v", err)
	}
	for _, f := range failed {
		if !ce.Has(f) {
			t.Fatalf("want operation %d among the failed, got %v", f, ce.Failed)
		}
	}
}

func testGetMissing(t *testing.T, s store.Store, _ *Clock) {
	_, err := s.Get(context.Background(), store.Key{PK: "P", SK: "missing"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get missing = %v, want ErrNotFound", err)
	}
}

func testPutGet(t *testing.T, s store.Store, _ *Clock) {
	in := store.Item{PK: "P", SK: "a", Version: 3, Data: []byte(`{"x":1}`), Nums: map[string]int64{"qty": 7, "neg": -2}, ExpiresAt: 4102444800}
	mustTx(t, s, store.Put(in, store.Cond{}))
	got, err := s.Get(context.Background(), in.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 3 || string(got.Data) != `{"x":1}` || got.Nums["qty"] != 7 || got.Nums["neg"] != -2 || got.ExpiresAt != 4102444800 {
		t.Fatalf("Get = %+v", got)
	}
	// A put replaces the whole item, numeric attributes included.
	mustTx(t, s, store.Put(item("P", "a", 4, `{"x":2}`), store.Cond{}))
	got, _ = s.Get(context.Background(), in.Key())
	if got.Version != 4 || string(got.Data) != `{"x":2}` || len(got.Nums) != 0 || got.ExpiresAt != 0 {
		t.Fatalf("after replace Get = %+v", got)
	}
}

func testQuery(t *testing.T, s store.Store, _ *Clock) {
	ctx := context.Background()
	var ops []store.Op
	for i := 0; i < 25; i++ {
		ops = append(ops, store.Put(item("V", fmt.Sprintf("PRODUCT#%03d", i), 1, fmt.Sprintf(`{"i":%d}`, i)), store.Cond{}))
	}
	ops = append(ops,
		store.Put(item("V", "PRODUCS", 1, `{}`), store.Cond{}),
		store.Put(item("V", "PRODUCT$", 1, `{}`), store.Cond{}),
		store.Put(item("V", "ZZZ", 1, `{}`), store.Cond{}),
		store.Put(item("W", "PRODUCT#000", 1, `{}`), store.Cond{}),
	)
	mustTx(t, s, ops...)

	var seen []string
	after := ""
	for pages := 0; pages < 10; pages++ {
		got, err := s.Query(ctx, store.Query{PK: "V", Prefix: "PRODUCT#", After: after, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range got {
			seen = append(seen, it.SK)
		}
		if len(got) < 10 {
			break
		}
		after = got[len(got)-1].SK
	}
	if len(seen) != 25 {
		t.Fatalf("walked %d items, want 25: %v", len(seen), seen)
	}
	for i, sk := range seen {
		if want := fmt.Sprintf("PRODUCT#%03d", i); sk != want {
			t.Fatalf("item %d = %s, want %s", i, sk, want)
		}
	}
	desc, err := s.Query(ctx, store.Query{PK: "V", Prefix: "PRODUCT#", After: "PRODUCT#010", Limit: 3, Desc: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc) != 3 || desc[0].SK != "PRODUCT#009" || desc[2].SK != "PRODUCT#007" {
		t.Fatalf("desc page = %v", keys(desc))
	}
	all, err := s.Query(ctx, store.Query{PK: "V", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 28 {
		t.Fatalf("unprefixed query = %d items, want 28", len(all))
	}
}

func keys(items []store.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.SK
	}
	return out
}

func testExpiry(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	exp := clock.Now().Add(time.Minute).Unix()
	it := item("P", "r", 1, `{}`)
	it.ExpiresAt = exp
	mustTx(t, s, store.Put(it, store.IfAbsent()))
	if _, err := s.Get(ctx, it.Key()); err != nil {
		t.Fatalf("live item: %v", err)
	}
	clock.Advance(time.Minute)
	if _, err := s.Get(ctx, it.Key()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired item Get = %v, want ErrNotFound", err)
	}
	got, err := s.Query(ctx, store.Query{PK: "P", Limit: 10})
	if err != nil || len(got) != 0 {
		t.Fatalf("expired item in query: %v %v", keys(got), err)
	}
	many, err := s.GetMany(ctx, []store.Key{it.Key()})
	if err != nil || many[0].PK != "" {
		t.Fatalf("expired item in GetMany: %+v %v", many, err)
	}
	// An expired item counts as absent for a create, and not as existing.
	wantCondition(t, s.Transact(ctx, store.Check(it.Key(), store.Cond{Exists: true})), 0)
	mustTx(t, s, store.Put(item("P", "r", 1, `{"again":true}`), store.IfAbsent()))
	got1, err := s.Get(ctx, it.Key())
	if err != nil || string(got1.Data) != `{"again":true}` || got1.ExpiresAt != 0 {
		t.Fatalf("recreated item: %+v %v", got1, err)
	}
}

func testGetMany(t *testing.T, s store.Store, _ *Clock) {
	mustTx(t, s, store.Put(item("A", "1", 1, `"a"`), store.Cond{}), store.Put(item("B", "2", 2, `"b"`), store.Cond{}))
	got, err := s.GetMany(context.Background(), []store.Key{{PK: "B", SK: "2"}, {PK: "X", SK: "none"}, {PK: "A", SK: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0].Data) != `"b"` || got[1].PK != "" || string(got[2].Data) != `"a"` {
		t.Fatalf("GetMany = %+v", got)
	}
}

func testRoundTrips(t *testing.T, s store.Store, _ *Clock) {
	ctx, rt := roundtrip.With(context.Background())
	_, _ = s.Get(ctx, store.Key{PK: "P", SK: "x"})
	_ = s.Transact(ctx, store.Put(item("P", "x", 1, `{}`), store.Cond{}))
	_, _ = s.Query(ctx, store.Query{PK: "P", Limit: 1})
	if rt.N() != 3 {
		t.Fatalf("counted %d round trips, want 3", rt.N())
	}
}
