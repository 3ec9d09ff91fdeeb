package listing_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/listing"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

type fixture struct {
	dt.Env
	svc     listing.Service
	conns   connection.Service
	catalog catalog.Service
	product catalog.Product // variable, sizes S and M
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := dt.New(t, 2026, 10, 8, 16, 0, 0)
	auth := connection.Masters{Store: e.Store}
	f := &fixture{Env: e, svc: listing.Service{Store: e.Store, Clock: e.Clock}, conns: connection.Service{Store: e.Store, Clock: e.Clock},
		catalog: catalog.Service{Store: e.Store, Clock: e.Clock, Authority: auth}}
	f.product = e.Product(t, auth, `{"kind":"variable","name":"Shirt","slug":"shirt","description":"d","price":100,"category":"c","subcategory":"s",
		"image_urls":[],"options":{"size":["S","M"]},"features":[],"related_product_ids":[],"weight_kg":1,
		"variations":[{"options":{"size":"S"},"price":100},{"options":{"size":"M"},"price":100}]}`)
	return f
}

func (f *fixture) connection(t *testing.T, r connection.Roles) string {
	t.Helper()
	return f.Connection(t, "marketplace_a", r)
}

var destination = dt.Destination()

func (f *fixture) run(p store.Prepared[listing.View], err error) (listing.View, error) {
	return dt.Run(f.Env, p, err)
}

func (f *fixture) create(conn string, variation *string, price *int64) (listing.View, error) {
	return f.run(f.svc.PrepareCreate(context.Background(), vendorID, listing.CreateInput{ConnectionID: conn, ProductID: f.product.ID, VariationID: variation, ChannelPrice: price}))
}

func (f *fixture) move(id, action string, version int64) (listing.View, error) {
	return f.run(f.svc.PrepareTransition(context.Background(), vendorID, id, action, version))
}

func (f *fixture) listings(t *testing.T, conn string) int64 {
	t.Helper()
	c, _, _, err := f.conns.Get(context.Background(), vendorID, conn)
	if err != nil {
		t.Fatal(err)
	}
	return c.Counters.ActiveListings
}

// TestTransitions: draft -> active <-> paused -> ended (final); active and
// paused count in active_listing_count.
func TestTransitions(t *testing.T) {
	allowed := map[[2]string]string{
		{listing.StatusDraft, listing.Activate}: listing.StatusActive,
		{listing.StatusActive, listing.Pause}:   listing.StatusPaused,
		{listing.StatusPaused, listing.Resume}:  listing.StatusActive,
		{listing.StatusDraft, listing.End}:      listing.StatusEnded,
		{listing.StatusActive, listing.End}:     listing.StatusEnded,
		{listing.StatusPaused, listing.End}:     listing.StatusEnded,
	}
	path := map[string][]string{
		listing.StatusDraft:  nil,
		listing.StatusActive: {listing.Activate},
		listing.StatusPaused: {listing.Activate, listing.Pause},
		listing.StatusEnded:  {listing.End},
	}
	for from, steps := range path {
		for _, action := range []string{listing.Activate, listing.Pause, listing.Resume, listing.End} {
			t.Run(from+"_"+action, func(t *testing.T) {
				f := newFixture(t)
				conn := f.connection(t, destination)
				l, err := f.create(conn, &f.product.Variations[0].ID, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range steps {
					if l, err = f.move(l.ID, s, l.Version); err != nil {
						t.Fatal(err)
					}
				}
				before := f.listings(t, conn)
				if want := map[bool]int64{true: 1, false: 0}[listing.Counted(from)]; before != want {
					t.Fatalf("a %s listing counts %d, want %d", from, before, want)
				}
				got, err := f.move(l.ID, action, l.Version)
				to, ok := allowed[[2]string{from, action}]
				if !ok {
					dt.WantCode(t, err, errs.CodeListingState)
					if f.listings(t, conn) != before {
						t.Fatal("a refused transition moved the counter")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if got.Status != to || got.Version != l.Version+1 {
					t.Fatalf("%s -> %s v%d, want %s v%d", from, got.Status, got.Version, to, l.Version+1)
				}
				want := map[bool]int64{true: 1, false: 0}[listing.Counted(to)]
				if n := f.listings(t, conn); n != want {
					t.Fatalf("after %s -> %s the connection counts %d listings, want %d", from, to, n, want)
				}
			})
		}
	}
	if listing.Counted(listing.StatusDraft) || listing.Counted(listing.StatusEnded) || !listing.Counted(listing.StatusPaused) || !listing.Counted(listing.StatusActive) {
		t.Error("Counted: active and paused count, draft and ended do not")
	}
}

// TestSyncOf: a connection pushes a domain only when its role there is
// destination.
func TestSyncOf(t *testing.T) {
	for _, c := range []struct {
		r    connection.Roles
		want listing.Sync
	}{
		{destination, listing.Sync{Catalog: true, Price: true, Stock: true}},
		{connection.Roles{Catalog: connection.Source, BasePrice: connection.Disabled, Inventory: connection.Destination}, listing.Sync{Stock: true}},
		{connection.Roles{Catalog: connection.Disabled, BasePrice: connection.Destination, Inventory: connection.Source}, listing.Sync{Price: true}},
	} {
		if got := listing.SyncOf(c.r); got != c.want {
			t.Errorf("SyncOf(%+v) = %+v, want %+v", c.r, got, c.want)
		}
	}
}

// TestCreateRules: one listing per (connection, product, variation); no
// channel price where the connection sources the base price; no listing of
// an archived product, an unknown variation or on a disconnected connection.
func TestCreateRules(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	conn := f.connection(t, destination)
	s, m := f.product.Variations[0].ID, f.product.Variations[1].ID
	price := int64(90)
	l, err := f.create(conn, &s, &price)
	if err != nil {
		t.Fatal(err)
	}
	if l.Status != listing.StatusDraft || l.Version != 1 || l.ChannelPrice == nil || *l.ChannelPrice != 90 || !l.Sync.Price {
		t.Fatalf("new listing %+v", l)
	}
	_, err = f.create(conn, &s, nil)
	dt.WantCode(t, err, errs.CodeListingExists)
	if _, err := f.create(conn, &m, nil); err != nil {
		t.Fatalf("the other variation: %v", err)
	}
	other := f.connection(t, destination)
	if _, err := f.create(other, &s, nil); err != nil {
		t.Fatalf("the same variation on another connection: %v", err)
	}
	nope := "var_nope"
	_, err = f.create(other, &nope, nil)
	dt.WantCode(t, err, errs.CodeNotFound)

	src := destination
	src.BasePrice, src.Catalog = connection.Source, connection.Source
	sourcing := f.connection(t, src)
	_, err = f.create(sourcing, &s, &price)
	dt.WantCode(t, err, errs.CodeChannelPriceRefused)
	sl, err := f.create(sourcing, &s, nil)
	if err != nil {
		t.Fatalf("no price on a base-price source: %v", err)
	}
	_, err = f.run(f.svc.PrepareUpdate(ctx, vendorID, sl.ID, listing.UpdateInput{ExpectedVersion: 1, ChannelPrice: &price, SetChannelPrice: true}))
	dt.WantCode(t, err, errs.CodeChannelPriceRefused)

	gone := f.connection(t, destination)
	if _, err := f.conns.Transition(ctx, vendorID, gone, connection.Disconnect, 1); err != nil {
		t.Fatal(err)
	}
	_, err = f.create(gone, &s, nil)
	dt.WantCode(t, err, errs.CodeConnectionState)
}

// TestArchivedProductListingsCanOnlyEnd: once the product is archived its
// listings can be ended and nothing else.
func TestArchivedProductListingsCanOnlyEnd(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	conn := f.connection(t, destination)
	l, err := f.create(conn, &f.product.Variations[0].ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err = f.move(l.ID, listing.Activate, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.catalog.Transition(ctx, vendorID, f.product.ID, catalog.Archive, catalog.Transition{ExpectedRevision: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = f.move(l.ID, listing.Pause, l.Version)
	dt.WantCode(t, err, errs.CodeProductState)
	price := int64(1)
	_, err = f.run(f.svc.PrepareUpdate(ctx, vendorID, l.ID, listing.UpdateInput{ExpectedVersion: l.Version, ChannelPrice: &price, SetChannelPrice: true}))
	dt.WantCode(t, err, errs.CodeProductState)
	_, err = f.create(conn, &f.product.Variations[1].ID, nil)
	dt.WantCode(t, err, errs.CodeProductState)
	if _, err := f.move(l.ID, listing.End, l.Version); err != nil {
		t.Fatalf("ending a listing of an archived product: %v", err)
	}
	if n := f.listings(t, conn); n != 0 {
		t.Fatalf("after ending: %d counted", n)
	}
}

// TestUpdate: only the fields given change; a stale version or an ended
// listing is refused.
func TestUpdate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	conn := f.connection(t, destination)
	price := int64(80)
	l, err := f.create(conn, nil, &price)
	if err != nil {
		t.Fatal(err)
	}
	ext := "CH-9"
	got, err := f.run(f.svc.PrepareUpdate(ctx, vendorID, l.ID, listing.UpdateInput{ExpectedVersion: 1, ExternalListingID: &ext, SetExternalListingID: true}))
	if err != nil {
		t.Fatal(err)
	}
	if got.ChannelPrice == nil || *got.ChannelPrice != 80 || got.ExternalListingID == nil || *got.ExternalListingID != "CH-9" || got.Version != 2 {
		t.Fatalf("after setting only the external id: %+v", got)
	}
	got, err = f.run(f.svc.PrepareUpdate(ctx, vendorID, l.ID, listing.UpdateInput{ExpectedVersion: 2, SetChannelPrice: true}))
	if err != nil || got.ChannelPrice != nil {
		t.Fatalf("clearing the price: %+v %v", got, err)
	}
	_, err = f.run(f.svc.PrepareUpdate(ctx, vendorID, l.ID, listing.UpdateInput{ExpectedVersion: 2}))
	dt.WantCode(t, err, errs.CodeListingVersion)
	if _, err := f.move(l.ID, listing.End, 3); err != nil {
		t.Fatal(err)
	}
	_, err = f.run(f.svc.PrepareUpdate(ctx, vendorID, l.ID, listing.UpdateInput{ExpectedVersion: 4}))
	dt.WantCode(t, err, errs.CodeListingState)

	in, err := listing.ParseUpdate([]byte(`{"expected_version":1,"channel_price":null}`))
	if err != nil || !in.SetChannelPrice || in.ChannelPrice != nil || in.SetExternalListingID {
		t.Fatalf("parse update with a null price: %+v %v", in, err)
	}
	for _, bad := range []string{`{}`, `{"expected_version":1,"channel_price":-1}`, `{"expected_version":1,"status":"active"}`} {
		if _, err := listing.ParseUpdate([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for body, ok := range map[string]bool{
		`{"connection_id":"conn_a","product_id":"prd_1"}`:                            true,
		`{"connection_id":"conn_a","product_id":"prd_1","variation_id":null}`:        true,
		`{"connection_id":"conn a","product_id":"prd_1"}`:                            false,
		`{"product_id":"prd_1"}`:                                                     false,
		`{"connection_id":"conn_a","product_id":"prd_1","channel_price":1000000001}`: false,
	} {
		if _, err := listing.ParseCreate([]byte(body)); ok != (err == nil) {
			t.Errorf("%s: %v", body, err)
		}
	}
}
