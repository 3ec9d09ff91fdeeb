package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// TestSlowReceiverStallsNoOtherWork reproduces finding 6 of issue 17: in
// local mode one loop did all background work, so receivers that never
// answer held it for their timeout per delivery while reservations stayed
// active past expires_at and bulk operations stayed queued. Now every kind
// of work has its own loop (app.RunBackground): with ten subscriptions to
// a loopback receiver that never answers, a due hold still expires and a
// bulk operation still completes, each well within one delivery timeout.
func TestSlowReceiverStallsNoOtherWork(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stalled.Close)
	t.Cleanup(func() { close(release) })
	for i := 0; i < 10; i++ {
		mustSubscribe(t, e, stalled.URL+"/hook", "*")
	}

	held := mustCreate(t, e, "stall-product-1", simpleProduct("stall-held"))
	heldItem := catalog.InventoryItemID(held.Data.ID, 0)
	if r := adjust(e, heldItem, "stall-adjust-1", map[string]any{"target_on_hand": 10, "expected_version": 1}); r.Status != http.StatusOK {
		t.Fatalf("stock: %d %s", r.Status, r.Body)
	}
	conn := mustConnection(t, e, "stall-conn", connectionBody("marketplace_a", destinationRoles))
	var hold resBody
	r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-reservations", Token: e.Token,
		Body:    map[string]any{"connection_id": conn.Data.ID, "inventory_item_id": heldItem, "quantity": 2, "expires_in_seconds": 60},
		Headers: map[string]string{"Idempotency-Key": "stall-reserve-1"}})
	if r.Status != http.StatusCreated {
		t.Fatalf("reserve: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &hold)
	bulkProduct := mustCreate(t, e, "stall-product-2", simpleProduct("stall-bulk"))
	op := mustSubmit(t, e, e.Token, "stall-bulk-1", batch([]string{catalog.InventoryItemID(bulkProduct.Data.ID, 0)}, 7))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.App.RunBackground(ctx, 20*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done })
	e.Clock.Advance(61 * time.Second)

	// A bounded wait for completion, well below one delivery's timeout
	// (webhook.RequestTimeout, 20 s): the single loop of before needed
	// minutes here.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var got resBody
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-reservations/"+hold.Data.ID).JSON(t, &got)
		b := getBulk(t, e, op.Data.ID)
		if got.Data.Status == "expired" && b.Data.Status == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("with receivers stalled: reservation %s, bulk operation %s", got.Data.Status, b.Data.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
