package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

type listingBody struct {
	Data struct {
		ID                string
		ConnectionID      string  `json:"connection_id"`
		ProductID         string  `json:"product_id"`
		ExternalListingID *string `json:"external_listing_id"`
		ChannelPrice      *int64  `json:"channel_price"`
		Status            string
		Version           int64
		Sync              struct{ Catalog, Price, Stock bool }
	}
}

func createListing(e *apitest.Env, key string, body any) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/listings", Token: e.Token, Body: body,
		Headers: map[string]string{"Idempotency-Key": key}})
}

func listingDo(e *apitest.Env, method, id, action string, body any) *apitest.Resp {
	path := "/vendors/" + e.Vendor.ID + "/listings/" + id
	if action != "" {
		path += "/" + action
	}
	return e.DoRetrying(apitest.Req{Method: method, Path: path, Token: e.Token, Body: body})
}

func mustListing(t *testing.T, r *apitest.Resp, status int) listingBody {
	t.Helper()
	if r.Status != status {
		t.Fatalf("listing: %d %s", r.Status, r.Body)
	}
	var l listingBody
	r.JSON(t, &l)
	return l
}

func activeListings(t *testing.T, e *apitest.Env, connID string) (int64, int64) {
	t.Helper()
	var c connBody
	e.Get("/vendors/"+e.Vendor.ID+"/connections/"+connID).JSON(t, &c)
	return c.Data.ActiveListingCount, c.Data.Version
}

func TestListingLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "lst-product", simpleProduct("lst"))
		conn := mustConnection(t, e, "lst-conn-a", connectionBody("marketplace_a", destinationRoles))
		body := map[string]any{"connection_id": conn.Data.ID, "product_id": p.Data.ID}
		l := mustListing(t, createListing(e, "lst-create-1", body), 201)
		if l.Data.Status != "draft" || l.Data.Version != 1 || !l.Data.Sync.Catalog || !l.Data.Sync.Price || !l.Data.Sync.Stock || l.Data.ChannelPrice != nil {
			t.Fatalf("created: %+v", l.Data)
		}
		if r := createListing(e, "lst-create-1", body); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", r.Status, r.Body)
		}
		createListing(e, "lst-create-2", body).WantProblem(t, 409, "LISTING_EXISTS")
		id := l.Data.ID
		v := func(n int64) map[string]any { return map[string]any{"expected_version": n} }

		listingDo(e, http.MethodPost, id, "pause", v(1)).WantProblem(t, 409, "LISTING_STATE_CONFLICT")
		listingDo(e, http.MethodPost, id, "activate", v(7)).WantProblem(t, 409, "LISTING_VERSION_CONFLICT")
		steps := []struct {
			action, status string
			count          int64
		}{{"activate", "active", 1}, {"pause", "paused", 1}, {"resume", "active", 1}}
		for i, s := range steps {
			got := mustListing(t, listingDo(e, http.MethodPost, id, s.action, v(int64(i+1))), 200)
			if got.Data.Status != s.status || got.Data.Version != int64(i+2) {
				t.Fatalf("%s: %+v", s.action, got.Data)
			}
			if n, _ := activeListings(t, e, conn.Data.ID); n != s.count {
				t.Fatalf("after %s active_listing_count = %d, want %d", s.action, n, s.count)
			}
		}
		// A connection with a live listing cannot be disconnected.
		_, cv := activeListings(t, e, conn.Data.ID)
		post(e, "/connections/"+conn.Data.ID+"/disconnect", v(cv)).WantProblem(t, 409, "CONNECTION_BUSY")

		up := mustListing(t, listingDo(e, http.MethodPatch, id, "", map[string]any{"expected_version": 4, "channel_price": 3900, "external_listing_id": "ext-1"}), 200)
		if up.Data.ChannelPrice == nil || *up.Data.ChannelPrice != 3900 || up.Data.ExternalListingID == nil || up.Data.Version != 5 {
			t.Fatalf("update: %+v", up.Data)
		}
		ended := mustListing(t, listingDo(e, http.MethodPost, id, "end", v(5)), 200)
		if ended.Data.Status != "ended" {
			t.Fatalf("end: %+v", ended.Data)
		}
		if n, _ := activeListings(t, e, conn.Data.ID); n != 0 {
			t.Fatalf("after end active_listing_count = %d", n)
		}
		listingDo(e, http.MethodPost, id, "activate", v(6)).WantProblem(t, 409, "LISTING_STATE_CONFLICT")
		listingDo(e, http.MethodPatch, id, "", map[string]any{"expected_version": 6, "channel_price": 1}).WantProblem(t, 409, "LISTING_STATE_CONFLICT")

		var one listingBody
		e.Get("/vendors/"+e.Vendor.ID+"/listings/"+id).JSON(t, &one)
		if one.Data.Status != "ended" || one.Data.Version != 6 {
			t.Fatalf("get: %+v", one.Data)
		}
		for q, want := range map[string]int{"": 1, "?status=ended": 1, "?status=active": 0, "?connection_id=" + conn.Data.ID: 1,
			"?product_id=" + p.Data.ID: 1, "?product_id=prd_none": 0} {
			raw := e.Get("/vendors/" + e.Vendor.ID + "/listings" + q)
			var lst struct{ Data []map[string]any }
			raw.JSON(t, &lst)
			if raw.Status != 200 || len(lst.Data) != want {
				t.Fatalf("list %q: %d %s", q, raw.Status, raw.Body)
			}
		}
		e.Get("/vendors/"+e.Vendor.ID+"/listings?status=gone").WantProblem(t, 400, "INVALID_PARAMETER")

		// With no live listing the connection disconnects, and then takes no listing changes.
		_, cv = activeListings(t, e, conn.Data.ID)
		if r := post(e, "/connections/"+conn.Data.ID+"/disconnect", v(cv)); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		p2 := mustCreate(t, e, "lst-product-2", simpleProduct("lst-2"))
		createListing(e, "lst-create-3", map[string]any{"connection_id": conn.Data.ID, "product_id": p2.Data.ID}).WantProblem(t, 409, "CONNECTION_STATE_CONFLICT")

		// A connection that sources the base price takes no channel price.
		src := map[string]string{"catalog": "destination", "base_price": "source", "inventory": "destination", "order_ingress": "enabled", "external_order_fulfillment": "moku"}
		connB := mustConnection(t, e, "lst-conn-b", connectionBody("marketplace_b", src))
		createListing(e, "lst-create-4", map[string]any{"connection_id": connB.Data.ID, "product_id": p.Data.ID, "channel_price": 100}).
			WantProblem(t, 409, "CHANNEL_PRICE_NOT_ALLOWED")
		lb := mustListing(t, createListing(e, "lst-create-5", map[string]any{"connection_id": connB.Data.ID, "product_id": p.Data.ID}), 201)
		if lb.Data.Sync.Price || !lb.Data.Sync.Stock {
			t.Fatalf("sync on a base-price source: %+v", lb.Data.Sync)
		}
		listingDo(e, http.MethodPatch, lb.Data.ID, "", map[string]any{"expected_version": 1, "channel_price": 100}).WantProblem(t, 409, "CHANNEL_PRICE_NOT_ALLOWED")

		seen := map[string]bool{}
		for _, ty := range eventTypes(t, e) {
			seen[ty] = true
		}
		for _, ty := range []string{"listing.created", "listing.updated", "listing.activated", "listing.paused", "listing.resumed", "listing.ended"} {
			if !seen[ty] {
				t.Fatalf("no %s event", ty)
			}
		}
	})
}

// TestListingCounterConcurrent moves many listings of one connection at
// once; active_listing_count ends equal to the active and paused listings.
func TestListingCounterConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		conn := mustConnection(t, e, "cnt-conn", connectionBody("marketplace_a", destinationRoles))
		const n = 8
		ids := make([]string, n)
		for i := range ids {
			p := mustCreate(t, e, fmt.Sprintf("cnt-product-%d", i), simpleProduct(fmt.Sprintf("cnt-%d", i)))
			ids[i] = mustListing(t, createListing(e, fmt.Sprintf("cnt-listing-%d", i), map[string]any{"connection_id": conn.Data.ID, "product_id": p.Data.ID}), 201).Data.ID
		}
		var wg sync.WaitGroup
		for i, id := range ids {
			wg.Add(1)
			go func(i int, id string) {
				defer wg.Done()
				// Every listing is activated; some are then paused, some ended.
				actions := []string{"activate"}
				switch i % 3 {
				case 1:
					actions = append(actions, "pause")
				case 2:
					actions = append(actions, "pause", "end")
				}
				for k, a := range actions {
					if r := listingDo(e, http.MethodPost, id, a, map[string]any{"expected_version": k + 1}); r.Status != 200 {
						t.Errorf("%s %s: %d %s", a, id, r.Status, r.Body)
					}
				}
			}(i, id)
		}
		wg.Wait()
		var live struct{ Data []map[string]any }
		want := 0
		for _, st := range []string{"active", "paused"} {
			e.Get("/vendors/"+e.Vendor.ID+"/listings?status="+st).JSON(t, &live)
			want += len(live.Data)
		}
		if got, _ := activeListings(t, e, conn.Data.ID); got != int64(want) || want != n-n/3 {
			t.Fatalf("active_listing_count = %d, live listings %d, want %d", got, want, n-n/3)
		}
	})
}

// TestListingOfArchivedProduct: an archived product cannot be listed, and
// its live listings can only be ended.
func TestListingOfArchivedProduct(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "arch-product", simpleProduct("arch"))
		conn := mustConnection(t, e, "arch-conn", connectionBody("marketplace_a", destinationRoles))
		l := mustListing(t, createListing(e, "arch-listing", map[string]any{"connection_id": conn.Data.ID, "product_id": p.Data.ID}), 201)
		mustListing(t, listingDo(e, http.MethodPost, l.Data.ID, "activate", map[string]any{"expected_version": 1}), 200)
		if r := post(e, "/products/"+p.Data.ID+"/archive", map[string]any{"expected_revision": 1}); r.Status != 200 {
			t.Fatalf("archive: %d %s", r.Status, r.Body)
		}
		listingDo(e, http.MethodPost, l.Data.ID, "pause", map[string]any{"expected_version": 2}).WantProblem(t, 409, "PRODUCT_STATE_CONFLICT")
		listingDo(e, http.MethodPatch, l.Data.ID, "", map[string]any{"expected_version": 2, "external_listing_id": "x"}).WantProblem(t, 409, "PRODUCT_STATE_CONFLICT")
		if got := mustListing(t, listingDo(e, http.MethodPost, l.Data.ID, "end", map[string]any{"expected_version": 2}), 200); got.Data.Status != "ended" {
			t.Fatalf("end: %+v", got.Data)
		}
		if n, _ := activeListings(t, e, conn.Data.ID); n != 0 {
			t.Fatalf("active_listing_count = %d", n)
		}
		p2 := mustCreate(t, e, "arch-product-2", simpleProduct("arch-2"))
		post(e, "/products/"+p2.Data.ID+"/archive", map[string]any{"expected_revision": 1})
		createListing(e, "arch-listing-2", map[string]any{"connection_id": conn.Data.ID, "product_id": p2.Data.ID}).WantProblem(t, 409, "PRODUCT_STATE_CONFLICT")
	})
}

// TestListingActivateRacesDisconnect: an activation and a disconnect of
// the same connection at once never both win.
func TestListingActivateRacesDisconnect(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "race-product", simpleProduct("race"))
		for round := 0; round < 5; round++ {
			conn := mustConnection(t, e, fmt.Sprintf("race-conn-%d", round), connectionBody("marketplace_a", destinationRoles))
			l := mustListing(t, createListing(e, fmt.Sprintf("race-listing-%d", round), map[string]any{"connection_id": conn.Data.ID, "product_id": p.Data.ID}), 201)
			var activate, disconnect *apitest.Resp
			var wg sync.WaitGroup
			wg.Add(2)
			go func() {
				defer wg.Done()
				activate = listingDo(e, http.MethodPost, l.Data.ID, "activate", map[string]any{"expected_version": 1})
			}()
			go func() {
				defer wg.Done()
				disconnect = post(e, "/connections/"+conn.Data.ID+"/disconnect", map[string]any{"expected_version": conn.Data.Version})
			}()
			wg.Wait()
			n, _ := activeListings(t, e, conn.Data.ID)
			switch {
			case activate.Status == 200 && disconnect.Status == 409 && n == 1:
			case disconnect.Status == 200 && activate.Status == 409 && n == 0:
			default:
				t.Fatalf("round %d: activate %d %s, disconnect %d %s, active_listing_count %d", round, activate.Status, activate.Body, disconnect.Status, disconnect.Body, n)
			}
			if activate.Status == 200 {
				listingDo(e, http.MethodPost, l.Data.ID, "end", map[string]any{"expected_version": 2})
			}
		}
	})
}
