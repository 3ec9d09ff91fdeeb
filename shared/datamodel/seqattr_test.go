package datamodel_test

import (
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
)

// TestAttrNamesKeepTheirFormat: the bucket attribute names and rate keys
// are spelled as they always were (stored items are found by them).
func TestAttrNamesKeepTheirFormat(t *testing.T) {
	for seq := -12; seq <= 1200; seq++ {
		for _, c := range []struct {
			got    string
			prefix string
		}{
			{datamodel.OnHandAttr(seq), "oh_"}, {datamodel.ReservedAttr(seq), "rs_"},
			{datamodel.AvailableAttr(seq), "av_"}, {datamodel.ItemVersionAttr(seq), "iv_"},
		} {
			if want := fmt.Sprintf("%s%03d", c.prefix, seq); c.got != want {
				t.Fatalf("seq %d: %q, want %q", seq, c.got, want)
			}
		}
	}
	start := clocktest.Date(2026, 3, 1, 12, 0, 0)
	if got, want := datamodel.RateKey("VENDOR#v", "read", start).SK, fmt.Sprintf("RATE#%s#%d", "read", start.Unix()); got != want {
		t.Fatalf("rate key %q, want %q", got, want)
	}
}
