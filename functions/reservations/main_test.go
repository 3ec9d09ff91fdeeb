package main

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/httpapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// fixture is the function main builds, over a store with one vendor and a
// token for it, and the Connections, Products and Inventory Lambdas over the
// same store to make what a reservation holds: an active connection and an
// item with stock.
type fixture struct {
	lt.Function
	connections, products, inventory lt.Function

	// connectionID and itemID fill the events' placeholders once made.
	connectionID, itemID string
}

func newFixture(t *testing.T, fn lt.Function) *fixture {
	t.Helper()
	return &fixture{Function: fn, connections: fn.Other(t, httpapi.Connections),
		products: fn.Other(t, httpapi.Products), inventory: fn.Other(t, httpapi.Inventory)}
}

func sqliteFixture(t *testing.T) *fixture { return newFixture(t, lt.OnSQLite(t, group())) }

// event reads the sample event path (under events/) with the fixture's
// vendor, token, connection and item, and reservationID when the event
// names one.
func (f *fixture) event(t *testing.T, path, reservationID string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	vars := f.Vars()
	for k, v := range f.ids(reservationID) {
		if v != "" {
			vars[k] = v
		}
	}
	return lt.Event(t, path, vars)
}

// ids fill the events' placeholders: the connection and item once made.
func (f *fixture) ids(reservationID string) map[string]string {
	return map[string]string{"CONNECTION_ID": f.connectionID, "INVENTORY_ITEM_ID": f.itemID, "RESERVATION_ID": reservationID}
}

// invoke sends the sample event path to fn.
func (f *fixture) invoke(t *testing.T, fn lt.Function, path, reservationID string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return fn.Call(t, path, f.ids(reservationID))
}

// stock makes what the reservation events need through the other groups'
// Lambdas: an active service_source connection (create-connection.json),
// the simple product of create-product.json and 12 units of its item
// (adjust-inventory-item.json).
func (f *fixture) stock(t *testing.T) {
	t.Helper()
	resp := f.invoke(t, f.connections, "connections/create-connection.json", "")
	lt.WantStatus(t, resp, http.StatusCreated)
	f.connectionID = lt.DataID(t, resp)

	resp = f.invoke(t, f.products, "products/create-product.json", "")
	lt.WantStatus(t, resp, http.StatusCreated)
	lt.DataID(t, resp)

	resp = f.invoke(t, f.inventory, "inventory/list-inventory-items.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	list := lt.Data[[]item](t, resp)
	if len(list) != 1 {
		t.Fatalf("listed %d items, want the product's one: %s", len(list), resp.Body)
	}
	f.itemID = list[0].ID

	resp = f.invoke(t, f.inventory, "inventory/adjust-inventory-item.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	f.wantItem(t, item{ID: f.itemID, OnHand: 12, Available: 12})
}

// item is the part of an inventory item view these tests look at.
type item struct {
	ID        string `json:"id"`
	OnHand    int64  `json:"on_hand"`
	Reserved  int64  `json:"reserved"`
	Available int64  `json:"available"`
}

// wantItem reads the item through the Inventory Lambda.
func (f *fixture) wantItem(t *testing.T, want item) {
	t.Helper()
	resp := f.invoke(t, f.inventory, "inventory/get-inventory-item.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	got := lt.Data[item](t, resp)
	if got != want {
		t.Errorf("item %+v, want %+v", got, want)
	}
}

// reservation is the part of a reservation view these tests look at.
type reservation struct {
	ID              string  `json:"id"`
	VendorID        string  `json:"vendor_id"`
	ConnectionID    string  `json:"connection_id"`
	InventoryItemID string  `json:"inventory_item_id"`
	Quantity        int64   `json:"quantity"`
	Status          string  `json:"status"`
	Owner           string  `json:"owner"`
	Reference       *string `json:"reference"`
	Version         int64   `json:"version"`
	CommittedAt     *string `json:"committed_at"`
	ReleasedAt      *string `json:"released_at"`
}

// create sends create-reservation.json, with idempotencyKey in place of the
// file's key when it is not empty, and checks the hold it answers: two
// units, active at version 1.
func (f *fixture) create(t *testing.T, idempotencyKey string) reservation {
	t.Helper()
	ev := f.event(t, "reservations/create-reservation.json", "")
	if idempotencyKey != "" {
		ev.Headers["idempotency-key"] = idempotencyKey
	}
	// The sample's content-length counts real ids, and these are real.
	if got, want := ev.Headers["content-length"], strconv.Itoa(len(ev.Body)); got != want {
		t.Errorf("create-reservation.json: content-length %s, body with real ids is %s bytes", got, want)
	}
	resp := lt.Invoke(t, f.Serve, ev)
	lt.WantStatus(t, resp, http.StatusCreated)
	if v := lt.Header(resp, "Idempotent-Replayed"); v != "" {
		t.Errorf("Idempotent-Replayed = %q on the first request", v)
	}
	r := lt.Data[reservation](t, resp)
	ref := "cart-7731"
	want := reservation{ID: r.ID, VendorID: f.Vendor.ID, ConnectionID: f.connectionID, InventoryItemID: f.itemID,
		Quantity: 2, Status: "active", Owner: "moku", Reference: &ref, Version: 1}
	if !strings.HasPrefix(r.ID, "res_") || !reflect.DeepEqual(r, want) {
		t.Errorf("created %+v, want %+v with an id res_…", r, want)
	}
	return r
}

// settle sends commit-reservation.json or release-reservation.json for r
// and wants it at status, version 2, with the time it was settled.
func (f *fixture) settle(t *testing.T, r reservation, path, status string) reservation {
	t.Helper()
	resp := f.invoke(t, f.Function, path, r.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	got := lt.Data[reservation](t, resp)
	settledAt := got.CommittedAt
	if status == "released" {
		settledAt = got.ReleasedAt
	}
	want := r
	want.Status, want.Version, want.CommittedAt, want.ReleasedAt = status, 2, got.CommittedAt, got.ReleasedAt
	if settledAt == nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s: %+v, want %+v with its %s_at", path, got, want, status)
	}
	return got
}

// TestReservationLifecycle holds, reads, lists and commits a reservation,
// then holds and releases a second one: the item ends with the committed
// units gone and nothing reserved.
func TestReservationLifecycle(t *testing.T) {
	f := sqliteFixture(t)
	f.stock(t)

	first := f.create(t, "")
	f.wantItem(t, item{ID: f.itemID, OnHand: 12, Reserved: 2, Available: 10})

	resp := f.invoke(t, f.Function, "reservations/get-reservation.json", first.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	if got := lt.Data[reservation](t, resp); !reflect.DeepEqual(got, first) {
		t.Errorf("got %+v, want %+v", got, first)
	}

	resp = f.invoke(t, f.Function, "reservations/list-reservations.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	list := lt.Data[[]reservation](t, resp)
	if want := []reservation{first}; !reflect.DeepEqual(list, want) {
		t.Errorf("active reservations %+v, want %+v", list, want)
	}

	f.settle(t, first, "reservations/commit-reservation.json", "committed")
	f.wantItem(t, item{ID: f.itemID, OnHand: 10, Available: 10})

	second := f.create(t, "res-create:0002")
	if second.ID == first.ID {
		t.Fatalf("the second create answered the first reservation %s", first.ID)
	}
	f.wantItem(t, item{ID: f.itemID, OnHand: 10, Reserved: 2, Available: 8})
	f.settle(t, second, "reservations/release-reservation.json", "released")
	f.wantItem(t, item{ID: f.itemID, OnHand: 10, Available: 10})

	// Nothing is held any more.
	resp = f.invoke(t, f.Function, "reservations/list-reservations.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	list = lt.Data[[]reservation](t, resp)
	if len(list) != 0 {
		t.Errorf("active reservations after settling both: %+v", list)
	}
}

// TestRenewReservation extends a hold of 900 s by renew-reservation.json
// (1800 s from now, at version 1).
func TestRenewReservation(t *testing.T) {
	f := sqliteFixture(t)
	f.stock(t)
	r := f.create(t, "")
	before := time.Now()
	resp := f.invoke(t, f.Function, "reservations/renew-reservation.json", r.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	got := lt.Data[reservation](t, resp)
	want := r
	want.Version = 2
	if !reflect.DeepEqual(got, want) {
		t.Errorf("renewed %+v, want %+v", got, want)
	}
	var hold struct {
		Data struct {
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"data"`
	}
	lt.Decode(t, resp.Body, &hold)
	if end := hold.Data.ExpiresAt; end.Before(before.Add(1799*time.Second)) || end.After(time.Now().Add(1800*time.Second)) {
		t.Errorf("expires_at %v, want 1800 s after the renewal at %v", end, before)
	}
	f.wantItem(t, item{ID: f.itemID, OnHand: 12, Reserved: 2, Available: 10})
}

// TestServesItsGroup: the function mounts the Reservations group alone.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "reservations/list-reservations.json", http.StatusOK, nil)
}

// TestDynamoDB runs the reservation's events against DynamoDB Local, the
// store the Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func TestDynamoDB(t *testing.T) {
	f := newFixture(t, lt.OnDynamoDB(t, group()))
	f.stock(t)
	r := f.create(t, "")
	f.wantItem(t, item{ID: f.itemID, OnHand: 12, Reserved: 2, Available: 10})
	f.settle(t, r, "reservations/commit-reservation.json", "committed")
	f.wantItem(t, item{ID: f.itemID, OnHand: 10, Available: 10})
}
