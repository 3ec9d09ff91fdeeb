package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// TestSideDoorsNeedTheFrontDoorsScopes reproduces finding 3 of issue 17:
// a token with only jobs.write, connections.write and connections.read
// made a connection the Stock Pool's source and set on_hand through an
// inventory sync job. Each side door now asks for the scope of the door it
// goes around (inventory.write for stock, products.write for catalog and
// base price), refuses with 403 and changes nothing.
func TestSideDoorsNeedTheFrontDoorsScopes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		limited := e.NewToken(e.Vendor.ID, auth.JobsWrite, auth.ConnectionsWrite, auth.ConnectionsRead)
		authorityBefore := e.Get("/vendors/" + e.Vendor.ID + "/authority").Body

		// The exploit: claim the Stock Pool, then post the count.
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/connections", Token: limited,
			Body: connectionBody("marketplace_c", sourceRoles), Headers: map[string]string{"Idempotency-Key": "side-door-conn-1"}})
		r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		if r.Header.Get("WWW-Authenticate") == "" {
			t.Fatal("403 without WWW-Authenticate")
		}
		r = syncSubmit(e, limited, "side-door-sync-1", map[string]any{"connection_id": f.master, "kind": "inventory", "items": stockItems(f.items[0], 4242)})
		r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		for _, k := range []string{"price", "catalog"} {
			body := map[string]any{"connection_id": f.master, "kind": k, "items": []map[string]any{{"product_id": f.product, "price": 1}}}
			if k == "catalog" {
				body["items"] = []map[string]any{{"product_id": f.product, "name": "Renamed", "catalog_status": "active"}}
			}
			syncSubmit(e, limited, "side-door-sync-"+k, body).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		}
		// Re-roling a destination into a source is the same door.
		var conn connBody
		e.Get("/vendors/"+e.Vendor.ID+"/connections/"+f.dest).JSON(t, &conn)
		r = e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + f.dest + "/roles", Token: limited,
			Body: map[string]any{"expected_version": conn.Data.Version, "roles": sourceRoles}})
		r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		// Inventory scope alone does not open catalog and base price.
		invOnly := e.NewToken(e.Vendor.ID, auth.JobsWrite, auth.ConnectionsWrite, auth.ConnectionsRead, auth.InventoryWrite)
		r = e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/connections", Token: invOnly,
			Body: connectionBody("marketplace_c", sourceRoles), Headers: map[string]string{"Idempotency-Key": "side-door-conn-2"}})
		r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")

		if kind == apitest.SQLite {
			// Whatever the refusals queued would run now.
			if err := e.App.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if oh, _ := itemState(t, e, f.items[0]); oh != 10 {
			t.Fatalf("on_hand %d, want 10 untouched", oh)
		}
		if got := e.Get("/vendors/" + e.Vendor.ID + "/authority").Body; string(got) != string(authorityBefore) {
			t.Fatalf("authority changed:\n%s\n%s", authorityBefore, got)
		}
		var jobs struct{ Data []any }
		e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs").JSON(t, &jobs)
		var conns struct{ Data []any }
		e.Get("/vendors/"+e.Vendor.ID+"/connections").JSON(t, &conns)
		if len(jobs.Data) != 0 || len(conns.Data) != 2 {
			t.Fatalf("%d sync jobs and %d connections after refusals", len(jobs.Data), len(conns.Data))
		}

		// The front door's scope opens the side door.
		full := e.NewToken(e.Vendor.ID, auth.JobsWrite, auth.ConnectionsWrite, auth.InventoryWrite)
		ack := mustSync(t, syncSubmit(e, full, "side-door-sync-ok", map[string]any{"connection_id": f.master, "kind": "inventory", "items": stockItems(f.items[0], 42)}))
		syncWork(t, f, ack.Data.ID)
		if oh, _ := itemState(t, e, f.items[0]); oh != 42 {
			t.Fatalf("on_hand %d after an admitted job, want 42", oh)
		}
	})
}

// TestAcceptingASourcePresetNeedsItsScopes: accepting a store pairing with
// a preset that makes the store a source needs that domain's scope too.
func TestAcceptingASourcePresetNeedsItsScopes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		pr := createPairing(t, e, "side-door-pairing")
		token := mustExchange(t, e, *pr.Data.Code)
		if r := discover(e, token, discoveryReport); r.Status != 200 {
			t.Fatalf("discover: %d %s", r.Status, r.Body)
		}
		limited := e.NewToken(e.Vendor.ID, auth.ConnectionsWrite, auth.ConnectionsRead, auth.ProductsWrite)
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings/" + pr.Data.ID + "/accept", Token: limited,
			Body: map[string]any{"expected_version": 3, "preset": "store_source"}})
		r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		if r := accept(e, pr.Data.ID, map[string]any{"expected_version": 3, "preset": "store_source"}); r.Status != http.StatusOK {
			t.Fatalf("accept with every scope: %d %s", r.Status, r.Body)
		}
	})
}
