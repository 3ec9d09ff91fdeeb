package reservation_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

type fixture struct {
	dt.Env
	svc     reservation.Service
	conns   connection.Service
	catalog catalog.Service
	product catalog.Product
	item    string // the product's inventory item, on_hand 10
	conn    string // an active connection that sources nothing
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := dt.New(t, 2026, 6, 4, 12, 0, 0)
	f := &fixture{Env: e, svc: reservation.Service{Store: e.Store, Clock: e.Clock}, conns: connection.Service{Store: e.Store, Clock: e.Clock},
		catalog: catalog.Service{Store: e.Store, Clock: e.Clock, Authority: connection.Masters{Store: e.Store}}}
	f.product, f.item = e.Stocked(t, "mug", 10)
	f.conn = f.connection(t, "marketplace_a", connection.Destination)
	return f
}

// connection creates an active connection with the given inventory role.
func (f *fixture) connection(t *testing.T, provider, inventoryRole string) string {
	t.Helper()
	r := dt.Destination()
	r.Inventory = inventoryRole
	return f.Connection(t, provider, r)
}

// run applies a prepared move as the HTTP layer does, explaining a lost race.
func (f *fixture) run(p store.Prepared[reservation.View], err error) (reservation.View, error) {
	return dt.Run(f.Env, p, err)
}

func (f *fixture) create(quantity int64) (reservation.View, error) {
	return f.run(f.svc.PrepareCreate(context.Background(), vendorID, reservation.CreateInput{
		ConnectionID: f.conn, InventoryItemID: f.item, Quantity: quantity, Hold: reservation.DefaultHold}))
}

func (f *fixture) mustCreate(t *testing.T, quantity int64) reservation.View {
	t.Helper()
	v, err := f.create(quantity)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return v
}

func (f *fixture) commit(id string, version int64) (reservation.View, error) {
	return f.run(f.svc.PrepareCommit(context.Background(), vendorID, id, reservation.VersionInput{ExpectedVersion: version}))
}

func (f *fixture) release(id string, version int64) (reservation.View, error) {
	return f.run(f.svc.PrepareRelease(context.Background(), vendorID, id, reservation.VersionInput{ExpectedVersion: version}))
}

func (f *fixture) renew(id string, version int64) (reservation.View, error) {
	return f.run(f.svc.PrepareRenew(context.Background(), vendorID, id, reservation.RenewInput{ExpectedVersion: version, Hold: reservation.DefaultHold}))
}

// counts are the buckets and the counters every move keeps exact.
type counts struct {
	inventory.Buckets
	ConnReservations, ServiceReservations int64
}

func (f *fixture) counts(t *testing.T) counts {
	t.Helper()
	ctx := context.Background()
	items, err := f.Store.GetMany(ctx, []store.Key{datamodel.ProductKey(vendorID, f.product.ID), datamodel.ConnectionKey(vendorID, f.conn), datamodel.AuthorityKey(vendorID)})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := inventory.BucketsOf(items[0].Nums, 0)
	if !ok {
		t.Fatal("buckets missing")
	}
	return counts{Buckets: b, ConnReservations: items[1].Nums[datamodel.ActiveReservationsAttr], ServiceReservations: items[2].Nums[datamodel.ServiceReservationsAttr]}
}

func (c counts) stock() [3]int64 { return [3]int64{c.OnHand, c.Reserved, c.Available} }
