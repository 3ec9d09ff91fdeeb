package inventory_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
)

// TestConcurrentAdjustmentsAtOneVersion: of many adjustments naming the
// same expected_version, exactly one is applied; the others are version
// conflicts, never a lost update.
func TestConcurrentAdjustmentsAtOneVersion(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	id := catalog.InventoryItemID(p.ID, 0)
	const writers = 12
	applied := dt.Succeeded(t, dt.Race(writers, func(i int) error {
		_, err := f.adjust(t, id, inventory.Adjustment{TargetOnHand: int64(100 + i), ExpectedVersion: 1})
		return err
	}), errs.CodeInventoryVersion)
	if len(applied) != 1 {
		t.Fatalf("writers %v applied at version 1, want exactly one", applied)
	}
	won := applied[0]
	it, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatal(err)
	}
	if it.OnHand != int64(100+won) || it.Version != 2 {
		t.Fatalf("item %+v, want the winner's %d at version 2", it, 100+won)
	}
}
