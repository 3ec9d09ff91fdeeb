package main

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/httpapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// fixture is the function main builds, over a store with one vendor and a
// token for it, and the Products Lambda over the same store to create the
// products whose items this one serves.
type fixture struct {
	lt.Function
	products lt.Function
}

func newFixture(t *testing.T, fn lt.Function) fixture {
	t.Helper()
	return fixture{Function: fn, products: fn.Other(t, httpapi.Products)}
}

// invoke sends the sample event path (under events/) with the fixture's
// vendor and token, and itemID when the event names one.
func (f fixture) invoke(t *testing.T, path, itemID string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return f.Call(t, path, map[string]string{"INVENTORY_ITEM_ID": itemID})
}

func sqliteFixture(t *testing.T) fixture { return newFixture(t, lt.OnSQLite(t, group())) }

// item is the part of an inventory item view these tests look at.
type item struct {
	ID          string  `json:"id"`
	VendorID    string  `json:"vendor_id"`
	ProductID   string  `json:"product_id"`
	ProductName string  `json:"product_name"`
	VariationID *string `json:"variation_id"`
	OnHand      int64   `json:"on_hand"`
	Reserved    int64   `json:"reserved"`
	Available   int64   `json:"available"`
	Version     int64   `json:"version"`
	Status      string  `json:"status"`
}

// createProduct creates the simple product of create-product.json through
// the Products Lambda and returns its id.
func (f fixture) createProduct(t *testing.T) string {
	t.Helper()
	resp := f.products.Call(t, "products/create-product.json", nil)
	lt.WantStatus(t, resp, http.StatusCreated)
	return lt.DataID(t, resp)
}

// listOne sends list-inventory-items.json and wants the one item of the
// simple product productID, new and empty.
func (f fixture) listOne(t *testing.T, productID string) item {
	t.Helper()
	resp := f.invoke(t, "inventory/list-inventory-items.json", "")
	lt.WantStatus(t, resp, http.StatusOK)
	list := lt.Data[[]item](t, resp)
	if len(list) != 1 {
		t.Fatalf("listed %d items, want the product's one: %s", len(list), resp.Body)
	}
	got := list[0]
	want := item{ID: got.ID, VendorID: f.Vendor.ID, ProductID: productID, ProductName: "Sample Shirt",
		Version: 1, Status: "out_of_stock"}
	if got.ID == "" || !reflect.DeepEqual(got, want) {
		t.Errorf("listed %+v, want %+v with an id", got, want)
	}
	return got
}

func TestListInventoryItems(t *testing.T) {
	f := sqliteFixture(t)
	f.listOne(t, f.createProduct(t))
}

func TestGetInventoryItem(t *testing.T) {
	f := sqliteFixture(t)
	listed := f.listOne(t, f.createProduct(t))
	resp := f.invoke(t, "inventory/get-inventory-item.json", listed.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	if got := lt.Data[item](t, resp); !reflect.DeepEqual(got, listed) || got.Version != 1 {
		t.Errorf("got %+v, want %+v at version 1", got, listed)
	}
}

func TestAdjustInventoryItem(t *testing.T) {
	f := sqliteFixture(t)
	wantAdjusted(t, f, f.listOne(t, f.createProduct(t)))
}

// wantAdjusted sends adjust-inventory-item.json (target 12 at version 1)
// and reads the item back.
func wantAdjusted(t *testing.T, f fixture, before item) {
	t.Helper()
	want := before
	want.OnHand, want.Available, want.Version, want.Status = 12, 12, 2, "in_stock"

	resp := f.invoke(t, "inventory/adjust-inventory-item.json", before.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	if got := lt.Data[item](t, resp); !reflect.DeepEqual(got, want) {
		t.Errorf("adjusted %+v, want %+v", got, want)
	}
	resp = f.invoke(t, "inventory/get-inventory-item.json", before.ID)
	lt.WantStatus(t, resp, http.StatusOK)
	if got := lt.Data[item](t, resp); !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
}

// TestServesItsGroup: the function mounts the Inventory group alone.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "inventory/list-inventory-items.json", http.StatusOK, nil)
}

// TestDynamoDB runs the inventory events against DynamoDB Local, the store
// the Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func TestDynamoDB(t *testing.T) {
	f := newFixture(t, lt.OnDynamoDB(t, group()))
	wantAdjusted(t, f, f.listOne(t, f.createProduct(t)))
}
