package httpapi_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// pricedTransactions records a DynamoDB transaction's write units as AWS
// bills them, in place of what DynamoDB Local reports: each item the
// transaction names (condition checks included) costs twice its size
// rounded up to 1 KB, its size the larger of the item before and after
// the write, as the store keeps it (the DynamoDB store packs large
// documents: StoredSize). DynamoDB Local reports twice the items' summed size rounded
// up once, so five 100-byte puts read as 2 units where AWS bills 10. A
// lone write, which the adapter sends as a plain PutItem, UpdateItem or
// DeleteItem, is reported correctly and left as it is. The sizes are read
// before and after the write outside the request's count of round trips;
// the benchmark's clients write items of their own, so nothing else moves
// them in between. Those two reads lengthen the DynamoDB rows' latencies
// (only their units are read from them: the bill), never their counts of
// calls and waits.
type pricedTransactions struct {
	store.Store
}

// markedPending adds the router's pending markers to every transaction,
// as the deployed DynamoDB store's hook does (app.MarkPending, on the
// counts of subscriptions the request read), so that a write is billed
// with its markers' items. The bench vendor's subscription receives none
// of the measured writes' events (benchSubscriber), so they get none;
// unmarked adds up, in thousandths of a write unit,
// what the markers the rule left out would have cost in the transaction
// (each item twice its rounded kilobytes), which the bill puts back for
// the share of events a subscription receives. The marker's time is the
// fixture's start: only its size counts here.
type markedPending struct {
	store.Store
	unmarked *atomic.Int64
}

func (m markedPending) Transact(ctx context.Context, ops ...store.Op) error {
	mark := app.MarkPending(func() time.Time { return apitest.Start })
	marked := mark(ctx, ops)
	if err := m.Store.Transact(ctx, marked...); err != nil {
		return err
	}
	// Every marker the transaction would carry were every event received.
	all := mark(context.Background(), ops)
	if m.unmarked != nil && len(all) > len(marked) {
		for _, op := range all[len(ops):] {
			if !slices.ContainsFunc(marked[len(ops):], func(o store.Op) bool { return o.Item.Key() == op.Item.Key() }) {
				m.unmarked.Add(2 * int64((store.ItemSize(op.Item)+1023)/1024) * 1000)
			}
		}
	}
	return nil
}

func (p pricedTransactions) Transact(ctx context.Context, ops ...store.Op) error {
	if len(ops) == 1 && ops[0].Kind != store.OpCheck {
		return p.Store.Transact(ctx, ops...)
	}
	keys := make([]store.Key, len(ops))
	for i, op := range ops {
		keys[i] = op.Item.Key()
	}
	side := context.WithoutCancel(context.Background())
	before, err := p.Store.GetMany(side, keys)
	if err != nil {
		return err
	}
	if err := p.Store.Transact(roundtrip.Unreported(ctx), ops...); err != nil {
		return err
	}
	after, err := p.Store.GetMany(side, keys)
	if err != nil {
		return err
	}
	var units float64
	for i := range ops {
		size := max(p.itemSize(before[i]), p.itemSize(after[i]), 1)
		units += 2 * float64((size+1023)/1024)
	}
	roundtrip.AddCapacity(ctx, 0, units)
	return nil
}

// itemSize is the item's size as its store keeps it: the DynamoDB store
// packs large documents.
func (p pricedTransactions) itemSize(it store.Item) int {
	if it.PK == "" {
		return 0
	}
	if s, ok := p.Store.(interface{ StoredSize(store.Item) int }); ok {
		return s.StoredSize(it)
	}
	return store.ItemSize(it)
}

// TestPricedTransactionsBillEachItem pins the model the bill's write units
// rest on: each item of a transaction its own rounded kilobytes, twice.
func TestPricedTransactionsBillEachItem(t *testing.T) {
	c := clocktest.Fake(2026, 1, 1, 12, 0, 0)
	raw, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	st := pricedTransactions{raw}
	item := func(sk string, n int) store.Item {
		return store.Item{PK: "P", SK: sk, Version: 1, Data: []byte(`"` + strings.Repeat("x", n) + `"`)}
	}
	units := func(ops ...store.Op) float64 {
		ctx, rt := roundtrip.With(t.Context())
		if err := st.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
		_, w := rt.Capacity()
		return w
	}
	var five []store.Op
	for i := range 5 {
		five = append(five, store.Put(item(fmt.Sprint("small", i), 100), store.IfAbsent()))
	}
	if got := units(five...); got != 10 {
		t.Errorf("five 100-byte puts: %v write units, want 10 (DynamoDB Local says 2)", got)
	}
	if got := units(store.Put(item("big", 3000), store.IfAbsent()), store.Check(store.Key{PK: "P", SK: "small0"}, store.Cond{Exists: true})); got != 8 {
		t.Errorf("a 3 KB put and a check: %v write units, want 6 + 2", got)
	}
	// An update costs the larger of the item before and after it.
	if got := units(store.Add(store.Key{PK: "P", SK: "big"}, map[string]int64{"n": 1}, 0, store.Cond{Exists: true}), store.Delete(store.Key{PK: "P", SK: "small1"}, store.Cond{})); got != 8 {
		t.Errorf("a counter on a 3 KB item and a delete: %v write units, want 6 + 2", got)
	}
	if got := units(store.Put(item("lone", 3000), store.IfAbsent())); got != 0 {
		t.Errorf("a lone put: %v write units recorded, want the store's own report (none on SQLite)", got)
	}
}
