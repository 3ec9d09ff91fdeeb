package sellerorder_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

// externalID has the shape of an issued external order id, and orderID is
// its seller order's.
const (
	externalID = "xo_00000000000000000000000123"
	orderID    = "so_00000000000000000000000123"
)

type fixture struct {
	dt.Env
	proj sellerorder.Projector
	svc  sellerorder.Service
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	e := dt.New(t, 2026, 9, 7, 15, 0, 0)
	return fixture{Env: e, proj: sellerorder.Projector{Store: e.Store, Clock: e.Clock}, svc: sellerorder.Service{Store: e.Store, Clock: e.Clock}}
}

// orderEvent is an external order event as package extorder writes it.
func (f fixture) orderEvent(typ, fulfillment string) event.Event {
	return event.New(f.Clock.Now(), vendorID, typ, "external_order", externalID, map[string]any{
		"version": 2, "connection_id": "conn_a", "external_order_id": "CH-1", "fulfillment": fulfillment, "status": "committed",
		"lines": []map[string]any{{"line_id": "l1", "inventory_item_id": "inv_p_000", "quantity": 2, "unit_price": 500}}})
}

func (f fixture) apply(t *testing.T, e event.Event) {
	t.Helper()
	if err := f.proj.Apply(context.Background(), e); err != nil {
		t.Fatalf("apply %s: %v", e.Type, err)
	}
}

// TestProjection: a committed order fulfilled by the service becomes an open
// seller order; applying the event again changes nothing; a channel's
// order is not the seller's to ship.
func TestProjection(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	committed := f.orderEvent(event.ExternalOrderCommitted, connection.Moku)
	f.apply(t, committed)
	id := sellerorder.IDOf(externalID)
	if id != orderID {
		t.Fatalf("IDOf = %s", id)
	}
	o, err := f.svc.Get(ctx, vendorID, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != sellerorder.StatusOpen || o.Version != 1 || o.ExternalOrderID != externalID || o.ChannelOrderID != "CH-1" ||
		o.ConnectionID != "conn_a" || o.SourceEventID != committed.ID || len(o.Lines) != 1 || o.Lines[0].Quantity != 2 {
		t.Fatalf("projected %+v", o)
	}
	f.Clock.Advance(time.Minute)
	f.apply(t, committed) // a redelivery
	if again, _ := f.svc.Get(ctx, vendorID, id); again.Version != 1 || !again.UpdatedAt.Equal(o.UpdatedAt) {
		t.Fatalf("a redelivered event changed the order: %+v", again)
	}

	g := newFixture(t)
	g.apply(t, g.orderEvent(event.ExternalOrderCommitted, connection.Channel))
	if _, err := g.svc.Get(ctx, vendorID, id); !errs.Is(err, errs.CodeNotFound) {
		t.Fatalf("a channel-fulfilled order was projected: %v", err)
	}
}

// TestProjectedCancel: a cancelled external order cancels its open seller
// order, and only an open one; before commit there is nothing to cancel.
func TestProjectedCancel(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.apply(t, f.orderEvent(event.ExternalOrderCancelled, connection.Moku)) // never committed
	if _, err := f.svc.Get(ctx, vendorID, orderID); !errs.Is(err, errs.CodeNotFound) {
		t.Fatalf("a cancel without commit made an order: %v", err)
	}
	f.apply(t, f.orderEvent(event.ExternalOrderCommitted, connection.Moku))
	f.apply(t, f.orderEvent(event.ExternalOrderCancelled, connection.Moku))
	o, _ := f.svc.Get(ctx, vendorID, orderID)
	if o.Status != sellerorder.StatusCancelled || o.Version != 2 {
		t.Fatalf("after the cancel event: %+v", o)
	}

	g := newFixture(t)
	g.apply(t, g.orderEvent(event.ExternalOrderCommitted, connection.Moku))
	if _, err := g.svc.Transition(ctx, vendorID, orderID, sellerorder.MarkShipped, sellerorder.Input{ExpectedVersion: 1, Carrier: "Post", TrackingNumber: "T1"}); err != nil {
		t.Fatal(err)
	}
	g.apply(t, g.orderEvent(event.ExternalOrderCancelled, connection.Moku))
	if o, _ := g.svc.Get(ctx, vendorID, orderID); o.Status != sellerorder.StatusShipped {
		t.Fatalf("a cancel event undid a shipment: %+v", o)
	}
}

// TestFulfillment: open -> shipped (carrier, tracking, shipped_at) or open ->
// cancelled; a shipped or cancelled order changes no more.
func TestFulfillment(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		first, second string
	}{
		{sellerorder.MarkShipped, sellerorder.Cancel},
		{sellerorder.MarkShipped, sellerorder.MarkShipped},
		{sellerorder.Cancel, sellerorder.MarkShipped},
		{sellerorder.Cancel, sellerorder.Cancel},
	} {
		t.Run(c.first+"_then_"+c.second, func(t *testing.T) {
			f := newFixture(t)
			f.apply(t, f.orderEvent(event.ExternalOrderCommitted, connection.Moku))
			in := sellerorder.Input{ExpectedVersion: 1, Carrier: "Post", TrackingNumber: "T1"}
			_, err := f.svc.Transition(ctx, vendorID, orderID, c.first, sellerorder.Input{ExpectedVersion: 2, Carrier: "Post", TrackingNumber: "T1"})
			if !errs.Is(err, errs.CodeSellerOrderVersion) {
				t.Fatalf("stale version: %v", err)
			}
			o, err := f.svc.Transition(ctx, vendorID, orderID, c.first, in)
			if err != nil {
				t.Fatal(err)
			}
			if c.first == sellerorder.MarkShipped {
				if o.Status != sellerorder.StatusShipped || o.Carrier == nil || *o.Carrier != "Post" || o.TrackingNumber == nil || *o.TrackingNumber != "T1" ||
					o.ShippedAt == nil || !o.ShippedAt.Equal(f.Clock.Now()) {
					t.Fatalf("shipped %+v", o)
				}
			} else if o.Status != sellerorder.StatusCancelled || o.ShippedAt != nil {
				t.Fatalf("cancelled %+v", o)
			}
			if o.Version != 2 {
				t.Fatalf("version %d, want 2", o.Version)
			}
			in.ExpectedVersion = 2
			_, err = f.svc.Transition(ctx, vendorID, orderID, c.second, in)
			if !errs.Is(err, errs.CodeSellerOrderState) {
				t.Fatalf("second move: %v", err)
			}
		})
	}
}

// TestRebuildFromOwnEvents: replaying a seller order's own fulfillment event
// is a no-op on a current projection and the rebuild of the change on a
// fresh one.
func TestRebuildFromOwnEvents(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	committed := f.orderEvent(event.ExternalOrderCommitted, connection.Moku)
	f.apply(t, committed)
	f.Clock.Advance(time.Hour)
	if _, err := f.svc.Transition(ctx, vendorID, orderID, sellerorder.MarkShipped, sellerorder.Input{ExpectedVersion: 1, Carrier: "Post", TrackingNumber: "T1"}); err != nil {
		t.Fatal(err)
	}
	page, err := event.Log{Store: f.Store}.List(ctx, vendorID, event.SellerOrderShipped, "", 10)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("shipped events %d %v", len(page.Items), err)
	}
	shipped := page.Items[0]
	before, _ := f.svc.Get(ctx, vendorID, orderID)
	f.apply(t, shipped)
	if after, _ := f.svc.Get(ctx, vendorID, orderID); after.Version != before.Version || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("replaying its own event changed a current order: %+v", after)
	}

	// A rebuild: the log replayed into an empty projection.
	g := newFixture(t)
	// Before its creation is projected, the fulfillment waits.
	var retry *queue.RetryError
	if err := g.proj.Apply(ctx, shipped); !errors.As(err, &retry) {
		t.Fatalf("fulfillment before creation: %v, want a retry", err)
	}
	g.apply(t, committed)
	g.apply(t, shipped)
	o, _ := g.svc.Get(ctx, vendorID, orderID)
	if o.Status != sellerorder.StatusShipped || o.Version != 2 || o.Carrier == nil || *o.Carrier != "Post" || o.ShippedAt == nil || !o.ShippedAt.Equal(shipped.CreatedAt) {
		t.Fatalf("rebuilt %+v", o)
	}
}

// TestRule: only inserted external-order commit/cancel and seller-order
// events reach the seller-orders queue.
func TestRule(t *testing.T) {
	ctx := context.Background()
	now := clocktest.Date(2026, 9, 7, 15, 0, 0)
	for typ, want := range map[string]bool{
		event.ExternalOrderCommitted: true, event.ExternalOrderCancelled: true,
		event.SellerOrderShipped: true, event.SellerOrderCancelled: true,
		event.ExternalOrderReserved: false, event.ProductCreated: false,
	} {
		op, err := event.Op(event.New(now, vendorID, typ, "x", "y", nil))
		if err != nil {
			t.Fatal(err)
		}
		it := op.Item
		out, err := sellerorder.Rule(ctx, store.Change{Kind: store.Inserted, Key: it.Key(), New: &it})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(out) == 1 && out[0].Queue == queue.SellerOrders; got != want {
			t.Errorf("%s routed %v, want %v", typ, out, want)
		}
		if out, _ := sellerorder.Rule(ctx, store.Change{Kind: store.Modified, Key: it.Key(), New: &it}); len(out) != 0 {
			t.Errorf("%s: a modified event item was routed", typ)
		}
	}
}

// TestInput: expected_version always; carrier and tracking_number when
// marking shipped.
func TestInput(t *testing.T) {
	for _, c := range []struct {
		body, action string
		ok           bool
	}{
		{`{"expected_version":1,"carrier":"Post","tracking_number":"T"}`, sellerorder.MarkShipped, true},
		{`{"expected_version":1,"carrier":"Post"}`, sellerorder.MarkShipped, false},
		{`{"expected_version":1,"carrier":"","tracking_number":"T"}`, sellerorder.MarkShipped, false},
		{`{"expected_version":1}`, sellerorder.Cancel, true},
		{`{"expected_version":1,"carrier":"Post"}`, sellerorder.Cancel, false},
		{`{}`, sellerorder.Cancel, false},
	} {
		if _, err := sellerorder.ParseInput([]byte(c.body), c.action); c.ok != (err == nil) {
			t.Errorf("%s %s: %v", c.action, c.body, err)
		}
	}
}
