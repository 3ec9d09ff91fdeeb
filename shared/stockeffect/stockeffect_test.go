package stockeffect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/store/sqlite/sqlitetest"
)

const vendorID = "ven_1"

func openStore(t *testing.T) *sqlite.Store {
	return sqlitetest.Open(t, clocktest.Fake(2026, 11, 9, 17, 0, 0).Now)
}

// TestOpComputesAfter: after = before + deltas, and the effect is named by
// the item and the version the movement brought it to.
func TestOpComputesAfter(t *testing.T) {
	now := clocktest.Date(2026, 11, 9, 17, 0, 0)
	ctx := ids.WithRequestID(context.Background(), "req_1")
	id := "res_1"
	for _, c := range []struct {
		name      string
		before    stockeffect.Buckets
		dOn, dRes int64
		wantAfter stockeffect.Buckets
	}{
		{"adjust up", stockeffect.Buckets{OnHand: 3, Reserved: 1}, 7, 0, stockeffect.Buckets{OnHand: 10, Reserved: 1}},
		{"reserve", stockeffect.Buckets{OnHand: 10, Reserved: 1}, 0, 4, stockeffect.Buckets{OnHand: 10, Reserved: 5}},
		{"commit", stockeffect.Buckets{OnHand: 10, Reserved: 5}, -4, -4, stockeffect.Buckets{OnHand: 6, Reserved: 1}},
		{"release", stockeffect.Buckets{OnHand: 6, Reserved: 1}, 0, -1, stockeffect.Buckets{OnHand: 6, Reserved: 0}},
	} {
		e, op, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: vendorID, ProductID: "prd_p", InventoryItemID: "inv_p_000",
			Before: c.before, OnHandDelta: c.dOn, ReservedDelta: c.dRes, Version: 8,
			Cause: stockeffect.Cause{Type: stockeffect.CauseReservation, ID: &id, Action: stockeffect.ActionReserved}})
		if err != nil {
			t.Fatal(err)
		}
		if e.After != c.wantAfter || e.Before != c.before || e.OnHandDelta != c.dOn || e.ReservedDelta != c.dRes {
			t.Errorf("%s: effect %+v, want after %+v", c.name, e, c.wantAfter)
		}
		if e.ID != stockeffect.ID("inv_p_000", 8) || e.Version != 8 || !e.CreatedAt.Equal(now) {
			t.Errorf("%s: id %s version %d", c.name, e.ID, e.Version)
		}
		if e.RequestID == nil || *e.RequestID != "req_1" {
			t.Errorf("%s: request id %v, want the context's", c.name, e.RequestID)
		}
		if op.Kind != store.OpPut || !op.Cond.Absent || op.Item.Key() != datamodel.StockEffectKey(vendorID, "inv_p_000", 8) {
			t.Errorf("%s: op %+v", c.name, op)
		}
	}
	e, _, _ := stockeffect.Op(context.Background(), now, stockeffect.Movement{VendorID: vendorID, InventoryItemID: "inv_p_000", Version: 2})
	if e.RequestID != nil {
		t.Errorf("system work carries request id %v", *e.RequestID)
	}
}

// TestOneEffectPerMovement: a second effect for the same item and version
// cannot be written, so a replayed or raced movement records nothing twice.
func TestOneEffectPerMovement(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := clocktest.Date(2026, 11, 9, 17, 0, 0)
	m := stockeffect.Movement{VendorID: vendorID, ProductID: "prd_p", InventoryItemID: "inv_p_000", OnHandDelta: 5, Version: 2,
		Cause: stockeffect.Cause{Type: stockeffect.CauseAdjustment, Action: stockeffect.ActionAdjusted}}
	_, op, _ := stockeffect.Op(ctx, now, m)
	if err := st.Transact(ctx, op); err != nil {
		t.Fatal(err)
	}
	m.OnHandDelta = 6
	_, op, _ = stockeffect.Op(ctx, now, m)
	if err := st.Transact(ctx, op); !store.IsCondition(err) {
		t.Fatalf("a second effect at version 2: %v", err)
	}
	e, err := stockeffect.Service{Store: st}.Get(ctx, vendorID, stockeffect.ID("inv_p_000", 2))
	if err != nil || e.OnHandDelta != 5 || e.Cause.ID != nil || e.Cause.Type != stockeffect.CauseAdjustment {
		t.Fatalf("the first effect: %+v %v", e, err)
	}
}

// TestReads: by item, oldest first within an item; narrowed to one item;
// paged; unknown and malformed ids are 404.
func TestReads(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	now := clocktest.Date(2026, 11, 9, 17, 0, 0)
	write := func(item string, version int64) {
		_, op, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: vendorID, InventoryItemID: item, OnHandDelta: 1, Version: version})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Transact(ctx, op); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []int64{10, 2, 3} {
		write("inv_a_000", v)
	}
	write("inv_a_001", 2)
	write("inv_b_000", 2)
	svc := stockeffect.Service{Store: st}

	got := dt.Walk(t, func(after string) (store.PageOf[stockeffect.Effect], error) {
		return svc.List(ctx, vendorID, "inv_a_000", after, 2)
	}, func(e stockeffect.Effect) string { return e.ID })
	want := []string{stockeffect.ID("inv_a_000", 2), stockeffect.ID("inv_a_000", 3), stockeffect.ID("inv_a_000", 10)}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("one item's effects %v, want %v", got, want)
	}
	all, err := svc.List(ctx, vendorID, "", "", 50)
	if err != nil || len(all.Items) != 5 || all.More {
		t.Fatalf("all effects: %d more %v err %v", len(all.Items), all.More, err)
	}
	if _, err := svc.List(ctx, vendorID, "inv_a_001", datamodel.StockEffectKey(vendorID, "inv_a_000", 2).SK, 10); !errs.Is(err, errs.CodeInvalidCursor) {
		t.Fatalf("another item's cursor: %v", err)
	}
	for _, id := range []string{"", "eff_a_000_2", "eff_a_000_00000000000x", "inv_a_000", "eff__000000000002", stockeffect.ID("inv_a_000", 4), stockeffect.ID("inv_c_000", 2)} {
		if _, err := svc.Get(ctx, vendorID, id); !errs.Is(err, errs.CodeNotFound) {
			t.Errorf("get %q: %v", id, err)
		}
	}
	if _, err := svc.Get(ctx, "ven_2", stockeffect.ID("inv_a_000", 2)); !errs.Is(err, errs.CodeNotFound) {
		t.Errorf("another vendor's effect: %v", err)
	}
}
