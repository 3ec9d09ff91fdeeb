package datamodel_test

import (
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
)

// TestItemCountersReadTheNamedAttributes: ItemCounters reads exactly the
// attributes OnHandAttr, ReservedAttr, AvailableAttr and ItemVersionAttr
// name, and reports any of them missing.
func TestItemCountersReadTheNamedAttributes(t *testing.T) {
	for seq := -3; seq <= 1002; seq++ {
		nums := map[string]int64{
			datamodel.OnHandAttr(seq): int64(seq) + 1, datamodel.ReservedAttr(seq): int64(seq) + 2,
			datamodel.AvailableAttr(seq): int64(seq) + 3, datamodel.ItemVersionAttr(seq): int64(seq) + 4,
			datamodel.OnHandAttr(seq + 1): -1,
		}
		oh, rs, av, v, ok := datamodel.ItemCounters(nums, seq)
		if s := int64(seq); !ok || oh != s+1 || rs != s+2 || av != s+3 || v != s+4 {
			t.Fatalf("seq %d: %d %d %d %d %v", seq, oh, rs, av, v, ok)
		}
		for _, name := range []string{datamodel.OnHandAttr(seq), datamodel.ReservedAttr(seq), datamodel.AvailableAttr(seq), datamodel.ItemVersionAttr(seq)} {
			v := nums[name]
			delete(nums, name)
			if _, _, _, _, ok := datamodel.ItemCounters(nums, seq); ok {
				t.Fatalf("seq %d: read without %s", seq, name)
			}
			nums[name] = v
		}
	}
}
