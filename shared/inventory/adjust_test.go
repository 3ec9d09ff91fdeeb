package inventory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
)

// TestAdjustSetsOnHandKeepingReservations: the adjustment sets on_hand
// without overwriting reservations; available follows; version moves by one.
func TestAdjustSetsOnHandKeepingReservations(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)
	got, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 10, ExpectedVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got.OnHand != 10 || got.Available != 10 || got.Version != 2 || got.Status != inventory.InStock {
		t.Fatalf("after target 10: %+v", got)
	}
	f.hold(t, p.ID, 0, 4) // version 3, reserved 4
	got, err = f.adjust(t, id, inventory.Adjustment{TargetOnHand: 7, ExpectedVersion: 3})
	if err != nil {
		t.Fatal(err)
	}
	read, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatal(err)
	}
	want := inventory.Item{OnHand: 7, Reserved: 4, Available: 3, Version: 4, Status: inventory.LowStock}
	for _, it := range []inventory.Item{got, read} {
		if it.OnHand != want.OnHand || it.Reserved != want.Reserved || it.Available != want.Available || it.Version != want.Version || it.Status != want.Status {
			t.Fatalf("after target 7 with 4 reserved: %+v, want %+v", it, want)
		}
	}
}

// TestAdjustFloor: a target below reserved is a 409 that changes nothing;
// a target equal to reserved is allowed.
func TestAdjustFloor(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)
	if _, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 5, ExpectedVersion: 1}); err != nil {
		t.Fatal(err)
	}
	f.hold(t, p.ID, 0, 3) // version 3
	_, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 2, ExpectedVersion: 3})
	dt.WantCode(t, err, errs.CodeBelowReserved)
	// Decided before the write, not only by the write's condition.
	prep, err := f.svc.PrepareAdjust(context.Background(), vendorID, id, inventory.Adjustment{TargetOnHand: 2, ExpectedVersion: 3})
	ops := prep.Ops
	dt.WantCode(t, err, errs.CodeBelowReserved)
	if len(ops) != 0 {
		t.Fatalf("a refused adjustment prepared %d operations", len(ops))
	}
	if it, _ := f.svc.Get(context.Background(), vendorID, id); it.OnHand != 5 || it.Version != 3 {
		t.Fatalf("a refused adjustment changed the item: %+v", it)
	}
	got, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 3, ExpectedVersion: 3})
	if err != nil {
		t.Fatalf("target equal to reserved: %v", err)
	}
	if got.Available != 0 || got.Status != inventory.OutOfStock {
		t.Fatalf("all stock held: %+v", got)
	}
}

// TestAdjustStaleVersion: a stale expected_version is 409
// INVENTORY_VERSION_CONFLICT.
func TestAdjustStaleVersion(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)
	for _, v := range []int64{0, 2} {
		_, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: v})
		dt.WantCode(t, err, errs.CodeInventoryVersion)
	}
}

// TestAdjustLostRaces: checks made before the write are made again inside
// it. Two adjustments prepared at one version: the second loses with a
// version conflict. A hold landing between prepare and write: the floor
// holds.
func TestAdjustLostRaces(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)

	a, err := f.svc.PrepareAdjust(ctx, vendorID, id, inventory.Adjustment{TargetOnHand: 4, ExpectedVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.svc.PrepareAdjust(ctx, vendorID, id, inventory.Adjustment{TargetOnHand: 9, ExpectedVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Store.Transact(ctx, a.Ops...); err != nil {
		t.Fatal(err)
	}
	err = f.Store.Transact(ctx, b.Ops...)
	ce, ok := store.AsCondition(err)
	if !ok {
		t.Fatalf("second write at a stale version: %v", err)
	}
	dt.WantCode(t, b.Explain(ce), errs.CodeInventoryVersion)

	// Version 2, on_hand 4. Prepare a target of 1, then 3 units get held.
	prep, err := f.svc.PrepareAdjust(ctx, vendorID, id, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 2})
	ops, conflict := prep.Ops, prep.Explain
	if err != nil {
		t.Fatal(err)
	}
	// The hold lands without moving the version, so only the floor bound can stop the write.
	if err := f.Store.Transact(ctx, store.Add(datamodel.ProductKey(vendorID, p.ID), map[string]int64{datamodel.ReservedAttr(0): 3, datamodel.AvailableAttr(0): -3}, 0, store.Cond{Exists: true})); err != nil {
		t.Fatal(err)
	}
	err = f.Store.Transact(ctx, ops...)
	ce, ok = store.AsCondition(err)
	if !ok {
		t.Fatalf("an adjustment under a fresh hold was written: %v", err)
	}
	dt.WantCode(t, conflict(ce), errs.CodeBelowReserved)
	if it, _ := f.svc.Get(ctx, vendorID, id); it.OnHand != 4 || it.Reserved != 3 {
		t.Fatalf("item after the lost race: %+v", it)
	}
}

// TestAdjustRetiredVariation: a retired variation's item keeps zero stock.
func TestAdjustRetiredVariation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p := f.product(t, "shirt", "S", "M")
	body := `{"kind":"variable","name":"P shirt","slug":"shirt","description":"d","price":100,"category":"c","subcategory":"s",
		"image_urls":["https://img.example/shirt.webp"],"options":{"size":["S","M"]},"features":[],"related_product_ids":[],"weight_kg":1,
		"expected_revision":1,"variations":[{"id":"` + p.Variations[0].ID + `","status":"retired","options":{"size":"S"},"price":100,"sku":"SKU-S"},
		{"id":"` + p.Variations[1].ID + `","status":"active","options":{"size":"M"},"price":100,"sku":"SKU-M"}]}`
	in, err := catalog.ParseUpdate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.catalog.Update(ctx, vendorID, p.ID, in); err != nil {
		t.Fatal(err)
	}
	retired := catalog.InventoryItemID(p.ID, p.Variations[0].Seq)
	_, err = f.adjust(t, retired, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 1})
	dt.WantCode(t, err, errs.CodeInventoryItemRetired)
	if _, err := f.svc.Get(ctx, vendorID, retired); err != nil {
		t.Fatalf("a retired variation's item still reads: %v", err)
	}
	if _, err := f.adjust(t, catalog.InventoryItemID(p.ID, p.Variations[1].Seq), inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 1}); err != nil {
		t.Fatalf("the active variation: %v", err)
	}
}

// TestAdjustAuthority: only the Stock Pool's current master may adjust; null
// stands for the service.
func TestAdjustAuthority(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)
	conn := "conn_store"
	_, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 1, Authority: &conn})
	dt.WantCode(t, err, errs.CodeAuthorityMismatch)
	f.auth.m = catalog.Masters{Inventory: &conn}
	_, err = f.adjust(t, id, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 1})
	dt.WantCode(t, err, errs.CodeAuthorityMismatch)
	if _, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: 1, ExpectedVersion: 1, Authority: &conn}); err != nil {
		t.Fatalf("the master's adjustment: %v", err)
	}
}

// TestParseAdjustment: the adjustment body's constraints.
func TestParseAdjustment(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"target_on_hand":0,"expected_version":0}`:                                                              true,
		`{"target_on_hand":1000000000,"expected_version":3}`:                                                     true,
		`{"target_on_hand":1000000001,"expected_version":3}`:                                                     false,
		`{"target_on_hand":-1,"expected_version":3}`:                                                             false,
		`{"target_on_hand":1.5,"expected_version":3}`:                                                            false,
		`{"expected_version":3}`:                                                                                 false,
		`{"target_on_hand":1}`:                                                                                   false,
		`{"target_on_hand":1,"expected_version":-1}`:                                                             false,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":null}`:                               true,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":"conn_a:b"}`:                         true,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":""}`:                                 false,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":"a/b"}`:                              false,
		`{"target_on_hand":1,"expected_version":1,"reserved":0}`:                                                 false,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":"` + strings.Repeat("c", 161) + `"}`: false,
	} {
		_, err := inventory.ParseAdjustment([]byte(body))
		if ok != (err == nil) {
			t.Errorf("%s: got %v", body, err)
		}
		if err != nil && errs.As(err).Kind != errs.Invalid {
			t.Errorf("%s: kind %v, want Invalid", body, errs.As(err).Kind)
		}
	}
}
