package main

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// invoke sends f the sample event path (under events/) with its vendor and
// token, and productID when the event names one.
func invoke(t *testing.T, f lt.Function, path, productID string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return f.Call(t, path, map[string]string{"PRODUCT_ID": productID})
}

// product is the part of a product view these tests look at.
type product struct {
	ID        string   `json:"id"`
	VendorID  string   `json:"vendor_id"`
	Status    string   `json:"status"`
	Revision  int64    `json:"revision"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Slug      string   `json:"slug"`
	Price     int64    `json:"price"`
	ImageURLs []string `json:"image_urls"`
}

// create sends create-product.json and checks the new draft it answers.
func create(t *testing.T, f lt.Function) (events.APIGatewayV2HTTPResponse, product) {
	t.Helper()
	resp := invoke(t, f, "products/create-product.json", "")
	p := lt.Answer[product](t, resp, http.StatusCreated)
	want := product{ID: p.ID, VendorID: f.Vendor.ID, Status: "draft", Revision: 1, Kind: "simple", Name: "Sample Shirt",
		Slug: "sample-shirt", Price: 4500, ImageURLs: []string{"https://cdn.example.com/shirt.jpg"}}
	if !strings.HasPrefix(p.ID, "prd_") || !reflect.DeepEqual(p, want) {
		t.Errorf("created %+v, want %+v with an id prd_…", p, want)
	}
	return resp, p
}

// TestCreateProduct: a new product, and the same request again replays it.
func TestCreateProduct(t *testing.T) {
	f := lt.OnSQLite(t, group())
	first, _ := create(t, f)
	f.WantReplayed(t, "products/create-product.json", first)
}

func TestGetProduct(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	resp := invoke(t, f, "products/get-product.json", created.ID)
	if got := lt.Answer[product](t, resp, http.StatusOK); !reflect.DeepEqual(got, created) {
		t.Errorf("got %+v, want %+v", got, created)
	}
}

func TestListProducts(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	wantList(t, f, created)
}

func wantList(t *testing.T, f lt.Function, want ...product) {
	t.Helper()
	resp := invoke(t, f, "products/list-products.json", "")
	got := lt.Answer[[]product](t, resp, http.StatusOK)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data = %+v, want %+v", got, want)
	}
}

func TestPublishProduct(t *testing.T) {
	f := lt.OnSQLite(t, group())
	_, created := create(t, f)
	wantPublished(t, f, created)
}

func wantPublished(t *testing.T, f lt.Function, created product) {
	t.Helper()
	resp := invoke(t, f, "products/publish-product.json", created.ID)
	got := lt.Answer[product](t, resp, http.StatusOK)
	if got.ID != created.ID || got.Status != "published" || got.Revision != 2 {
		t.Errorf("published %+v, want %s at status published, revision 2", got, created.ID)
	}
}

// TestServesItsGroup: the function mounts the Products group alone.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "products/list-products.json", http.StatusOK, nil)
}

// TestDynamoDB runs the product's events against DynamoDB Local, the store
// the Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func TestDynamoDB(t *testing.T) {
	f := lt.OnDynamoDB(t, group())
	first, created := create(t, f)
	f.WantReplayed(t, "products/create-product.json", first)
	wantList(t, f, created)
	wantPublished(t, f, created)
}
