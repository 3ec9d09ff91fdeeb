package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/store"
)

type soBody struct {
	Data struct {
		ID              string
		Status          string
		Version         int64
		ExternalOrderID string  `json:"external_order_id"`
		ChannelOrderID  string  `json:"channel_order_id"`
		Carrier         *string `json:"carrier"`
		TrackingNumber  *string `json:"tracking_number"`
		Lines           []struct{ Quantity int64 }
	}
}

// project lets the seller-order projection catch up: the embedded pipeline
// on the embedded store; on DynamoDB, the rule and the worker's handler
// over every event of the log, as the stream would deliver them.
func project(t *testing.T, e *apitest.Env, kind apitest.StoreKind) {
	t.Helper()
	ctx := context.Background()
	if kind == apitest.SQLite {
		if err := e.App.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	replayLog(t, e)
}

// replayLog sends every event of the vendor's log through the rule and the
// projector's handler: the rebuild.
func replayLog(t *testing.T, e *apitest.Env) {
	t.Helper()
	ctx := context.Background()
	p := sellerorder.Projector{Store: e.Store, Clock: e.Clock}
	after := ""
	var pending []queue.Message
	for {
		evs, err := event.Log{Store: e.Store}.List(ctx, e.Vendor.ID, "", after, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			it, err := e.Store.Get(ctx, datamodel.EventKey(e.Vendor.ID, ev.ID))
			if err != nil {
				t.Fatal(err)
			}
			out, err := sellerorder.Rule(ctx, store.Change{Kind: store.Inserted, Key: it.Key(), New: &it})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range out {
				pending = append(pending, queue.Message{Queue: m.Queue, Body: m.Body})
			}
		}
		if !evs.More {
			break
		}
		after = evs.Last
	}
	// Deliver as a queue would: a message asking for a retry (its order
	// not projected yet) comes again later.
	for pass := 0; len(pending) > 0; pass++ {
		if pass == 5 {
			t.Fatalf("%d messages still retried", len(pending))
		}
		var again []queue.Message
		for _, m := range pending {
			err := p.Handle(ctx, m)
			if _, retry := queue.DelayOf(err); err != nil && retry {
				again = append(again, m)
			} else if err != nil {
				t.Fatal(err)
			}
		}
		pending = again
	}
}

func sellerOrders(t *testing.T, e *apitest.Env, query string) []soBody {
	t.Helper()
	var page struct{ Data []map[string]any }
	r := e.Get("/vendors/" + e.Vendor.ID + "/seller-orders" + query)
	if r.Status != 200 {
		t.Fatalf("list seller orders: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &page)
	var out []soBody
	for _, raw := range page.Data {
		var b soBody
		r := e.Get("/vendors/" + e.Vendor.ID + "/seller-orders/" + raw["id"].(string))
		r.JSON(t, &b)
		out = append(out, b)
	}
	return out
}

func soMove(e *apitest.Env, id, action string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/seller-orders/" + id + "/" + action, Token: e.Token, Body: body})
}

func TestSellerOrdersProjectCommittedMokuOrders(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		ch := mustConnection(t, e, "so-conn-channel", connectionBody("marketplace_b", channelRoles()))
		moku := mustXO(t, importXO(e, "so-import-1", f.conn, "EXT-1", xoLine("a", f.item, 2)), 201, "reserved")
		mustXO(t, moveXO(e, moku.Data.ID, "commit", 1), 200, "committed")
		channel := mustXO(t, importXO(e, "so-import-2", ch.Data.ID, "EXT-2", xoLine("a", f.item, 1)), 201, "reserved")
		mustXO(t, moveXO(e, channel.Data.ID, "commit", 1), 200, "committed")
		dropped := mustXO(t, importXO(e, "so-import-3", f.conn, "EXT-3", xoLine("a", f.item, 1)), 201, "reserved")
		mustXO(t, moveXO(e, dropped.Data.ID, "cancel", 1), 200, "cancelled")
		project(t, e, kind)
		project(t, e, kind) // idempotent: a second delivery changes nothing

		got := sellerOrders(t, e, "")
		if len(got) != 1 {
			t.Fatalf("%d seller orders, want only the committed moku order", len(got))
		}
		so := got[0].Data
		if so.ExternalOrderID != moku.Data.ID || so.ChannelOrderID != "EXT-1" || so.Status != "open" || so.Version != 1 || len(so.Lines) != 1 || so.Lines[0].Quantity != 2 {
			t.Fatalf("seller order: %+v", so)
		}
		soMove(e, so.ID, "mark-shipped", map[string]any{"expected_version": 1}).WantProblem(t, 400, "INVALID_REQUEST")
		soMove(e, so.ID, "mark-shipped", map[string]any{"expected_version": 5, "carrier": "UPS", "tracking_number": "1Z999"}).WantProblem(t, 409, "SELLER_ORDER_VERSION_CONFLICT")
		r := soMove(e, so.ID, "mark-shipped", map[string]any{"expected_version": 1, "carrier": "UPS", "tracking_number": "1Z999"})
		var shipped soBody
		if r.Status != 200 {
			t.Fatalf("mark shipped: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &shipped)
		if shipped.Data.Status != "shipped" || *shipped.Data.Carrier != "UPS" || *shipped.Data.TrackingNumber != "1Z999" || shipped.Data.Version != 2 {
			t.Fatalf("shipped: %s", r.Body)
		}
		soMove(e, so.ID, "cancel", map[string]any{"expected_version": 2}).WantProblem(t, 409, "SELLER_ORDER_STATE_CONFLICT")
		soMove(e, "so_missing", "cancel", map[string]any{"expected_version": 1}).WantProblem(t, 404, "NOT_FOUND")

		second := mustXO(t, importXO(e, "so-import-4", f.conn, "EXT-4", xoLine("a", f.item, 1)), 201, "reserved")
		mustXO(t, moveXO(e, second.Data.ID, "commit", 1), 200, "committed")
		project(t, e, kind)
		open := sellerOrders(t, e, "?status=open")
		if len(open) != 1 || open[0].Data.ExternalOrderID != second.Data.ID {
			t.Fatalf("open seller orders: %+v", open)
		}
		if r := soMove(e, open[0].Data.ID, "cancel", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
		project(t, e, kind)

		// Rebuild: drop the projection and replay the log.
		before := sellerOrders(t, e, "")
		for _, b := range before {
			if err := e.Store.Transact(context.Background(), store.Delete(datamodel.SellerOrderKey(e.Vendor.ID, b.Data.ID), store.Cond{})); err != nil {
				t.Fatal(err)
			}
		}
		replayLog(t, e)
		after := sellerOrders(t, e, "")
		if len(after) != len(before) || len(after) != 2 {
			t.Fatalf("rebuilt %d seller orders from %d", len(after), len(before))
		}
		for i := range after {
			a, b := after[i].Data, before[i].Data
			if a.ID != b.ID || a.Status != b.Status || a.Version != b.Version {
				t.Fatalf("rebuilt %+v, was %+v", a, b)
			}
		}
	})
}
