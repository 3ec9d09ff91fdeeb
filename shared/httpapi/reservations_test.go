package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
)

type resBody struct {
	Data struct {
		ID        string
		Status    string
		Version   int64
		Quantity  int64
		ExpiresAt time.Time `json:"expires_at"`
	}
}

// stockFixture is a vendor with a connection and one item with on_hand stock.
type stockFixture struct {
	e    *apitest.Env
	conn string
	item string
}

func newStock(t *testing.T, kind apitest.StoreKind, onHand int) stockFixture {
	e := catalogEnv(t, kind)
	c := mustConnection(t, e, "stock-conn", connectionBody("marketplace_a", destinationRoles))
	p := mustCreate(t, e, "stock-product", simpleProduct("stock"))
	item := catalog.InventoryItemID(p.Data.ID, 0)
	if r := adjust(e, item, "stock-adjust", map[string]any{"target_on_hand": onHand, "expected_version": 1}); r.Status != 200 {
		t.Fatalf("stock: %d %s", r.Status, r.Body)
	}
	return stockFixture{e: e, conn: c.Data.ID, item: item}
}

func (f stockFixture) reserve(key string, qty int, extra ...any) *apitest.Resp {
	body := map[string]any{"connection_id": f.conn, "inventory_item_id": f.item, "quantity": qty}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	return f.e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + f.e.Vendor.ID + "/inventory-reservations", Token: f.e.Token,
		Body: body, Headers: map[string]string{"Idempotency-Key": key}})
}

func (f stockFixture) move(id, action, key string, body any) *apitest.Resp {
	return f.e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + f.e.Vendor.ID + "/inventory-reservations/" + id + "/" + action,
		Token: f.e.Token, Body: body, Headers: map[string]string{"Idempotency-Key": key}})
}

func (f stockFixture) buckets(t *testing.T) (onHand, reserved, available, version int64) {
	t.Helper()
	var got itemBody
	f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-items/"+f.item).JSON(t, &got)
	return got.Data.OnHand, got.Data.Reserved, got.Data.Available, got.Data.Version
}

func (f stockFixture) connReservations(t *testing.T) int64 {
	t.Helper()
	var c connBody
	f.e.Get("/vendors/"+f.e.Vendor.ID+"/connections/"+f.conn).JSON(t, &c)
	return c.Data.ActiveReservationCount
}

func (f stockFixture) serviceReservations(t *testing.T) int64 {
	t.Helper()
	it, err := f.e.Store.Get(context.Background(), datamodel.AuthorityKey(f.e.Vendor.ID))
	if err != nil {
		t.Fatal(err)
	}
	return it.Nums[datamodel.ServiceReservationsAttr]
}

func (f stockFixture) want(t *testing.T, onHand, reserved, available, active int64) {
	t.Helper()
	oh, rs, av, _ := f.buckets(t)
	if oh != onHand || rs != reserved || av != available {
		t.Fatalf("buckets on_hand %d reserved %d available %d, want %d %d %d", oh, rs, av, onHand, reserved, available)
	}
	if n := f.connReservations(t); n != active {
		t.Fatalf("connection counts %d active reservations, want %d", n, active)
	}
	if n := f.serviceReservations(t); n != active {
		t.Fatalf("authority counts %d service reservations, want %d", n, active)
	}
}

func TestReservationLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		r := f.reserve("res-key-1", 3, "reference", "cart-9")
		var a resBody
		r.JSON(t, &a)
		if r.Status != 201 || a.Data.Status != "active" || a.Data.Version != 1 || !a.Data.ExpiresAt.Equal(f.e.Clock.Now().Add(15*time.Minute).Truncate(time.Second)) && a.Data.ExpiresAt.IsZero() {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		f.want(t, 10, 3, 7, 1)
		// An exact replay holds nothing more.
		if again := f.reserve("res-key-1", 3, "reference", "cart-9"); string(again.Body) != string(r.Body) {
			t.Fatalf("replay: %s", again.Body)
		}
		f.want(t, 10, 3, 7, 1)
		f.reserve("res-key-2", 8).WantProblem(t, 409, "INSUFFICIENT_STOCK")
		// Adjustments respect the reservation floor.
		_, _, _, v := f.buckets(t)
		adjust(f.e, f.item, "res-floor-1", map[string]any{"target_on_hand": 2, "expected_version": v}).WantProblem(t, 409, "INVENTORY_BELOW_RESERVED")

		// Renew, then commit: on_hand and reserved fall.
		rn := f.move(a.Data.ID, "renew", "res-renew-1", map[string]any{"expected_version": 1, "expires_in_seconds": 3600})
		var renewed resBody
		rn.JSON(t, &renewed)
		if rn.Status != 200 || renewed.Data.Version != 2 || !renewed.Data.ExpiresAt.After(a.Data.ExpiresAt) {
			t.Fatalf("renew: %d %s", rn.Status, rn.Body)
		}
		f.move(a.Data.ID, "commit", "res-commit-0", map[string]any{"expected_version": 1}).WantProblem(t, 409, "RESERVATION_VERSION_CONFLICT")
		cm := f.move(a.Data.ID, "commit", "res-commit-1", map[string]any{"expected_version": 2})
		if cm.Status != 200 || !strings.Contains(string(cm.Body), `"committed"`) {
			t.Fatalf("commit: %d %s", cm.Status, cm.Body)
		}
		f.want(t, 7, 0, 7, 0)
		f.move(a.Data.ID, "release", "res-release-0", map[string]any{"expected_version": 3}).WantProblem(t, 409, "RESERVATION_STATE_CONFLICT")
		f.move(a.Data.ID, "renew", "res-renew-2", map[string]any{"expected_version": 3}).WantProblem(t, 409, "RESERVATION_STATE_CONFLICT")
		// Replaying the commit returns the original, not a conflict.
		if again := f.move(a.Data.ID, "commit", "res-commit-1", map[string]any{"expected_version": 2}); string(again.Body) != string(cm.Body) {
			t.Fatalf("commit replay: %d %s", again.Status, again.Body)
		}

		// Release returns stock to available.
		var b resBody
		f.reserve("res-key-3", 4).JSON(t, &b)
		f.want(t, 7, 4, 3, 1)
		if r := f.move(b.Data.ID, "release", "res-release-1", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("release: %d %s", r.Status, r.Body)
		}
		f.want(t, 7, 0, 7, 0)

		var list struct {
			Data []struct{ Status string }
		}
		f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-reservations?status=released").JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0].Status != "released" {
			t.Fatalf("filtered list: %+v", list.Data)
		}
		f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-reservations?status=gone").WantProblem(t, 400, "INVALID_PARAMETER")
		f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-reservations/res_missing").WantProblem(t, 404, "NOT_FOUND")

		want := "reservation.created,reservation.renewed,reservation.committed,reservation.created,reservation.released"
		var got []string
		for _, ty := range eventTypes(t, f.e) {
			if strings.HasPrefix(ty, "reservation.") {
				got = append(got, ty)
			}
		}
		if strings.Join(got, ",") != want {
			t.Fatalf("events %v", got)
		}
	})
}

func TestReservationRules(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 5)
		f.reserve("rule-key-1", 0).WantProblem(t, 400, "INVALID_REQUEST")
		f.reserve("rule-key-2", 1, "expires_in_seconds", 59).WantProblem(t, 400, "INVALID_REQUEST")
		f.reserve("rule-key-3", 1, "expires_in_seconds", 86401).WantProblem(t, 400, "INVALID_REQUEST")
		f.reserve("rule-key-4", 1, "connection_id", "conn_missing").WantProblem(t, 404, "NOT_FOUND")
		f.reserve("rule-key-5", 1, "inventory_item_id", "inv_missing_000").WantProblem(t, 404, "NOT_FOUND")
		// Drafts are active in the catalog and can be held; archived products cannot.
		productID, _, _ := catalog.ParseInventoryItemID(f.item)
		post(f.e, "/products/"+productID+"/archive", map[string]any{"expected_revision": 1})
		f.reserve("rule-key-5b", 1).WantProblem(t, 409, "PRODUCT_STATE_CONFLICT")
		post(f.e, "/products/"+productID+"/restore", map[string]any{"expected_revision": 2})
		// A paused connection takes no new holds.
		post(f.e, "/connections/"+f.conn+"/pause", map[string]any{"expected_version": 1})
		f.reserve("rule-key-6", 1).WantProblem(t, 409, "CONNECTION_NOT_ACTIVE")
		post(f.e, "/connections/"+f.conn+"/resume", map[string]any{"expected_version": 2})

		// Live reservations block role changes and disconnects.
		var a resBody
		f.reserve("rule-key-7", 2).JSON(t, &a)
		roles := map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "source", "order_ingress": "enabled", "external_order_fulfillment": "channel"}
		put := func(version int64) *apitest.Resp {
			return f.e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + f.conn + "/roles", Token: f.e.Token,
				Body: map[string]any{"expected_version": version, "roles": roles}})
		}
		p := put(3).WantProblem(t, 409, "CONNECTION_BUSY")
		if !strings.Contains(p.Detail, "active_reservation_count is 1") {
			t.Fatalf("detail %q", p.Detail)
		}
		post(f.e, "/connections/"+f.conn+"/disconnect", map[string]any{"expected_version": 3}).WantProblem(t, 409, "CONNECTION_BUSY")
		// Another connection may not take the inventory while the service holds reservations.
		other := connectionBody("marketplace_b", roles)
		r, _ := createConnection(t, f.e, "rule-conn-2", other)
		r.WantProblem(t, 409, "AUTHORITY_CONFLICT")

		f.move(a.Data.ID, "release", "rule-release", map[string]any{"expected_version": 1})
		put(2).WantProblem(t, 409, "CONNECTION_VERSION_CONFLICT")
		if r := put(3); r.Status != 200 {
			t.Fatalf("roles: %d %s", r.Status, r.Body)
		}
		if _, _, i := masters(t, f.e); i != f.conn {
			t.Fatalf("inventory master %s", i)
		}
		// While a channel masters the Stock Pool, the service's checkout is blocked
		// and adjustments must carry that connection.
		f.reserve("rule-key-8", 1).WantProblem(t, 409, "INVENTORY_AUTHORITY_EXTERNAL")
		_, _, _, v := f.buckets(t)
		adjust(f.e, f.item, "rule-adjust-1", map[string]any{"target_on_hand": 9, "expected_version": v}).WantProblem(t, 409, "AUTHORITY_MISMATCH")
		if r := adjust(f.e, f.item, "rule-adjust-2", map[string]any{"target_on_hand": 9, "expected_version": v, "authority_connection_id": f.conn}); r.Status != 200 {
			t.Fatalf("adjust by the source: %d %s", r.Status, r.Body)
		}
		// A store-plugin preset is refused for a marketplace.
		f.e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + f.conn + "/roles", Token: f.e.Token,
			Body: map[string]any{"expected_version": 4, "roles": "service_source"}}).WantProblem(t, 400, "INVALID_REQUEST")
	})
}

// TestReservationExpiry moves an injected clock past a hold and runs the
// expirer: the release is exactly a manual one.
func TestReservationExpiry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		var short, long resBody
		f.reserve("exp-key-1", 3, "expires_in_seconds", 60).JSON(t, &short)
		f.reserve("exp-key-2", 2, "expires_in_seconds", 600).JSON(t, &long)
		f.want(t, 10, 5, 5, 2)
		svc := reservation.Service{Store: f.e.Store, Clock: f.e.Clock}
		if run, err := svc.ExpireDue(context.Background(), 100); err != nil || run.Expired != 0 || run.Failed != 0 {
			t.Fatalf("nothing due yet: %+v %v", run, err)
		}
		f.e.Clock.Advance(61 * time.Second)
		// Past its hold, the reservation can no longer be committed.
		f.move(short.Data.ID, "commit", "exp-commit", map[string]any{"expected_version": 1}).WantProblem(t, 409, "RESERVATION_STATE_CONFLICT")
		if run, err := svc.ExpireDue(context.Background(), 100); err != nil || run.Expired != 1 || run.Failed != 0 {
			t.Fatalf("expired %+v, %v; want 1", run, err)
		}
		f.want(t, 10, 2, 8, 1)
		var got resBody
		f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-reservations/"+short.Data.ID).JSON(t, &got)
		if got.Data.Status != "expired" || got.Data.Version != 2 {
			t.Fatalf("after expiry: %+v", got.Data)
		}
		if run, _ := svc.ExpireDue(context.Background(), 100); run.Expired != 0 || run.Failed != 0 {
			t.Fatalf("expired again: %+v", run)
		}
		// A renewed hold expires at its new time, not the old one.
		f.move(long.Data.ID, "renew", "exp-renew", map[string]any{"expected_version": 1, "expires_in_seconds": 3600})
		f.e.Clock.Advance(10 * time.Minute)
		if run, _ := svc.ExpireDue(context.Background(), 100); run.Expired != 0 || run.Failed != 0 {
			t.Fatalf("expired a renewed hold: %+v", run)
		}
		f.e.Clock.Advance(time.Hour)
		if run, _ := svc.ExpireDue(context.Background(), 100); run.Expired != 1 || run.Failed != 0 {
			t.Fatalf("renewed hold not expired at its time: %+v", run)
		}
		f.want(t, 10, 0, 10, 0)
		if expired := countEvents(t, f.e, "reservation.expired"); expired != 2 {
			t.Fatalf("%d reservation.expired events", expired)
		}
	})
}

// TestReserveLastUnits: 50 goroutines reserve the last 10 units; exactly 10
// succeed, nothing is oversold, and every counter is exact.
func TestReserveLastUnits(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		rs := apitest.Race(50, func(i int) *apitest.Resp { return f.reserve(fmt.Sprintf("last-unit-%02d", i), 1) })
		statuses, codes := apitest.Statuses(rs), map[string]int{}
		for _, r := range rs {
			if r.Status != 201 {
				var p struct{ Code string }
				r.JSON(t, &p)
				codes[p.Code]++
			}
		}
		if statuses[201] != 10 || statuses[409] != 40 {
			t.Fatalf("statuses %v (codes %v), want 10 created and 40 conflicts", statuses, codes)
		}
		f.want(t, 10, 10, 0, 10)
		items, err := f.e.Store.Query(context.Background(), store.Query{PK: "VENDOR#" + f.e.Vendor.ID, Prefix: datamodel.ReservationPrefix, Limit: 100})
		if err != nil || len(items) != 10 {
			t.Fatalf("%d reservations stored, %v", len(items), err)
		}
	})
}
