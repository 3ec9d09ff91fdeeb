package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

type fixture struct {
	dt.Env
	svc catalog.Service
}

func newFixture(t *testing.T, a catalog.Authority) fixture {
	t.Helper()
	e := dt.New(t, 2026, 3, 1, 9, 0, 0)
	if a == nil {
		a = catalog.ServiceOwned{}
	}
	return fixture{Env: e, svc: catalog.Service{Store: e.Store, Clock: e.Clock, Authority: a}}
}

// completeSimple is a create body for a simple product that can be published.
func completeSimple(slug string) string {
	return fmt.Sprintf(`{"kind":"simple","name":"Mug","slug":%q,"description":"A mug.","price":1200,
		"category":"kitchen","subcategory":"cups","image_urls":["https://img.example/mug.webp"],
		"options":{},"features":[],"related_product_ids":[],"weight_kg":0.4}`, slug)
}

// variableBody is a create body for a variable product with sizes S and M.
func variableBody(slug string) string {
	return fmt.Sprintf(`{"kind":"variable","name":"Shirt","slug":%q,"description":"A shirt.","price":2000,
		"category":"clothes","subcategory":"shirts","image_urls":["https://img.example/shirt.webp"],
		"options":{"size":["S","M","L"]},"features":[],"related_product_ids":[],"weight_kg":0.2,
		"variations":[{"options":{"size":"S"},"price":2000},{"options":{"size":"M"},"price":2100}]}`, slug)
}

func (f fixture) create(t *testing.T, body string) catalog.Product {
	t.Helper()
	return f.Product(t, f.svc.Authority, body)
}

func (f fixture) load(t *testing.T, id string) (catalog.Product, store.Item) {
	t.Helper()
	p, it, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	return p, it
}

func ptr[T any](v T) *T { return &v }
