// Package storetest is the contract suite every store adapter passes. The
// embedded adapter runs it directly; the DynamoDB adapter runs it against
// DynamoDB Local.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"

	"github.com/moku/sellerapi/shared/store"
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

func testIncrement(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	k := store.Key{PK: "V", SK: "RATE#r#1"}
	exp := clock.Now().Add(2 * time.Minute).Unix()
	for want := int64(1); want <= 3; want++ {
		n, err := s.Increment(ctx, k, "n", 1, 3, exp)
		if err != nil || n != want {
			t.Fatalf("Increment #%d = %d, %v", want, n, err)
		}
	}
	if _, err := s.Increment(ctx, k, "n", 1, 3, exp); !store.IsCondition(err) {
		t.Fatalf("Increment past the bound = %v, want condition failure", err)
	}
	got, _ := s.Get(ctx, k)
	if got.Nums["n"] != 3 || got.ExpiresAt != exp {
		t.Fatalf("counter item = %+v", got)
	}
	// Once the window expires the counter starts over.
	clock.Advance(3 * time.Minute)
	n, err := s.Increment(ctx, k, "n", 1, 3, clock.Now().Add(2*time.Minute).Unix())
	if err != nil || n != 1 {
		t.Fatalf("Increment after expiry = %d, %v; want 1", n, err)
	}
}

func testConcurrentIncrement(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "V", SK: "RATE#w#1"}
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Increment(context.Background(), k, "n", 1, 12, 0)
			switch {
			case err == nil:
				ok.Add(1)
			case store.IsCondition(err):
				refused.Add(1)
			default:
				t.Errorf("Increment: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 12 || refused.Load() != 18 {
		t.Fatalf("%d admitted and %d refused, want 12 and 18", ok.Load(), refused.Load())
	}
}

func testConcurrentCreate(t *testing.T, s store.Store, _ *Clock) {
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := s.Transact(context.Background(),
				store.Put(item("V", "IDEM#k", 1, fmt.Sprintf(`{"i":%d}`, i)), store.IfAbsent()),
				store.Put(item("V", fmt.Sprintf("PRODUCT#%02d", i), 1, `{}`), store.IfAbsent()),
			)
			switch {
			case err == nil:
				wins.Add(1)
			case store.IsCondition(err):
			default:
				t.Errorf("Transact: %v", err)
			}
		}(i)
	}
	wg.Wait()
	got, err := s.Query(context.Background(), store.Query{PK: "V", Prefix: "PRODUCT#", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if wins.Load() != 1 || len(got) != 1 {
		t.Fatalf("%d winners and %d products, want exactly one of each", wins.Load(), len(got))
	}
}

func testConcurrentVersioned(t *testing.T, s store.Store, _ *Clock) {
	mustTx(t, s, store.Put(item("V", "ITEM", 1, `{}`), store.IfAbsent()))
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Transact(context.Background(), store.Put(item("V", "ITEM", 2, `{}`), store.IfVersion(1)))
			if err == nil {
				wins.Add(1)
			} else if !store.IsCondition(err) {
				t.Errorf("Transact: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d updates won on one version, want 1", wins.Load())
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

func testRoundTrips(t *testing.T, s store.Store, _ *Clock) {
	ctx, rt := store.WithRoundTrips(context.Background())
	_, _ = s.Get(ctx, store.Key{PK: "P", SK: "x"})
	_ = s.Transact(ctx, store.Put(item("P", "x", 1, `{}`), store.Cond{}))
	_, _ = s.Query(ctx, store.Query{PK: "P", Limit: 1})
	if rt.N() != 3 {
		t.Fatalf("counted %d round trips, want 3", rt.N())
	}
}
