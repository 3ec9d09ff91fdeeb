package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"

	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// roundTrips records the store round trips of each operation.
type roundTrips struct {
	mu       sync.Mutex
	last     map[string]int64
	calls    map[string]int64
	capacity map[string]float64
	read     map[string]float64
}

func (r *roundTrips) observe(o httpapi.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string]int64{}
	}
	if r.capacity == nil {
		r.capacity, r.read = map[string]float64{}, map[string]float64{}
	}
	r.last[o.Operation] = o.SequentialRoundTrips
	r.calls[o.Operation] = o.RoundTrips
	r.capacity[o.Operation] = o.ConsumedCapacity
	r.read[o.Operation] = o.ReadUnits
}

func (r *roundTrips) of(op string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[op]
}

// TestRoundTripBudgets pins the sequential store round trips (waits) per
// operation, as docs/performance.md states them, so that they cannot creep up
// unnoticed: calls made side by side count once (roundtrip.Counter), and the
// rate window, spent beside the request's batch read, not at all. With a
// token this process has authenticated before (warm, the steady state), a
// read waits for 1 (token, vendor and the route's read-ahead keys in one
// batch), a mutation for 2 (that batch, then its transaction); a list page
// for 1 (its query starts beside the batch, TestListPageBudgets). A
// token's first request in a process (cold) waits for one more: its token
// alone is read and checked before anything of the vendor's is touched.
func TestRoundTripBudgets(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}, calls: map[string]int64{}}
		// Writes enough for the cold figures' too, still spent unit by unit.
		e := newEnv(t, kind, apitest.Options{Observe: rt.observe, Groups: []httpapi.Group{httpapi.Products, httpapi.Inventory, httpapi.Connections, httpapi.Reservations},
			Config: func(c *config.Config) { c.RateWrites = 30 }})
		// Cold, then warm: each with a token new to the server.
		for i, b := range []struct {
			op         string
			req        func(token string, n int) apitest.Req
			cold, warm int64
		}{
			{"getVendor", func(tok string, _ int) apitest.Req { return apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: tok} }, 2, 1},
			{"listVendors", func(tok string, _ int) apitest.Req { return apitest.Req{Path: "/vendors", Token: tok} }, 2, 2},
			{"createWidget", func(tok string, n int) apitest.Req {
				return apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: tok,
					Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("budget-cold-%d", n)}}
			}, 3, 2},
		} {
			tok := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
			var read [2]float64
			for n, want := range []int64{b.cold, b.warm} {
				if r := e.Do(b.req(tok, 2*i+n)); r.Status >= 300 {
					t.Fatalf("%s: %d %s", b.op, r.Status, r.Body)
				}
				read[n] = rt.read[b.op]
				t.Logf("%s (%s): %d waits, %d calls, %.1f capacity units", b.op, []string{"cold", "warm"}[n], rt.of(b.op), rt.calls[b.op], rt.capacity[b.op])
				if got := rt.of(b.op); got != want {
					t.Errorf("%s (%s) made %d store round trips, budget %d", b.op, []string{"cold", "warm"}[n], got, want)
				}
			}
			// The cold path reads the token on its own, not twice: the
			// same read units (DynamoDB reports them; the embedded store
			// 0). Write units differ with the rate window's lease, which
			// one request renews and the next spends from memory.
			if read[0] > read[1] {
				t.Errorf("%s cold consumed %.1f read units, warm %.1f", b.op, read[0], read[1])
			}
		}
		// The default token is warm from here on.
		if r := e.Get("/vendors/" + e.Vendor.ID); r.Status != http.StatusOK {
			t.Fatalf("getVendor: %d %s", r.Status, r.Body)
		}
		budgets := []struct {
			op   string
			req  apitest.Req
			want int64
		}{
			// Token and vendor in one batch read, the rate window beside it.
			{"getVendor", apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: e.Token}, 1},
			// No vendor in the path: the token, then its vendor.
			{"listVendors", apitest.Req{Path: "/vendors", Token: e.Token}, 2},
			{"getOpenAPI", apitest.Req{Path: "/openapi.json"}, 0},
			// Token and vendor, then the mutation with its receipt.
			{"createWidget", apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
				Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": "budget-key-1"}}, 2},
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
			// Token, vendor and product in one batch.
			{"getProduct", apitest.Req{Path: pp + p.Data.ID, Token: e.Token}, 1},
			// Token, vendor and the page's query started beside them.
			{"listProducts", apitest.Req{Path: strings.TrimSuffix(pp, "/"), Token: e.Token}, 1},
			// Token, vendor, authority and receipt, then product, slug, event and receipt in one transaction.
			{"createProduct", apitest.Req{Method: http.MethodPost, Path: strings.TrimSuffix(pp, "/"), Token: e.Token, Body: simpleProduct("budget-2"),
				Headers: map[string]string{"Idempotency-Key": "budget-product-2"}}, 2},
			// Token, vendor, product and authority, then the transaction.
			{"updateProduct", apitest.Req{Method: http.MethodPatch, Path: pp + p.Data.ID, Token: e.Token, Body: update}, 2},
			{"publishProduct", apitest.Req{Method: http.MethodPost, Path: pp + p.Data.ID + "/publish", Token: e.Token, Body: map[string]any{"expected_revision": 2}}, 2},
			{"getInventoryItem", apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + item, Token: e.Token}, 1},
			{"listInventoryItems", apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/inventory-items", Token: e.Token}, 1},
			{"adjustInventoryItem", apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + item + "/adjustments", Token: e.Token,
				Body: map[string]any{"target_on_hand": 5, "expected_version": 1}, Headers: map[string]string{"Idempotency-Key": "budget-adjust-1"}}, 2},
		}...)
		for _, b := range budgets {
			r := e.Do(b.req)
			if r.Status >= 300 {
				t.Fatalf("%s: %d %s", b.op, r.Status, r.Body)
			}
			t.Logf("%s: %d waits, %d calls", b.op, rt.of(b.op), rt.calls[b.op])
			if got := rt.of(b.op); got != b.want {
				t.Errorf("%s made %d store round trips, budget %d", b.op, got, b.want)
			}
		}
		// A reservation reads ahead the connection and product its body
		// names. (A vendor's first one also creates the authority record:
		// one more write, measured on the second.)
		conn := mustConnection(t, e, "budget-connection", connectionBody("marketplace_a", destinationRoles))
		for i := range 2 {
			if r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-reservations", Token: e.Token,
				Body:    map[string]any{"connection_id": conn.Data.ID, "inventory_item_id": item, "quantity": 1},
				Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("budget-reserve-%d", i)}}); r.Status != http.StatusCreated {
				t.Fatalf("reserve: %d %s", r.Status, r.Body)
			}
		}
		if got := rt.of("createReservation"); got != 2 {
			t.Errorf("createReservation made %d store round trips, budget 2", got)
		}
		// An exact replay answers from the receipt read ahead, and a stale
		// version is refused from the item read ahead: one wait each.
		adjust := apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + item + "/adjustments", Token: e.Token,
			Body: map[string]any{"target_on_hand": 5, "expected_version": 1}, Headers: map[string]string{"Idempotency-Key": "budget-adjust-1"}}
		stale := adjust
		stale.Headers = map[string]string{"Idempotency-Key": "budget-adjust-2"}
		for _, r := range []struct {
			name   string
			req    apitest.Req
			status int
		}{{"replay", adjust, http.StatusOK}, {"stale version", stale, http.StatusConflict}} {
			res := e.Do(r.req)
			if res.Status != r.status {
				t.Fatalf("%s: %d %s", r.name, res.Status, res.Body)
			}
			if got := rt.of("adjustInventoryItem"); got != 1 {
				t.Errorf("adjustInventoryItem (%s) made %d store round trips, budget 1", r.name, got)
			}
		}
	})
}

// listRoutes are the mounted token routes that answer a page of the path
// vendor's records.
func listRoutes(e *apitest.Env) []httpapi.Route {
	var out []httpapi.Route
	for _, r := range e.Server.Routes() {
		if r.Method == http.MethodGet && r.Scopes != nil && strings.HasPrefix(r.Operation, "list") && strings.Contains(r.Path, "{vendor_id}") {
			out = append(out, r)
		}
	}
	return out
}

// TestListPageBudgets pins every list page, first and continued, at 1
// wait: the route's page query (Route.PageAhead) starts beside the
// admission batch, so it fails as soon as a list's query runs after the
// batch again, or a route's declaration stops matching the query its
// handler runs.
func TestListPageBudgets(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}, calls: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe, WebhookResolver: publicHosts,
			Config: func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, 1<<20 }})
		for i := range 3 {
			mustCreate(t, e, fmt.Sprintf("pages-product-%d", i), variableProduct(fmt.Sprintf("pages-%d", i), 2))
		}
		// Three connections, the first and last with a health report: the
		// pages' health records are answered from the range read ahead.
		health := map[string]string{}
		for i := range 3 {
			conn := mustConnection(t, e, fmt.Sprintf("pages-connection-%d", i), connectionBody("marketplace_a", destinationRoles))
			health[conn.Data.ID] = "unknown"
			if i != 1 {
				k := datamodel.ConnectionHealthKey(e.Vendor.ID, conn.Data.ID)
				if err := e.Store.Transact(context.Background(), store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1,
					Data: []byte(`{"state":"healthy","last_observed_at":null,"last_success_at":null,"blockers":[]}`)}, store.Cond{})); err != nil {
					t.Fatal(err)
				}
				health[conn.Data.ID] = "healthy"
			}
		}
		listed := map[string]string{}
		sub := mustSubscribe(t, e, "https://hooks.example.com/pages", "*")
		vendor := "/vendors/" + e.Vendor.ID
		var items struct {
			Data []struct{ ID string }
		}
		e.Get(vendor+"/inventory-items?limit=3").JSON(t, &items)
		for i, it := range items.Data {
			if r := e.Do(apitest.Req{Method: http.MethodPost, Path: vendor + "/inventory-items/" + it.ID + "/adjustments", Token: e.Token,
				Body: map[string]any{"target_on_hand": 5, "expected_version": 1}, Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("pages-adjust-%d", i)}}); r.Status != http.StatusOK {
				t.Fatalf("adjust: %d %s", r.Status, r.Body)
			}
		}
		// A token's first page in the process reads its token alone first:
		// one more wait; its next page is the budget.
		fresh := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		for n, want := range []int64{2, 1} {
			if res := e.Do(apitest.Req{Path: vendor + "/products?limit=2", Token: fresh}); res.Status != http.StatusOK {
				t.Fatalf("listProducts: %d %s", res.Status, res.Body)
			}
			if got := rt.of("listProducts"); got != want {
				t.Errorf("listProducts (%s) made %d sequential store round trips, budget %d", []string{"cold", "warm"}[n], got, want)
			}
		}
		budgets := map[string]int64{}
		for _, r := range listRoutes(e) {
			budgets[r.Operation] = 1
		}
		continued := map[string]bool{}
		routes := listRoutes(e)
		for _, r := range routes {
			path := strings.NewReplacer("{vendor_id}", e.Vendor.ID, "{subscription_id}", sub.Data.ID).Replace(r.Path)
			if strings.Contains(path, "{") {
				t.Fatalf("%s: no value for the path %s", r.Operation, r.Path)
			}
			page := path + "?limit=2"
			for n := 0; n < 3 && page != ""; n++ {
				res := e.Do(apitest.Req{Path: page, Token: e.Token})
				if res.Status != http.StatusOK {
					t.Fatalf("%s %s: %d %s", r.Operation, page, res.Status, res.Body)
				}
				if got, want := rt.of(r.Operation), budgets[r.Operation]; got != want {
					t.Errorf("%s (page %d) made %d sequential store round trips (%d calls), budget %d", r.Operation, n+1, got, rt.calls[r.Operation], want)
				}
				var body struct {
					Data []struct {
						ID     string
						Health struct{ State string }
					}
					Page httpapi.Page
				}
				res.JSON(t, &body)
				if r.Operation == "listConnections" {
					for _, d := range body.Data {
						listed[d.ID] = d.Health.State
					}
				}
				page = ""
				if body.Page.NextCursor != nil {
					page = path + "?limit=2&page_after=" + url.QueryEscape(*body.Page.NextCursor)
					continued[r.Operation] = true
				}
			}
		}
		if len(routes) < 14 {
			t.Errorf("%d list routes mounted; want every group's", len(routes))
		}
		// Pages that continue inside a product, and after one.
		for _, op := range []string{"listProducts", "listInventoryItems", "listStockEffects", "listEvents", "listConnections"} {
			if !continued[op] {
				t.Errorf("%s: no second page was read", op)
			}
		}
		if fmt.Sprint(listed) != fmt.Sprint(health) {
			t.Errorf("connections' health listed %v, want %v", listed, health)
		}
		// A narrowed list.
		res := e.Get(vendor + "/stock-effects?limit=1&inventory_item_id=" + items.Data[0].ID)
		if res.Status != http.StatusOK || rt.of("listStockEffects") != 1 {
			t.Errorf("narrowed stock effects: %d, %d waits", res.Status, rt.of("listStockEffects"))
		}
		// Without a vendor in the path the token is read before its vendor.
		e.Get("/vendors")
		if got := rt.of("listVendors"); got != 2 {
			t.Errorf("listVendors made %d store round trips, budget 2", got)
		}
	})
}
