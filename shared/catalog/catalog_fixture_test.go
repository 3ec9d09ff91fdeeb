package catalog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

const vendorID = "ven_1"

type fixture struct {
	svc   catalog.Service
	store *sqlite.Store
	clock *clock.Fake
}

func newFixture(t *testing.T, a catalog.Authority) fixture {
	t.Helper()
	c := clocktest.Fake(2026, 3, 1, 9, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if a == nil {
		a = catalog.ServiceOwned{}
	}
	return fixture{svc: catalog.Service{Store: st, Clock: c, Authority: a}, store: st, clock: c}
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
	in, err := catalog.ParseCreate([]byte(body))
	if err != nil {
		t.Fatalf("parse create: %v", err)
	}
	prep, err := f.svc.PrepareCreate(context.Background(), vendorID, in)
	p, ops, conflict := prep.View, prep.Ops, prep.Explain
	if err != nil {
		t.Fatalf("prepare create: %v", err)
	}
	if err := f.store.Transact(context.Background(), ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			t.Fatalf("create: %v", conflict(ce))
		}
		t.Fatalf("create: %v", err)
	}
	return p
}

func (f fixture) load(t *testing.T, id string) (catalog.Product, store.Item) {
	t.Helper()
	p, it, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatalf("load %s: %v", id, err)
	}
	return p, it
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

func ptr[T any](v T) *T { return &v }
