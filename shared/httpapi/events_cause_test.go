package httpapi_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/reservation"
)

// eventsOf reads the vendor's log over HTTP, newest first, keeping the
// events of typ.
func eventsOf(t *testing.T, e *apitest.Env, typ string) []event.Event {
	t.Helper()
	var page struct{ Data []event.Event }
	e.Get("/vendors/"+e.Vendor.ID+"/events?limit=100&type="+typ).JSON(t, &page)
	return page.Data
}

// TestEventsNameTheirRequest: an event a request wrote carries that
// request's X-Request-Id and the Idempotency-Key it sent (null when it
// sent none); an event the service wrote by itself (a hold's expiry)
// carries request null; an exact replay of a kept request writes nothing
// new.
func TestEventsNameTheirRequest(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		created := eventsOf(t, e, event.ProductCreated)
		if len(created) != 1 || created[0].Request == nil || created[0].Request.ID == "" ||
			created[0].Request.IdempotencyKey == nil || *created[0].Request.IdempotencyKey != "stock-product" {
			t.Fatalf("product.created names %+v, want the create request and its key", created)
		}

		res := f.reserve("cause-res-1", 2, "expires_in_seconds", 60)
		if res.Status != http.StatusCreated {
			t.Fatalf("reserve: %d %s", res.Status, res.Body)
		}
		again := f.reserve("cause-res-1", 2, "expires_in_seconds", 60)
		if again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the repeat was not a replay: %d %s", again.Status, again.Body)
		}
		held := eventsOf(t, e, event.ReservationCreated)
		if len(held) != 1 || held[0].Request == nil || held[0].Request.ID != res.Header.Get("X-Request-Id") ||
			held[0].Request.IdempotencyKey == nil || *held[0].Request.IdempotencyKey != "cause-res-1" {
			t.Fatalf("reservation.created: %+v, want request %s with key cause-res-1", held, res.Header.Get("X-Request-Id"))
		}

		p := mustCreate(t, e, "cause-product", simpleProduct("cause"))
		pub := post(e, "/products/"+p.Data.ID+"/publish", map[string]any{"expected_revision": 1})
		if pub.Status != http.StatusOK {
			t.Fatalf("publish: %d %s", pub.Status, pub.Body)
		}
		published := eventsOf(t, e, event.ProductPublished)
		if len(published) != 1 || published[0].Request == nil || published[0].Request.ID != pub.Header.Get("X-Request-Id") || published[0].Request.IdempotencyKey != nil {
			t.Fatalf("product.published: %+v, want request %s without a key", published, pub.Header.Get("X-Request-Id"))
		}

		e.Clock.Advance(61 * time.Second)
		if run, err := (reservation.Service{Store: e.Store, Clock: e.Clock}).ExpireDue(context.Background(), 100); err != nil || run.Expired != 1 {
			t.Fatalf("expiry: %+v %v", run, err)
		}
		expired := eventsOf(t, e, event.ReservationExpired)
		if len(expired) != 1 || expired[0].Request != nil {
			t.Fatalf("reservation.expired: %+v, want request null", expired)
		}
		raw := e.Get("/vendors/" + e.Vendor.ID + "/events/" + expired[0].ID)
		if !bytes.Contains(raw.Body, []byte(`"request":null`)) {
			t.Fatalf("the expiry's event does not say request null: %s", raw.Body)
		}
	})
}
