package reservation_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

const vendorID = "ven_1"

type fixture struct {
	svc     reservation.Service
	conns   connection.Service
	catalog catalog.Service
	inv     inventory.Service
	store   *sqlite.Store
	clock   *clock.Fake
	product catalog.Product
	item    string // the product's inventory item, on_hand 10
	conn    string // an active connection that sources nothing
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	c := clocktest.Fake(2026, 6, 4, 12, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	auth := connection.Masters{Store: st}
	f := &fixture{
		svc: reservation.Service{Store: st, Clock: c}, conns: connection.Service{Store: st, Clock: c},
		catalog: catalog.Service{Store: st, Clock: c, Authority: auth}, inv: inventory.Service{Store: st, Clock: c, Authority: auth},
		store: st, clock: c,
	}
	in, err := catalog.ParseCreate([]byte(`{"kind":"simple","name":"Mug","slug":"mug","description":"d","price":100,"category":"c","subcategory":"s",
		"image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":1}`))
	if err != nil {
		t.Fatal(err)
	}
	prep, err := f.catalog.PrepareCreate(ctx, vendorID, in)
	p, ops := prep.View, prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, ops)
	f.product, f.item = p, catalog.InventoryItemID(p.ID, 0)
	adjusted, err := f.inv.PrepareAdjust(ctx, vendorID, f.item, inventory.Adjustment{TargetOnHand: 10, ExpectedVersion: 1})
	ops = adjusted.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.apply(t, ops)
	f.conn = f.connection(t, "marketplace_a", connection.Destination)
	return f
}

// connection creates an active connection with the given inventory role.
func (f *fixture) connection(t *testing.T, provider, inventoryRole string) string {
	t.Helper()
	prep, err := f.conns.PrepareCreate(context.Background(), vendorID, connection.CreateInput{
		Provider: provider, ExternalAccountID: "acct", DisplayName: "Shop",
		Roles: connection.Roles{Catalog: connection.Destination, BasePrice: connection.Destination, Inventory: inventoryRole,
			OrderIngress: connection.Enabled, ExternalOrderFulfillment: connection.Moku}})
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

// run applies a prepared move as the HTTP layer does, explaining a lost race.
func (f *fixture) run(p store.Prepared[reservation.View], err error) (reservation.View, error) {
	if err != nil {
		return reservation.View{}, err
	}
	if err := f.store.Transact(context.Background(), p.Ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			return reservation.View{}, p.Explain(ce)
		}
		return reservation.View{}, err
	}
	return p.View, nil
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
	items, err := f.store.GetMany(ctx, []store.Key{datamodel.ProductKey(vendorID, f.product.ID), datamodel.ConnectionKey(vendorID, f.conn), datamodel.AuthorityKey(vendorID)})
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

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}
