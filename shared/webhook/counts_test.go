package webhook

import (
	"context"
	"maps"
	"testing"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// changedFirst is a store on which the first transaction whose first
// operation is of kind on first finds subscription key's event types
// changed to types just before it (an update that won the race with the
// transaction's reads).
type changedFirst struct {
	store.Store
	svc   Service
	kind  store.OpKind
	first store.Key
	key   store.Key
	types []string
	done  bool
}

func (c *changedFirst) Transact(ctx context.Context, ops ...store.Op) error {
	if !c.done && len(ops) > 0 && ops[0].Kind == c.kind && ops[0].Item.Key() == c.first {
		c.done = true
		sub, err := c.svc.Get(ctx, preparingVendor, c.key.SK[len(datamodel.SubscriptionPrefix):])
		if err != nil {
			return err
		}
		if _, err := c.svc.Update(ctx, preparingVendor, sub.ID, UpdateInput{ExpectedVersion: sub.Version, EventTypes: c.types}); err != nil {
			return err
		}
	}
	return c.Store.Transact(ctx, ops...)
}

// TestDeleteTakesTheTypesTheSubscriptionHasWhenItGoes: a delete that read
// the subscription before a change of its event types deletes it as it is
// then, so the vendor's per-type counts return to zero, not to -1 for the
// types it had and +1 for those it has.
func TestDeleteTakesTheTypesTheSubscriptionHasWhenItGoes(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	svc := Service{Store: st, Clock: clk, Policy: Policy{AllowLoopback: true}, Secrets: testBox(t)}
	prep, err := svc.PrepareCreate(ctx, preparingVendor, CreateInput{Destination: HTTPS("https://127.0.0.1/hook"), EventTypes: []string{event.ProductCreated}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, prep.Ops...); err != nil {
		t.Fatal(err)
	}
	ck := datamodel.SubscriptionCountKey(preparingVendor)
	counts := func() map[string]int64 {
		it, err := st.Get(ctx, ck)
		if err != nil {
			t.Fatal(err)
		}
		m := maps.Clone(it.Nums)
		maps.DeleteFunc(m, func(k string, v int64) bool { return v == 0 && k != datamodel.SubscriptionCountAttr })
		return m
	}
	want := map[string]int64{datamodel.SubscriptionCountAttr: 1, datamodel.SubscriptionTypedAttr: 1, datamodel.SubscriptionTypeAttr(event.ProductCreated): 1}
	if got := counts(); !maps.Equal(got, want) {
		t.Fatalf("after the create: %v, want %v", got, want)
	}
	k := datamodel.SubscriptionKey(preparingVendor, prep.View.ID)
	racing := &changedFirst{Store: st, svc: svc, kind: store.OpDelete, first: k, key: k, types: []string{event.ProductUpdated}}
	if err := svc.With(racing).Delete(ctx, preparingVendor, prep.View.ID); err != nil {
		t.Fatal(err)
	}
	if !racing.done {
		t.Fatal("the update never raced the delete")
	}
	want = map[string]int64{datamodel.SubscriptionCountAttr: 0, datamodel.SubscriptionTypedAttr: 1}
	if got := counts(); !maps.Equal(got, want) {
		t.Fatalf("after the delete: %v, want %v", got, want)
	}
}

// countsOf is the vendor's count item's attributes, zero counts left out.
func countsOf(t *testing.T, st store.Store) map[string]int64 {
	t.Helper()
	it, err := st.Get(context.Background(), datamodel.SubscriptionCountKey(preparingVendor))
	if err != nil {
		t.Fatal(err)
	}
	m := maps.Clone(it.Nums)
	maps.DeleteFunc(m, func(k string, v int64) bool { return v == 0 && k != datamodel.SubscriptionCountAttr })
	return m
}

// TestRecountCompletesAnOlderBuildsCounts: a count item an older build
// wrote (the number of subscriptions only) gets complete per-type counts
// and its flag from the subscriptions as they are, even when a type
// change commits between the recount's reads and its write; a complete
// item, or none, is left alone. On both stores.
func TestRecountCompletesAnOlderBuildsCounts(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st := open(t, clk)
			svc := Service{Store: st, Clock: clk, Policy: Policy{AllowLoopback: true}, Secrets: testBox(t)}
			if done, err := svc.Recount(ctx, preparingVendor); done || err != nil {
				t.Fatalf("a vendor without subscriptions: recounted %v, %v", done, err)
			}
			var ids []string
			for _, types := range [][]string{{"*"}, {event.ProductCreated, event.ProductUpdated}, {event.ProductCreated}} {
				prep, err := svc.PrepareCreate(ctx, preparingVendor, CreateInput{Destination: HTTPS("https://127.0.0.1/hook"), EventTypes: types})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Transact(ctx, prep.Ops...); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, prep.View.ID)
			}
			// As an older build left it: the number of subscriptions only.
			ck := datamodel.SubscriptionCountKey(preparingVendor)
			if err := st.Transact(ctx, store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: 1, Nums: map[string]int64{datamodel.SubscriptionCountAttr: 3}}, store.Cond{})); err != nil {
				t.Fatal(err)
			}
			racing := &changedFirst{Store: st, svc: svc, kind: store.OpPut, first: ck, key: datamodel.SubscriptionKey(preparingVendor, ids[2]), types: []string{event.InventoryItemAdjusted}}
			if done, err := svc.With(racing).Recount(ctx, preparingVendor); !done || err != nil || !racing.done {
				t.Fatalf("recounted %v, %v (raced: %v)", done, err, racing.done)
			}
			want := map[string]int64{datamodel.SubscriptionCountAttr: 3, datamodel.SubscriptionTypedAttr: 1, datamodel.SubscriptionTypeAttr("*"): 1,
				datamodel.SubscriptionTypeAttr(event.ProductCreated): 1, datamodel.SubscriptionTypeAttr(event.ProductUpdated): 1,
				datamodel.SubscriptionTypeAttr(event.InventoryItemAdjusted): 1}
			if got := countsOf(t, st); !maps.Equal(got, want) {
				t.Fatalf("recounted %v, want %v", got, want)
			}
			if done, err := svc.Recount(ctx, preparingVendor); done || err != nil {
				t.Fatalf("complete counts: recounted again %v, %v", done, err)
			}
		})
	}
}
