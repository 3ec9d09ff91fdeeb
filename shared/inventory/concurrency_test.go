package inventory_test

import (
	"context"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
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
	var wg sync.WaitGroup
	errsOf := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errsOf[i] = f.adjust(t, id, inventory.Adjustment{TargetOnHand: int64(100 + i), ExpectedVersion: 1})
		}()
	}
	wg.Wait()
	won := -1
	for i, err := range errsOf {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("writers %d and %d both applied at version 1", won, i)
			}
			won = i
		case !errs.Is(err, errs.CodeInventoryVersion):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer won")
	}
	it, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatal(err)
	}
	if it.OnHand != int64(100+won) || it.Version != 2 {
		t.Fatalf("item %+v, want the winner's %d at version 2", it, 100+won)
	}
}
