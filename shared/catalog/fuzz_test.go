package catalog

import "testing"

// FuzzInventoryItemID drives the parse of an inventory item id from a
// path: whatever it accepts names a valid product and round-trips.
func FuzzInventoryItemID(f *testing.F) {
	for _, seed := range []string{"inv_abcdefghijklmnopqrstuvwxyz_000", "inv__000", "inv_x_-01", "inv_x_1", "inv_a_b_999", "prd_x", "inv_" + "abcdefghijklmnopqrstuvwxyz" + "_+12"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		pid, seq, ok := ParseInventoryItemID(id)
		if !ok {
			return
		}
		if !ValidProductID(pid) || seq < 0 || seq > 999 || InventoryItemID(pid, seq) != id {
			t.Fatalf("ParseInventoryItemID(%q) = %q, %d; back: %q", id, pid, seq, InventoryItemID(pid, seq))
		}
	})
}
