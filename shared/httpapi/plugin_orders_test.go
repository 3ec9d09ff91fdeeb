package httpapi_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// acceptedPlugin runs the pairing flow up to the seller's acceptance with
// preset: it returns the plugin's discovery credential, the pairing and
// the connection. Operational writes still wait for the review.
func acceptedPlugin(t *testing.T, e *apitest.Env, key, preset string) (token, pairingID, connID string) {
	t.Helper()
	pr := createPairing(t, e, key)
	token = mustExchange(t, e, *pr.Data.Code)
	if r := discover(e, token, discoveryReport); r.Status != 200 {
		t.Fatalf("discover: %d %s", r.Status, r.Body)
	}
	r := accept(e, pr.Data.ID, map[string]any{"expected_version": 3, "preset": preset})
	var acc pairingBody
	r.JSON(t, &acc)
	if r.Status != 200 {
		t.Fatalf("accept: %d %s", r.Status, r.Body)
	}
	return token, pr.Data.ID, acc.Data.Acceptance.ConnectionID
}

// TestStorePluginOrdersAndHealth: the plugin imports its store's orders
// and reports health for its own connection, only after the review, with
// its own idempotency receipts; it reads back only its connection's orders.
func TestStorePluginOrdersAndHealth(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "plugin-order-product", simpleProduct("plugin-order"))
		item := catalog.InventoryItemID(p.Data.ID, 0)
		if r := adjust(e, item, "plugin-order-stock", map[string]any{"target_on_hand": 5, "expected_version": 1}); r.Status != 200 {
			t.Fatalf("stock: %d %s", r.Status, r.Body)
		}
		token, pairingID, connID := acceptedPlugin(t, e, "plugin-order-pairing", "service_source")
		post := func(path, key string, body any) *apitest.Resp {
			return e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/current/" + path, Token: token, Body: body,
				Headers: map[string]string{"Idempotency-Key": key}})
		}
		order := map[string]any{"external_order_id": "SHOP-1001", "lines": []any{xoLine("1", item, 2)}}
		health := map[string]any{"state": "healthy", "last_observed_at": "2026-11-22T07:00:00Z", "last_success_at": "2026-11-22T07:00:00Z", "blockers": []string{}}

		// Before the review: refused, nothing stored.
		post("external-orders", "plugin-order-0001", order).WantProblem(t, 403, "PAIRING_NOT_ACTIVE")
		post("health", "", health).WantProblem(t, 403, "PAIRING_NOT_ACTIVE")
		var list struct{ Data []xoBody }
		e.Get("/vendors/"+e.Vendor.ID+"/external-orders").JSON(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("orders before the review: %+v", list.Data)
		}

		if err := review(t, e, pairingID); err != nil {
			t.Fatal(err)
		}
		// The body names no connection: the pairing does.
		post("external-orders", "plugin-order-0001", map[string]any{"connection_id": connID, "external_order_id": "SHOP-1001",
			"lines": []any{xoLine("1", item, 2)}}).WantProblem(t, 400, "INVALID_REQUEST")
		first := post("external-orders", "plugin-order-0001", order)
		o := mustXO(t, first, 201, "reserved")
		var got struct {
			Data struct {
				ConnectionID string `json:"connection_id"`
			}
		}
		first.JSON(t, &got)
		if got.Data.ConnectionID != connID {
			t.Fatalf("imported for %s, want %s", got.Data.ConnectionID, connID)
		}
		if again := post("external-orders", "plugin-order-0001", order); !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", again.Status, again.Body)
		}
		// A seller's token has receipts of its own: the same key there is
		// another request, answered with the same order.
		if r := importXO(e, "plugin-order-0001", connID, "SHOP-1001", xoLine("1", item, 2)); r.Status != 200 || r.Header.Get("Idempotent-Replayed") == "true" {
			t.Fatalf("token import of the same order: %d %s", r.Status, r.Body)
		}
		wantBuckets(t, stockFixture{e: e, item: item}, 5, 2, 3)

		read := func(id string) *apitest.Resp {
			return e.Do(apitest.Req{Path: "/store-pairings/current/external-orders/" + id, Token: token})
		}
		mustXO(t, read(o.Data.ID), 200, "reserved")
		other := mustConnection(t, e, "plugin-order-other", connectionBody("marketplace_a", destinationRoles)).Data.ID
		theirs := mustXO(t, importXO(e, "plugin-order-theirs", other, "MKT-1", xoLine("1", item, 1)), 201, "reserved")
		read(theirs.Data.ID).WantProblem(t, 404, "NOT_FOUND")
		read("xo_missing").WantProblem(t, 404, "NOT_FOUND")

		if r := post("health", "", health); r.Status != 200 {
			t.Fatalf("health: %d %s", r.Status, r.Body)
		}
		var conn struct {
			Data struct{ Health struct{ State string } }
		}
		e.Get("/vendors/"+e.Vendor.ID+"/connections/"+connID).JSON(t, &conn)
		if conn.Data.Health.State != "healthy" {
			t.Fatalf("connection health %q", conn.Data.Health.State)
		}
		// The plugin's credential reaches no token route, and a token none of the plugin's.
		e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/external-orders", Token: token, Body: order,
			Headers: map[string]string{"Idempotency-Key": "plugin-order-0002"}}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/current/external-orders", Token: e.Token, Body: order,
			Headers: map[string]string{"Idempotency-Key": "plugin-order-0003"}}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")

		// Revoked: the credential is dead.
		if r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings/" + pairingID + "/revoke", Token: e.Token}); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		post("external-orders", "plugin-order-0004", order).WantProblem(t, 401, "UNAUTHENTICATED")
	})
}
