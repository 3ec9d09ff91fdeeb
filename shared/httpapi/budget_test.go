package httpapi_test

import (
	"net/http"
	"strings"

	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"

	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// roundTrips records the store round trips of each operation.
type roundTrips struct {
	mu   sync.Mutex
	last map[string]int64
}

func (r *roundTrips) observe(o httpapi.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[o.Operation] = o.RoundTrips
}

func (r *roundTrips) of(op string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[op]
}

// TestRoundTripBudgets pins the store round trips per operation, so that
// they cannot creep up unnoticed. DESIGN.md budgets sequential round trips
// (a read at most 2 after the token lookup, a write at most 3); the counts
// here are totals, and the rate window's round trip runs concurrently with
// the handler's first read (see gate.go), and the vendor's authority is
// read beside the resource (catalog.MastersLater): a total of 3 for a read
// is 2 sequential after authentication, and 4 or 5 for a write is 3.
func TestRoundTripBudgets(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := newEnv(t, kind, apitest.Options{Observe: rt.observe, Groups: []httpapi.Group{httpapi.Products, httpapi.Inventory}})
		budgets := []struct {
			op   string
			req  apitest.Req
			want int64
		}{
			// Token and vendor in one batch read, then the rate window.
			{"getVendor", apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: e.Token}, 2},
			// Token, then its vendor, then the rate window.
			{"listVendors", apitest.Req{Path: "/vendors", Token: e.Token}, 3},
			{"getOpenAPI", apitest.Req{Path: "/openapi.json"}, 0},
			// Token and vendor, rate window, then the mutation with its receipt.
			{"createWidget", apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
				Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": "budget-key-1"}}, 3},
		}
		p := mustCreate(t, e, "budget-product-1", simpleProduct("budget"))
		item := catalog.InventoryItemID(p.Data.ID, 0)
		pp := "/vendors/" + e.Vendor.ID + "/products/"
		update := simpleProduct("budget")
		update["name"], update["expected_revision"] = "Renamed", 1
		budgets = append(budgets, []struct {
			op   string
			req  apitest.Req
			want int64
		}{
			// Token and vendor, then the rate window beside the product read.
			{"getProduct", apitest.Req{Path: pp + p.Data.ID, Token: e.Token}, 3},
			{"listProducts", apitest.Req{Path: strings.TrimSuffix(pp, "/"), Token: e.Token}, 3},
			// Token and vendor, rate window beside the authority, then product, slug, event and receipt in one transaction.
			{"createProduct", apitest.Req{Method: http.MethodPost, Path: strings.TrimSuffix(pp, "/"), Token: e.Token, Body: simpleProduct("budget-2"),
				Headers: map[string]string{"Idempotency-Key": "budget-product-2"}}, 4},
			// Token and vendor, rate window beside the product and authority reads, then the transaction.
			{"updateProduct", apitest.Req{Method: http.MethodPatch, Path: pp + p.Data.ID, Token: e.Token, Body: update}, 5},
			{"publishProduct", apitest.Req{Method: http.MethodPost, Path: pp + p.Data.ID + "/publish", Token: e.Token, Body: map[string]any{"expected_revision": 2}}, 4},
			{"getInventoryItem", apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + item, Token: e.Token}, 3},
			{"listInventoryItems", apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/inventory-items", Token: e.Token}, 3},
			{"adjustInventoryItem", apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + item + "/adjustments", Token: e.Token,
				Body: map[string]any{"target_on_hand": 5, "expected_version": 1}, Headers: map[string]string{"Idempotency-Key": "budget-adjust-1"}}, 5},
		}...)
		for _, b := range budgets {
			r := e.Do(b.req)
			if r.Status >= 300 {
				t.Fatalf("%s: %d %s", b.op, r.Status, r.Body)
			}
			if got := rt.of(b.op); got != b.want {
				t.Errorf("%s made %d store round trips, budget %d", b.op, got, b.want)
			}
		}
	})
}
