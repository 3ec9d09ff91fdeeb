package httpapi_test

import (
	"context"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
)

// TestEncodedViewsFollowEveryWrite: GET product and inventory list pages
// answer from views kept encoded beside the decoded product, which must
// follow every change of what they show, even a write that keeps the
// item's version: counters added in place (as reservations do) and a
// document rewritten under the same version.
func TestEncodedViewsFollowEveryWrite(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			e := apitest.New(t, apitest.Options{Store: kind})
			ctx := context.Background()
			created := apitest.MustCreate[struct{ Data catalog.View }](t, e, "/vendors/"+e.Vendor.ID+"/products", "views-product", variableProduct("views", 2))
			productPath := "/vendors/" + e.Vendor.ID + "/products/" + created.Data.ID
			key := datamodel.ProductKey(e.Vendor.ID, created.Data.ID)
			list := func() []inventory.Item {
				t.Helper()
				var page struct{ Data []inventory.Item }
				for range 2 { // the second answers from what the first kept
					r := e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/inventory-items", Token: e.Token})
					if r.Status != 200 {
						t.Fatalf("list: %d %s", r.Status, r.Body)
					}
					r.JSON(t, &page)
				}
				return page.Data
			}
			name := func() string {
				t.Helper()
				var got struct{ Data catalog.View }
				for range 2 {
					r := e.Do(apitest.Req{Path: productPath, Token: e.Token})
					if r.Status != 200 {
						t.Fatalf("get product: %d %s", r.Status, r.Body)
					}
					r.JSON(t, &got)
				}
				return got.Data.Name
			}
			if items := list(); len(items) != 2 || items[1].OnHand != 0 || items[1].Reserved != 0 {
				t.Fatalf("first page: %+v", items)
			}
			name()

			// Counters added in place, the version unchanged.
			before, err := e.Store.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Store.Transact(ctx, store.Add(key, map[string]int64{
				datamodel.OnHandAttr(2): 7, datamodel.ReservedAttr(2): 3, datamodel.AvailableAttr(2): 4}, 0, store.Cond{})); err != nil {
				t.Fatal(err)
			}
			after, err := e.Store.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if after.Version != before.Version {
				t.Fatalf("the addition moved the version %d to %d; the test needs it kept", before.Version, after.Version)
			}
			if items := list(); items[1].OnHand != 7 || items[1].Reserved != 3 || items[1].Available != 4 || items[1].Status != inventory.LowStock {
				t.Fatalf("after counters changed in place: %+v", items[1])
			}

			// The document rewritten under the same version.
			data := strings.Replace(string(after.Data), `"Linen shirt"`, `"Rewritten shirt"`, 1)
			if data == string(after.Data) {
				t.Fatalf("no name in %s", after.Data)
			}
			after.Data = []byte(data)
			if err := e.Store.Transact(ctx, store.Put(after, store.IfVersion(after.Version))); err != nil {
				t.Fatal(err)
			}
			if got := name(); got != "Rewritten shirt" {
				t.Fatalf("GET product after the rewrite: %q", got)
			}
			if items := list(); items[0].ProductName != "Rewritten shirt" || items[1].OnHand != 7 {
				t.Fatalf("list after the rewrite: %+v", items)
			}
		})
	}
}
