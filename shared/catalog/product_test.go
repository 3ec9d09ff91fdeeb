package catalog_test

import (
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
)

// TestDiscount: the percentage off original_price, 0..100, rounded down,
// and 0 without an original price.
func TestDiscount(t *testing.T) {
	for _, c := range []struct {
		price    int64
		original *int64
		want     int64
	}{
		{100, nil, 0},
		{100, ptr[int64](200), 50},
		{0, ptr[int64](1), 100},
		{2, ptr[int64](3), 33},
		{100, ptr[int64](100), 0},
		{150, ptr[int64](100), 0},
	} {
		if got := catalog.Discount(c.price, c.original); got != c.want {
			t.Errorf("Discount(%d, %v) = %d, want %d", c.price, c.original, got, c.want)
		}
	}
}

// TestInventoryItemIDRoundTrip: an inventory item id names its product and
// item, and nothing else parses.
func TestInventoryItemIDRoundTrip(t *testing.T) {
	for _, seq := range []int{0, 1, 42, 999} {
		id := catalog.InventoryItemID("prd_01HX_abc", seq)
		pid, got, ok := catalog.ParseInventoryItemID(id)
		if !ok || pid != "prd_01HX_abc" || got != seq {
			t.Errorf("%s parsed to %q %d %v", id, pid, got, ok)
		}
	}
	for _, bad := range []string{"", "inv_", "inv_abc", "inv_abc_1", "inv_abc_0001", "inv__001", "prd_abc_001", "inv_a b_001", "inv_abc_-01", "inv_" + strings.Repeat("a", 130) + "_001"} {
		if pid, seq, ok := catalog.ParseInventoryItemID(bad); ok {
			t.Errorf("%q parsed to %q %d", bad, pid, seq)
		}
	}
}

// TestValidProductID: 1..128 characters, the characters ids use.
func TestValidProductID(t *testing.T) {
	for id, want := range map[string]bool{
		"prd_1": true, strings.Repeat("a", 128): true, strings.Repeat("a", 129): false,
		"": false, "prd/1": false, "prd 1": false, "prd_é": false,
	} {
		if got := catalog.ValidProductID(id); got != want {
			t.Errorf("ValidProductID(%q) = %v", id, got)
		}
	}
}

// TestViewNeverNullLists: a view shows lists and options as empty, not null.
func TestViewNeverNullLists(t *testing.T) {
	v := catalog.Product{Kind: catalog.KindSimple, Status: catalog.StatusArchived}.View()
	if v.ImageURLs == nil || v.Features == nil || v.Tags == nil || v.RelatedProductIDs == nil || v.Options == nil || v.Variations == nil {
		t.Errorf("nil list in view: %+v", v)
	}
	if v.CatalogStatus != catalog.CatalogArchived {
		t.Errorf("archived product's catalog_status %s", v.CatalogStatus)
	}
	if s := (catalog.Product{Kind: catalog.KindSimple, Status: catalog.StatusPublished}).CatalogStatus(); s != catalog.CatalogActive {
		t.Errorf("published product's catalog_status %s", s)
	}
}

// TestSeqs: a simple product has one inventory item, a variable product
// one per variation (retired ones included: their items still exist).
func TestSeqs(t *testing.T) {
	if got := (catalog.Product{Kind: catalog.KindSimple}).Seqs(); len(got) != 1 || got[0] != 0 {
		t.Errorf("simple: %v", got)
	}
	p := catalog.Product{Kind: catalog.KindVariable, Variations: []catalog.Variation{{Seq: 1}, {Seq: 2, Status: catalog.VariationRetired}, {Seq: 5}}}
	if got := p.Seqs(); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 5 {
		t.Errorf("variable: %v", got)
	}
	if v, ok := p.VariationBySeq(5); !ok || v.Seq != 5 {
		t.Errorf("VariationBySeq(5) = %+v %v", v, ok)
	}
	if _, ok := p.VariationBySeq(3); ok {
		t.Error("VariationBySeq(3) found a variation")
	}
}
