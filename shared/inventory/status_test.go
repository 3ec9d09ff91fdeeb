package inventory_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/inventory"
)

// TestStatusThresholds: out_of_stock at 0 available, low_stock from 1 to 5,
// in_stock above 5 (docs/decisions.md, "Inventory rules the contract left
// open").
func TestStatusThresholds(t *testing.T) {
	for available, want := range map[int64]string{
		-3: inventory.OutOfStock, 0: inventory.OutOfStock,
		1: inventory.LowStock, 5: inventory.LowStock,
		6: inventory.InStock, 1_000_000_000: inventory.InStock,
	} {
		if got := inventory.Status(available); got != want {
			t.Errorf("Status(%d) = %s, want %s", available, got, want)
		}
	}
}

// TestBucketsOfFailsClosed: an item with any bucket missing cannot be read.
func TestBucketsOfFailsClosed(t *testing.T) {
	full := map[string]int64{"oh_001": 4, "rs_001": 1, "av_001": 3, "iv_001": 7}
	b, ok := inventory.BucketsOf(full, 1)
	if !ok || b != (inventory.Buckets{OnHand: 4, Reserved: 1, Available: 3, Version: 7}) {
		t.Fatalf("BucketsOf = %+v %v", b, ok)
	}
	for _, drop := range []string{"oh_001", "rs_001", "av_001", "iv_001"} {
		m := map[string]int64{}
		for k, v := range full {
			if k != drop {
				m[k] = v
			}
		}
		if _, ok := inventory.BucketsOf(m, 1); ok {
			t.Errorf("without %s the buckets read as present", drop)
		}
	}
	if _, ok := inventory.BucketsOf(full, 2); ok {
		t.Error("another item's buckets read as present")
	}
}
