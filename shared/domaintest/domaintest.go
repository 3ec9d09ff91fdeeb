// Package domaintest holds what the domain packages' own tests share: one
// vendor's embedded store on a fake clock, prepared mutations committed as
// the HTTP layer commits them, and the seeds most of those tests start from
// (a product, its stock, a connection), made through the services' own
// Prepare methods. What a test checks stays in its package.
package domaintest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// VendorID is the vendor every seed belongs to.
const VendorID = "ven_1"

// Env is an embedded store in a fresh directory and the fake clock it
// reads.
type Env struct {
	Store *sqlite.Store
	Clock *clock.Fake
}

// New opens an Env whose clock starts at the given time (clocktest.Fake's
// arguments); the store closes when the test ends.
func New(t testing.TB, year int, month time.Month, day, hour, min, sec int) Env {
	t.Helper()
	c := clocktest.Fake(year, month, day, hour, min, sec)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return Env{Store: st, Clock: c}
}

// Apply commits ops in one transaction, failing the test on any error.
func (e Env) Apply(t testing.TB, ops ...store.Op) {
	t.Helper()
	if err := e.Store.Transact(context.Background(), ops...); err != nil {
		t.Fatal(err)
	}
}

// Run commits a prepared mutation as the HTTP layer does: an error from
// preparing it is returned as is, and a lost race (a failed condition) as
// the mutation explains it.
func Run[V any](e Env, p store.Prepared[V], err error) (V, error) {
	var zero V
	if err != nil {
		return zero, err
	}
	if err := e.Store.Transact(context.Background(), p.Ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok && p.Explain != nil {
			return zero, p.Explain(ce)
		}
		return zero, err
	}
	return p.View, nil
}

// Must is Run failing the test on any error.
func Must[V any](t testing.TB, e Env, p store.Prepared[V], err error) V {
	t.Helper()
	v, err := Run(e, p, err)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// SimpleBody is the create body of a simple product with slug, complete
// enough to publish.
func SimpleBody(slug string) string {
	return fmt.Sprintf(`{"kind":"simple","name":"Mug","slug":%q,"description":"A mug.","price":100,"category":"c","subcategory":"s",
		"image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":1}`, slug)
}

// Product creates the product of body, a create request's JSON, through
// the catalog service with authority a.
func (e Env) Product(t testing.TB, a catalog.Authority, body string) catalog.Product {
	t.Helper()
	in, err := catalog.ParseCreate([]byte(body))
	if err != nil {
		t.Fatalf("parse create: %v", err)
	}
	svc := catalog.Service{Store: e.Store, Clock: e.Clock, Authority: a}
	p, err := svc.PrepareCreate(context.Background(), VendorID, in)
	return Must(t, e, p, err)
}

// Stock sets the on-hand stock of a new item (at version 1) through the
// inventory service with authority a.
func (e Env) Stock(t testing.TB, a catalog.Authority, itemID string, onHand int64) {
	t.Helper()
	svc := inventory.Service{Store: e.Store, Clock: e.Clock, Authority: a, Catalog: catalog.Service{Store: e.Store, Clock: e.Clock}}
	p, err := svc.PrepareAdjust(context.Background(), VendorID, itemID, inventory.Adjustment{TargetOnHand: onHand, ExpectedVersion: 1})
	Must(t, e, p, err)
}

// Stocked creates the simple product of SimpleBody(slug) with onHand units,
// its masters read from the connections (connection.Masters), and returns
// it and its item.
func (e Env) Stocked(t testing.TB, slug string, onHand int64) (catalog.Product, string) {
	t.Helper()
	a := connection.Masters{Store: e.Store}
	p := e.Product(t, a, SimpleBody(slug))
	item := catalog.InventoryItemID(p.ID, 0)
	e.Stock(t, a, item, onHand)
	return p, item
}

// Destination is a connection's roles that source nothing: the service
// masters catalog, price and stock, orders come in, and moku fulfils them.
func Destination() connection.Roles {
	return connection.Roles{Catalog: connection.Destination, BasePrice: connection.Destination, Inventory: connection.Destination,
		OrderIngress: connection.Enabled, ExternalOrderFulfillment: connection.Moku}
}

// Connection creates an active connection of provider with roles and
// returns its id.
func (e Env) Connection(t testing.TB, provider string, roles connection.Roles) string {
	t.Helper()
	svc := connection.Service{Store: e.Store, Clock: e.Clock}
	p, err := svc.PrepareCreate(context.Background(), VendorID, connection.CreateInput{
		Provider: provider, ExternalAccountID: "acct", DisplayName: "Shop", Roles: roles})
	return Must(t, e, p, err).ID
}

// WantCode fails the test unless err is of code.
func WantCode(t testing.TB, err error, code errs.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// Set replaces m's fields named in set, a nil value deleting its field,
// and returns m: a request body varied a field at a time.
func Set(m, set map[string]any) map[string]any {
	for k, v := range set {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// Body is the JSON of Set(m, set).
func Body(m, set map[string]any) []byte {
	b, err := json.Marshal(Set(m, set))
	if err != nil {
		panic(err) // maps of JSON values always marshal
	}
	return b
}

// Walk follows a service's keyset List to its end, list(after) being one
// page after the key after ("" for the first), and returns the ids (by id)
// of every item in order.
func Walk[T any](t testing.TB, list func(after string) (store.PageOf[T], error), id func(T) string) []string {
	t.Helper()
	var ids []string
	after := ""
	for range 1000 {
		page, err := list(after)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range page.Items {
			ids = append(ids, id(v))
		}
		if !page.More {
			return ids
		}
		after = page.Last
	}
	t.Fatal("the list does not end after 1000 pages")
	return nil
}

// Race runs do(0) … do(n-1) at once from n goroutines and returns their
// results (errors, responses) in the order of i: the shape of every test
// of concurrent writers against the real store.
func Race[T any](n int, do func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = do(i)
		}()
	}
	wg.Wait()
	return out
}

// Succeeded is the indexes of the nil errors of a race; an error that is
// not of one of codes (the refusals the race may end in) fails the test.
func Succeeded(t testing.TB, errors []error, codes ...errs.Code) []int {
	t.Helper()
	var ok []int
	for i, err := range errors {
		if err == nil {
			ok = append(ok, i)
			continue
		}
		if !slices.ContainsFunc(codes, func(c errs.Code) bool { return errs.Is(err, c) }) {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	return ok
}
