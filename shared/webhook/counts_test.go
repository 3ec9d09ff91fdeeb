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

// changedFirst is a store on which the first transaction that deletes
// key finds the subscription's event types changed to types just before
// it (an update that won the race with the delete's read).
type changedFirst struct {
	store.Store
	svc   Service
	key   store.Key
	types []string
	done  bool
}

func (c *changedFirst) Transact(ctx context.Context, ops ...store.Op) error {
	if !c.done && len(ops) > 0 && ops[0].Kind == store.OpDelete && ops[0].Item.Key() == c.key {
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
	racing := &changedFirst{Store: st, svc: svc, key: datamodel.SubscriptionKey(preparingVendor, prep.View.ID), types: []string{event.ProductUpdated}}
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
