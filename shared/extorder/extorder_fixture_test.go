package extorder_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

const vendorID = "ven_1"

type fixture struct {
	svc     extorder.Service
	conns   connection.Service
	catalog catalog.Service
	inv     inventory.Service
	store   *sqlite.Store
	clock   *clock.Fake
	item    string // a simple product's item with on_hand 10
	product string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	c := clocktest.Fake(2026, 7, 5, 13, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	auth := connection.Masters{Store: st}
	f := &fixture{svc: extorder.Service{Store: st, Clock: c}, conns: connection.Service{Store: st, Clock: c},
		catalog: catalog.Service{Store: st, Clock: c, Authority: auth}, inv: inventory.Service{Store: st, Clock: c, Authority: auth},
		store: st, clock: c}
	f.product, f.item = f.stocked(t, "mug", 10)
	return f
}

// stocked creates a simple product with onHand units.
func (f *fixture) stocked(t *testing.T, slug string, onHand int64) (productID, itemID string) {
	t.Helper()
	ctx := context.Background()
	in, err := catalog.ParseCreate([]byte(fmt.Sprintf(`{"kind":"simple","name":"P","slug":%q,"description":"d","price":100,"category":"c","subcategory":"s",
		"image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":1}`, slug)))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := f.catalog.PrepareCreate(ctx, vendorID, in)
	p, ops := prep.View, prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, ops)
	item := catalog.InventoryItemID(p.ID, 0)
	adjusted, err := f.inv.PrepareAdjust(ctx, vendorID, item, inventory.Adjustment{TargetOnHand: onHand, ExpectedVersion: 1})
	ops = adjusted.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, ops)
	return p.ID, item
}

// connection creates an active connection with order ingress and the
// given fulfillment.
func (f *fixture) connection(t *testing.T, ingress, fulfillment string) string {
	t.Helper()
	prep, err := f.conns.PrepareCreate(context.Background(), vendorID, connection.CreateInput{
		Provider: "marketplace_a", ExternalAccountID: "acct", DisplayName: "Shop",
		Roles: connection.Roles{Catalog: connection.Destination, BasePrice: connection.Destination, Inventory: connection.Destination,
			OrderIngress: ingress, ExternalOrderFulfillment: fulfillment}})
	v, ops := prep.View, prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, ops)
	return v.ID
}

func (f *fixture) apply(t *testing.T, ops []store.Op) {
	t.Helper()
	if err := f.store.Transact(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) importOrder(t *testing.T, connID, externalID string, lines ...extorder.Line) (extorder.View, bool, error) {
	t.Helper()
	p, err := f.svc.PrepareImport(context.Background(), vendorID, extorder.ImportInput{ConnectionID: connID, ExternalOrderID: externalID, Lines: lines})
	if err != nil || len(p.Ops) == 0 {
		return p.View, false, err
	}
	if err := f.store.Transact(context.Background(), p.Ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			return extorder.View{}, false, p.Explain(ce)
		}
		return extorder.View{}, false, err
	}
	return p.View, true, nil
}

func (f *fixture) move(t *testing.T, id, action string, version int64) (extorder.View, error) {
	t.Helper()
	prep, err := f.svc.PrepareTransition(context.Background(), vendorID, id, action, version)
	v, ops, explain := prep.View, prep.Ops, prep.Explain
	if err != nil {
		return extorder.View{}, err
	}
	if err := f.store.Transact(context.Background(), ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			return extorder.View{}, explain(ce)
		}
		return extorder.View{}, err
	}
	return v, nil
}

func (f *fixture) buckets(t *testing.T, productID string) [3]int64 {
	t.Helper()
	it, err := f.store.Get(context.Background(), datamodel.ProductKey(vendorID, productID))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := inventory.BucketsOf(it.Nums, 0)
	return [3]int64{b.OnHand, b.Reserved, b.Available}
}

func (f *fixture) counters(t *testing.T, connID string) connection.Counters {
	t.Helper()
	c, _, _, err := f.conns.Get(context.Background(), vendorID, connID)
	if err != nil {
		t.Fatal(err)
	}
	return c.Counters
}

func line(id, item string, q int64) extorder.Line {
	return extorder.Line{LineID: id, InventoryItemID: item, Quantity: q, UnitPrice: 100}
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}
