package inventory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

const vendorID = "ven_1"

// masters is an authority a test can hand to a connection.
type masters struct{ m catalog.Masters }

func (a *masters) Masters(context.Context, string) (catalog.Masters, error) { return a.m, nil }

type fixture struct {
	svc     inventory.Service
	catalog catalog.Service
	store   *sqlite.Store
	clock   *clock.Fake
	auth    *masters
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c := clocktest.Fake(2026, 4, 2, 10, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	a := &masters{}
	return fixture{
		svc:     inventory.Service{Store: st, Clock: c, Authority: a},
		catalog: catalog.Service{Store: st, Clock: c, Authority: a},
		store:   st, clock: c, auth: a,
	}
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
	in, err := catalog.ParseCreate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := f.catalog.PrepareCreate(context.Background(), vendorID, in)
	p, ops := prep.View, prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Transact(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
	return p
}

// adjust prepares and applies an adjustment as the HTTP layer does.
func (f fixture) adjust(t *testing.T, itemID string, a inventory.Adjustment) (inventory.Item, error) {
	t.Helper()
	ctx := context.Background()
	prep, err := f.svc.PrepareAdjust(ctx, vendorID, itemID, a)
	item, ops, conflict := prep.View, prep.Ops, prep.Explain
	if err != nil {
		return inventory.Item{}, err
	}
	if err := f.store.Transact(ctx, ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			return inventory.Item{}, conflict(ce)
		}
		return inventory.Item{}, err
	}
	return item, nil
}

// hold moves n units into reserved on an item, as a reservation does.
func (f fixture) hold(t *testing.T, productID string, seq int, n int64) {
	t.Helper()
	err := f.store.Transact(context.Background(), store.Add(datamodel.ProductKey(vendorID, productID), map[string]int64{
		datamodel.ReservedAttr(seq): n, datamodel.AvailableAttr(seq): -n, datamodel.ItemVersionAttr(seq): 1,
	}, 0, store.Cond{Exists: true}))
	if err != nil {
		t.Fatal(err)
	}
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}
