package inventory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

// masters is an authority a test can hand to a connection.
type masters struct{ m catalog.Masters }

func (a *masters) Masters(context.Context, string) (catalog.Masters, error) { return a.m, nil }

type fixture struct {
	dt.Env
	svc     inventory.Service
	catalog catalog.Service
	auth    *masters
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	e := dt.New(t, 2026, 4, 2, 10, 0, 0)
	a := &masters{}
	return fixture{Env: e, auth: a,
		svc:     inventory.Service{Store: e.Store, Clock: e.Clock, Authority: a, Catalog: catalog.Service{Store: e.Store, Clock: e.Clock}},
		catalog: catalog.Service{Store: e.Store, Clock: e.Clock, Authority: a}}
}

func (f fixture) product(t *testing.T, slug string, sizes ...string) catalog.Product {
	t.Helper()
	kind, opts, vars := "simple", "{}", "[]"
	if len(sizes) > 0 {
		kind, opts, vars = "variable", `{"size":[`, "["
		for i, s := range sizes {
			if i > 0 {
				opts += ","
				vars += ","
			}
			opts += fmt.Sprintf("%q", s)
			vars += fmt.Sprintf(`{"options":{"size":%q},"price":100,"sku":"SKU-%s"}`, s, s)
		}
		opts += "]}"
		vars += "]"
	}
	body := fmt.Sprintf(`{"kind":%q,"name":"P %s","slug":%q,"description":"d","price":100,"category":"c","subcategory":"s",
		"image_urls":["https://img.example/%s.webp"],"options":%s,"features":[],"related_product_ids":[],"weight_kg":1,"variations":%s}`,
		kind, slug, slug, slug, opts, vars)
	return f.Product(t, f.auth, body)
}

// adjust prepares and applies an adjustment as the HTTP layer does.
func (f fixture) adjust(t *testing.T, itemID string, a inventory.Adjustment) (inventory.Item, error) {
	t.Helper()
	p, err := f.svc.PrepareAdjust(context.Background(), vendorID, itemID, a)
	return dt.Run(f.Env, p, err)
}

// hold moves n units into reserved on an item, as a reservation does.
func (f fixture) hold(t *testing.T, productID string, seq int, n int64) {
	t.Helper()
	err := f.Store.Transact(context.Background(), store.Add(datamodel.ProductKey(vendorID, productID), map[string]int64{
		datamodel.ReservedAttr(seq): n, datamodel.AvailableAttr(seq): -n, datamodel.ItemVersionAttr(seq): 1,
	}, 0, store.Cond{Exists: true}))
	if err != nil {
		t.Fatal(err)
	}
}
