package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

type connBody struct {
	Data struct {
		ID                string
		Status            string
		Provider          string
		ExternalAccountID string `json:"external_account_id"`
		Version           int64
		Roles             map[string]string
		Health            struct {
			State    string
			Blockers []string
		}
		ActiveReservationCount int64 `json:"active_reservation_count"`
		ActiveListingCount     int64 `json:"active_listing_count"`
	}
}

var destinationRoles = map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "destination",
	"order_ingress": "enabled", "external_order_fulfillment": "moku"}

func connectionBody(provider string, roles any) map[string]any {
	return map[string]any{"provider": provider, "external_account_id": "acct-1", "display_name": "Main store", "roles": roles}
}

func createConnection(t *testing.T, e *apitest.Env, key string, body any) (*apitest.Resp, connBody) {
	t.Helper()
	return apitest.Create[connBody](t, e, "/vendors/"+e.Vendor.ID+"/connections", key, body)
}

func mustConnection(t *testing.T, e *apitest.Env, key string, body any) connBody {
	t.Helper()
	return apitest.MustCreate[connBody](t, e, "/vendors/"+e.Vendor.ID+"/connections", key, body)
}

func masters(t *testing.T, e *apitest.Env) (catalog, basePrice, inventory string) {
	t.Helper()
	var raw struct {
		Data map[string]any `json:"data"`
	}
	r := e.Get("/vendors/" + e.Vendor.ID + "/authority")
	if r.Status != 200 {
		t.Fatalf("authority: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &raw)
	name := func(m any) string {
		mm := m.(map[string]any)
		if mm["type"] == "moku" {
			if mm["connection_id"] != nil {
				t.Fatalf("moku master with a connection id: %v", mm)
			}
			return "moku"
		}
		return mm["connection_id"].(string)
	}
	pools := raw.Data["inventory_pools"].([]any)
	if len(pools) != 1 || pools[0].(map[string]any)["stock_pool_id"] != "default" || raw.Data["vendor_id"] != e.Vendor.ID {
		t.Fatalf("authority shape: %s", r.Body)
	}
	return name(raw.Data["catalog_master"]), name(raw.Data["base_price_master"]), name(pools[0].(map[string]any)["master"])
}

func TestConnectionCreate(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		body := connectionBody("marketplace_a", destinationRoles)
		body["external_account_id"] = "  seller-42  "
		r, c := createConnection(t, e, "conn.key:0001", body)
		d := c.Data
		if r.Status != 201 || d.Status != "active" || d.Version != 1 || d.Health.State != "unknown" || d.Health.Blockers == nil ||
			len(d.Health.Blockers) != 0 || d.ExternalAccountID != "seller-42" || d.ActiveReservationCount != 0 {
			t.Fatalf("created: %d %s", r.Status, r.Body)
		}
		replay, _ := createConnection(t, e, "conn.key:0001", body)
		if string(replay.Body) != string(r.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %s", replay.Body)
		}
		if g := e.Get("/vendors/" + e.Vendor.ID + "/connections/" + d.ID); g.Status != 200 {
			t.Fatalf("get: %d", g.Status)
		}
		var list struct{ Data []any }
		e.Get("/vendors/"+e.Vendor.ID+"/connections").JSON(t, &list)
		if len(list.Data) != 1 {
			t.Fatalf("list has %d", len(list.Data))
		}
		e.Get("/vendors/"+e.Vendor.ID+"/connections/conn_missing").WantProblem(t, 404, "NOT_FOUND")

		bad := []struct {
			name   string
			mutate func(map[string]any)
			field  string
		}{
			{"unknown provider", func(b map[string]any) { b["provider"] = "ebay" }, "provider"},
			{"blank account", func(b map[string]any) { b["external_account_id"] = "   " }, "external_account_id"},
			{"257 chars", func(b map[string]any) { b["external_account_id"] = strings.Repeat("a", 257) }, "external_account_id"},
			{"257 bytes", func(b map[string]any) { b["external_account_id"] = strings.Repeat("é", 128) + "a" }, "external_account_id"},
			{"empty name", func(b map[string]any) { b["display_name"] = "" }, "display_name"},
			{"121 chars", func(b map[string]any) { b["display_name"] = strings.Repeat("n", 121) }, "display_name"},
			{"missing role", func(b map[string]any) {
				b["roles"] = map[string]string{"catalog": "source", "base_price": "source", "inventory": "source", "order_ingress": "enabled"}
			}, "roles.external_order_fulfillment"},
			{"extra role", func(b map[string]any) {
				r := map[string]string{"listings": "source"}
				for k, v := range destinationRoles {
					r[k] = v
				}
				b["roles"] = r
			}, "roles.listings"},
			{"bad role value", func(b map[string]any) {
				r := map[string]string{}
				for k, v := range destinationRoles {
					r[k] = v
				}
				r["order_ingress"] = "source"
				b["roles"] = r
			}, "roles.order_ingress"},
			{"preset on a marketplace", func(b map[string]any) { b["roles"] = "store_source" }, "roles"},
			{"unknown preset", func(b map[string]any) { b["provider"], b["roles"] = "store_plugin", "everything" }, "roles"},
			{"extra property", func(b map[string]any) { b["status"] = "paused" }, "status"},
		}
		for i, tc := range bad {
			b := connectionBody("marketplace_a", destinationRoles)
			tc.mutate(b)
			r, _ := createConnection(t, e, fmt.Sprintf("bad-conn-%02d", i), b)
			if p := r.WantProblem(t, 400, "INVALID_REQUEST"); !strings.HasPrefix(p.Detail, tc.field) {
				t.Errorf("%s: detail %q does not start with %s", tc.name, p.Detail, tc.field)
			}
		}
		// 256 two-byte characters are 512 bytes: too many; 128 are exactly 256.
		ok := connectionBody("marketplace_b", destinationRoles)
		ok["external_account_id"] = strings.Repeat("é", 128)
		mustConnection(t, e, "conn-bytes-ok", ok)
		// The key pattern allows '.' and ':', refuses others.
		r, _ = createConnection(t, e, "bad key!", body)
		r.WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")
	})
}

func TestAuthorityClaims(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		if c, b, i := masters(t, e); c != "moku" || b != "moku" || i != "moku" {
			t.Fatalf("initial masters %s %s %s", c, b, i)
		}
		store := mustConnection(t, e, "claim-key-1", connectionBody("store_plugin", "store_catalog_source"))
		if store.Data.Roles["catalog"] != "source" || store.Data.Roles["inventory"] != "destination" || store.Data.Roles["external_order_fulfillment"] != "moku" {
			t.Fatalf("preset expanded to %v", store.Data.Roles)
		}
		if c, b, i := masters(t, e); c != store.Data.ID || b != store.Data.ID || i != "moku" {
			t.Fatalf("masters after claim %s %s %s", c, b, i)
		}
		// A second source for the catalog is refused, and nothing is created.
		second := connectionBody("marketplace_c", map[string]string{"catalog": "source", "base_price": "disabled", "inventory": "disabled",
			"order_ingress": "disabled", "external_order_fulfillment": "channel"})
		r, _ := createConnection(t, e, "claim-key-2", second)
		if p := r.WantProblem(t, 409, "AUTHORITY_CONFLICT"); !strings.Contains(p.Detail, store.Data.ID) {
			t.Fatalf("detail %q", p.Detail)
		}
		var list struct{ Data []any }
		e.Get("/vendors/"+e.Vendor.ID+"/connections").JSON(t, &list)
		if len(list.Data) != 1 {
			t.Fatalf("%d connections after a refused create", len(list.Data))
		}
		// Product writes are fenced by the catalog authority.
		body := simpleProduct("fenced")
		r, _ = create(t, e, "fenced-1", body)
		r.WantProblem(t, 409, "AUTHORITY_MISMATCH")
		body["catalog_authority_connection_id"], body["base_price_authority_connection_id"] = store.Data.ID, store.Data.ID
		p := mustCreate(t, e, "fenced-2", body)
		post(e, "/products/"+p.Data.ID+"/archive", map[string]any{"expected_revision": 1}).WantProblem(t, 409, "AUTHORITY_MISMATCH")
		if r := post(e, "/products/"+p.Data.ID+"/archive", map[string]any{"expected_revision": 1,
			"catalog_authority_connection_id": store.Data.ID, "base_price_authority_connection_id": store.Data.ID}); r.Status != 200 {
			t.Fatalf("archive with bindings: %d %s", r.Status, r.Body)
		}
		// Publish ignores authority.
		if r := post(e, "/products/"+p.Data.ID+"/restore", map[string]any{"expected_revision": 2,
			"catalog_authority_connection_id": store.Data.ID, "base_price_authority_connection_id": store.Data.ID}); r.Status != 200 {
			t.Fatalf("restore: %d %s", r.Status, r.Body)
		}
		if r := post(e, "/products/"+p.Data.ID+"/unpublish", map[string]any{"expected_revision": 3}); r.Status != 200 {
			t.Fatalf("unpublish without bindings: %d %s", r.Status, r.Body)
		}
		// Disconnecting gives the claims back.
		r = post(e, "/connections/"+store.Data.ID+"/disconnect", map[string]any{"expected_version": 1})
		if r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		if c, b, i := masters(t, e); c != "moku" || b != "moku" || i != "moku" {
			t.Fatalf("masters after disconnect %s %s %s", c, b, i)
		}
		mustConnection(t, e, "claim-key-3", second)
	})
}

func TestConnectionTransitions(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		c := mustConnection(t, e, "trans-key-1", connectionBody("marketplace_a", destinationRoles))
		path := "/connections/" + c.Data.ID + "/"
		version := int64(1)
		steps := []struct {
			action string
			stale  bool
			status int
			code   string
			to     string
		}{
			{"resume", false, 200, "", "active"}, // no-op
			{"pause", true, 409, "CONNECTION_VERSION_CONFLICT", ""},
			{"pause", false, 200, "", "paused"},
			{"pause", false, 200, "", "paused"}, // no-op
			{"resume", false, 200, "", "active"},
			{"pause", false, 200, "", "paused"},
			{"disconnect", false, 200, "", "disconnected"},
			{"disconnect", false, 200, "", "disconnected"}, // no-op
			{"resume", false, 409, "CONNECTION_STATE_CONFLICT", ""},
			{"pause", false, 409, "CONNECTION_STATE_CONFLICT", ""},
		}
		for i, s := range steps {
			v := version
			if s.stale {
				v--
			}
			r := post(e, path+s.action, map[string]any{"expected_version": v})
			if s.code != "" {
				r.WantProblem(t, s.status, s.code)
				continue
			}
			var got connBody
			r.JSON(t, &got)
			if r.Status != 200 || got.Data.Status != s.to {
				t.Fatalf("step %d %s: %d %s", i, s.action, r.Status, r.Body)
			}
			version = got.Data.Version
		}
		if version != 5 {
			t.Fatalf("version %d after four changes, want 5", version)
		}
		e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + c.Data.ID + "/roles", Token: e.Token,
			Body: map[string]any{"expected_version": version, "roles": destinationRoles}}).WantProblem(t, 409, "CONNECTION_STATE_CONFLICT")
		post(e, "/connections/conn_missing/pause", map[string]any{"expected_version": 1}).WantProblem(t, 404, "NOT_FOUND")
	})
}

func TestConnectionHealth(t *testing.T) {
	e := catalogEnv(t, apitest.SQLite)
	c := mustConnection(t, e, "health-key-1", connectionBody("marketplace_a", destinationRoles))
	path := "/connections/" + c.Data.ID + "/health"
	r := post(e, path, map[string]any{"state": "degraded", "last_observed_at": "2026-03-04T10:00:00Z", "last_success_at": nil, "blockers": []string{"token expired"}})
	if r.Status != 200 {
		t.Fatalf("report: %d %s", r.Status, r.Body)
	}
	var got connBody
	e.Get("/vendors/"+e.Vendor.ID+"/connections/"+c.Data.ID).JSON(t, &got)
	if got.Data.Health.State != "degraded" || len(got.Data.Health.Blockers) != 1 || got.Data.Version != 1 {
		t.Fatalf("after report: %+v", got.Data)
	}
	blockers := make([]string, 21)
	for i := range blockers {
		blockers[i] = fmt.Sprintf("b%d", i)
	}
	post(e, path, map[string]any{"state": "blocked", "blockers": blockers}).WantProblem(t, 400, "INVALID_REQUEST")
	post(e, path, map[string]any{"state": "fine"}).WantProblem(t, 400, "INVALID_REQUEST")
	post(e, path, map[string]any{"state": "healthy", "last_success_at": "yesterday"}).WantProblem(t, 400, "INVALID_REQUEST")
	post(e, path, map[string]any{"state": "healthy", "blockers": []string{strings.Repeat("x", 161)}}).WantProblem(t, 400, "INVALID_REQUEST")
	if r := e.Get("/vendors/" + e.Vendor.ID + "/connections/" + c.Data.ID + "/health"); r.Status != 200 || !strings.Contains(string(r.Body), "degraded") {
		t.Fatalf("GET health: %d %s", r.Status, r.Body)
	}
}
