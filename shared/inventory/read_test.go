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

// TestGetNamesItsProductAndVariation: an item carries the default location
// and pool, its product, and for a variation its id, options and sku.
func TestGetNamesItsProductAndVariation(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	p := f.product(t, "shirt", "S", "M")
	v := p.Variations[1]
	it, err := f.svc.Get(ctx, vendorID, catalog.InventoryItemID(p.ID, v.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if it.LocationID != "default" || it.StockPoolID != "default" || it.ProductID != p.ID || it.ProductName != "P shirt" {
		t.Fatalf("item %+v", it)
	}
	if it.VariationID == nil || *it.VariationID != v.ID || it.VariationOptions["size"] != "M" || it.SKU == nil || *it.SKU != "SKU-M" {
		t.Fatalf("variation fields %+v", it)
	}
	if it.OnHand != 0 || it.Reserved != 0 || it.Available != 0 || it.Version != 1 || it.Status != inventory.OutOfStock {
		t.Fatalf("a new item's buckets %+v, want zero at version 1", it)
	}
	s := f.product(t, "mug")
	it, err = f.svc.Get(ctx, vendorID, catalog.InventoryItemID(s.ID, 0))
	if err != nil {
		t.Fatal(err)
	}
	if it.VariationID != nil || it.VariationOptions == nil || len(it.VariationOptions) != 0 {
		t.Fatalf("simple product's item: variation_id %v options %v, want null and empty", it.VariationID, it.VariationOptions)
	}
}

// TestGetUnknownItems: ids that name no item are 404, whatever their shape.
func TestGetUnknownItems(t *testing.T) {
	f := newFixture(t)
	p := f.product(t, "mug")
	v := f.product(t, "shirt", "S")
	for _, id := range []string{
		catalog.InventoryItemID(p.ID, 1), // a simple product has item 0 only
		catalog.InventoryItemID(v.ID, 0), // a variable product has no item 0
		catalog.InventoryItemID(v.ID, 9), // no such variation
		catalog.InventoryItemID("prd_nope", 0),
		"garbage",
		strings.Repeat("i", 1001),
	} {
		_, err := f.svc.Get(context.Background(), vendorID, id)
		dt.WantCode(t, err, errs.CodeNotFound)
	}
	_, err := f.svc.Get(context.Background(), "ven_other", catalog.InventoryItemID(p.ID, 0))
	dt.WantCode(t, err, errs.CodeNotFound)
}

// TestMissingBucketFailsClosed: a missing authoritative bucket makes reads
// fail closed (503), the single item and the whole list page.
func TestMissingBucketFailsClosed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.product(t, "a")
	p := f.product(t, "b")
	it, err := f.Store.Get(ctx, datamodel.ProductKey(vendorID, p.ID))
	if err != nil {
		t.Fatal(err)
	}
	delete(it.Nums, datamodel.ReservedAttr(0))
	if err := f.Store.Transact(ctx, store.Put(it, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Get(ctx, vendorID, catalog.InventoryItemID(p.ID, 0))
	dt.WantCode(t, err, errs.CodeServiceUnavailable)
	items, err := f.svc.List(ctx, vendorID, "", 50)
	dt.WantCode(t, err, errs.CodeServiceUnavailable)
	if len(items.Items) != 0 {
		t.Fatalf("a failed page returned %d items", len(items.Items))
	}
}

// TestListPages: by product creation, then by item; a page that stops
// inside a product resumes inside it; every item once.
func TestListPages(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	var want []string
	for _, spec := range []struct {
		slug  string
		sizes []string
	}{{"a", nil}, {"b", []string{"S", "M", "L"}}, {"c", nil}, {"d", []string{"S", "M"}}} {
		p := f.product(t, spec.slug, spec.sizes...)
		for _, seq := range p.Seqs() {
			want = append(want, catalog.InventoryItemID(p.ID, seq))
		}
		f.Clock.Advance(1e9) // ids sort by creation time
	}
	for _, limit := range []int{1, 2, 3, 4, 7, 8, 50} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+1 {
				t.Fatalf("limit %d: no end to the pages", limit)
			}
			page, err := f.svc.List(ctx, vendorID, after, limit)
			if err != nil {
				t.Fatalf("limit %d: %v", limit, err)
			}
			if len(page.Items) > limit {
				t.Fatalf("limit %d: page of %d", limit, len(page.Items))
			}
			for _, it := range page.Items {
				got = append(got, it.ID)
			}
			if !page.More {
				break
			}
			after = page.Last
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("limit %d: listed\n%v\nwant\n%v", limit, got, want)
		}
	}
	for _, bad := range []string{"nope", "PRODUCT#x", "PRODUCT#x|abc", "OTHER#x|001"} {
		_, err := f.svc.List(ctx, vendorID, bad, 10)
		dt.WantCode(t, err, errs.CodeInvalidCursor)
	}
}
