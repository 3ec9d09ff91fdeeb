package extorder_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/inventory"
)

const vendorID = dt.VendorID

type fixture struct {
	dt.Env
	svc     extorder.Service
	conns   connection.Service
	inv     inventory.Service
	item    string // a simple product's item with on_hand 10
	product string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := dt.New(t, 2026, 7, 5, 13, 0, 0)
	f := &fixture{Env: e, svc: extorder.Service{Store: e.Store, Clock: e.Clock, Conflicts: conflict.Service{Store: e.Store, Clock: e.Clock}}, conns: connection.Service{Store: e.Store, Clock: e.Clock},
		inv: inventory.Service{Store: e.Store, Clock: e.Clock, Authority: connection.Masters{Store: e.Store}, Catalog: catalog.Service{Store: e.Store, Clock: e.Clock}}}
	p, item := e.Stocked(t, "mug", 10)
	f.product, f.item = p.ID, item
	return f
}

// connection creates an active connection with order ingress and the
// given fulfillment.
func (f *fixture) connection(t *testing.T, ingress, fulfillment string) string {
	t.Helper()
	r := dt.Destination()
	r.OrderIngress, r.ExternalOrderFulfillment = ingress, fulfillment
	return f.Connection(t, "marketplace_a", r)
}

func (f *fixture) importOrder(t *testing.T, connID, externalID string, lines ...extorder.Line) (extorder.View, bool, error) {
	t.Helper()
	p, err := f.svc.PrepareImport(context.Background(), vendorID, extorder.ImportInput{ConnectionID: connID, ExternalOrderID: externalID, Lines: lines})
	if err != nil || len(p.Ops) == 0 {
		return p.View, false, err
	}
	v, err := dt.Run(f.Env, p, nil)
	return v, err == nil, err
}

func (f *fixture) move(t *testing.T, id, action string, version int64) (extorder.View, error) {
	t.Helper()
	p, err := f.svc.PrepareTransition(context.Background(), vendorID, id, action, version)
	return dt.Run(f.Env, p, err)
}

func (f *fixture) buckets(t *testing.T, productID string) [3]int64 {
	t.Helper()
	it, err := f.Store.Get(context.Background(), datamodel.ProductKey(vendorID, productID))
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
