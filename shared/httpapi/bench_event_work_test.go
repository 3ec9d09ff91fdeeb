package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// BenchmarkEventWork measures, on DynamoDB Local, the background work one
// write starts in the deployed shape, for the bill (scripts/bill): the
// stream router's part, which every event costs (the routing rules, then
// the delete of the change's pending marker; route-unmarked-* the same
// for an event written without a marker, whose routing deletes none:
// pipeline.Pending.Mark), and one webhook delivery's
// part (the webhook worker's handler for a fresh message: its vendor's
// slot, the event and subscription reads, the claim, the attempt's record),
// with a receiver that answers at once. Each op is an adjustment made
// through the API outside the counts; the handlers are the ones the
// stream-router and webhook-worker Lambdas run, called as they call them.
// It reports read and write units, sequential waits and log bytes of each
// part, and the queue messages sent per event.
func BenchmarkEventWork(b *testing.B) {
	if !slices.Contains(apitest.Stores(), apitest.DynamoDB) {
		b.Skip("DynamoDB Local is not among the stores")
	}
	o := benchOptions(apitest.DynamoDB, &benchCounts{})
	deployed := o.Config
	o.Config = func(c *config.Config) {
		deployed(c)
		c.AllowPrivateWebhooks = true // the receiver is on loopback
	}
	// The router deletes the markers the deployed store's hook wrote.
	o.AppOptions = append(o.AppOptions, app.WithPending(func(s store.Store) store.Store { return s }))
	e := apitest.New(b, o)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer recv.Close()
	sub, _ := json.Marshal(map[string]any{"url": recv.URL + "/hook", "event_types": []string{"inventory_item.adjusted"}})
	if res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/webhook-subscriptions", sub, "bench-event-work-subscription")); err != nil || res.StatusCode != 201 {
		b.Fatalf("subscribe: %v", err)
	}
	item := catalog.InventoryItemID(seedProduct(b, e, "bench-event-work"), 0)
	q := &whOutbox{}
	router := e.App.Router(q)
	deliver, err := e.App.Work(q, queue.WebhookDeliveries)
	if err != nil {
		b.Fatal(err)
	}
	var route, routeUnmarked, delivery bgWork
	var sends, deliveries int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e.Clock.Advance(time.Second) // each event newer than the last
		body, _ := json.Marshal(map[string]any{"target_on_hand": i % 1000, "expected_version": int64(i + 1)})
		res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-items/"+item+"/adjustments", body, fmt.Sprintf("bench-event-work-%d", i)))
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("adjust %d: %v", i, err)
		}
		res.Body.Close()
		k := latestEventKey(b, e)
		b.StartTimer()

		// The stream router: its rules on the inserted event, their
		// messages sent, then the change's marker deleted.
		logged := e.Logs.Len()
		// The stream delivers the item's image: reading it costs nothing.
		it, err := e.Store.Get(context.Background(), k)
		if err != nil {
			b.Fatal(err)
		}
		ctx, rc := roundtrip.With(context.Background())
		if n, err := router.Route(ctx, []store.Change{{Kind: store.Inserted, Key: k, New: &it}}); err != nil || n != 1 {
			b.Fatalf("route: %d routed, %v", n, err)
		}
		route.add(rc)
		route.logs += float64(e.Logs.Len() - logged)

		// The webhook worker: each fresh delivery the router sent.
		for j, m := range q.take() {
			sends++
			if m.Queue != queue.WebhookDeliveries {
				continue
			}
			deliveries++
			logged := e.Logs.Len()
			ctx, dc := roundtrip.With(context.Background())
			if err := deliver.Handle(ctx, queue.Message{ID: fmt.Sprintf("m%d-%d", i, j), Queue: m.Queue, Body: m.Body, Receives: 1}); err != nil {
				b.Fatalf("deliver: %v", err)
			}
			delivery.add(dc)
			delivery.logs += float64(e.Logs.Len() - logged)
		}
		if left := q.take(); len(left) != 0 {
			b.Fatalf("the delivery sent %d more messages (a retry or deferral): %+v", len(left), left)
		}

		// The stream router on an event written without a marker (no
		// subscription could receive it when it was written): the same
		// rules, no marker to delete. Its messages are not delivered.
		unmarked := it
		unmarked.Nums = map[string]int64{datamodel.EventUnmarkedAttr: 1}
		ctx, uc := roundtrip.With(context.Background())
		if n, err := router.Route(ctx, []store.Change{{Kind: store.Inserted, Key: k, New: &unmarked}}); err != nil || n != 1 {
			b.Fatalf("route unmarked: %d routed, %v", n, err)
		}
		routeUnmarked.add(uc)
		q.take()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(route.read/n, "route-rru/op")
	b.ReportMetric(route.write/n, "route-wru/op")
	b.ReportMetric(route.waits/n, "route-waits/op")
	b.ReportMetric(route.logs/n, "route-log-B/op")
	b.ReportMetric(routeUnmarked.read/n, "route-unmarked-rru/op")
	b.ReportMetric(routeUnmarked.write/n, "route-unmarked-wru/op")
	b.ReportMetric(routeUnmarked.waits/n, "route-unmarked-waits/op")
	b.ReportMetric(float64(sends)/n, "sends/op")
	if deliveries == 0 {
		b.Fatal("no delivery was routed")
	}
	d := float64(deliveries)
	b.ReportMetric(delivery.read/d, "delivery-rru/op")
	b.ReportMetric(delivery.write/d, "delivery-wru/op")
	b.ReportMetric(delivery.waits/d, "delivery-waits/op")
	b.ReportMetric(delivery.logs/d, "delivery-log-B/op")
}

// bgWork sums what finished handlers' counters saw.
type bgWork struct{ read, write, waits, logs float64 }

func (w *bgWork) add(c *roundtrip.Counter) {
	r, wr := c.Capacity()
	w.read += r
	w.write += wr
	w.waits += float64(c.Waits())
}

// latestEventKey is the key of the vendor's newest event.
func latestEventKey(b *testing.B, e *apitest.Env) store.Key {
	b.Helper()
	res, err := http.DefaultClient.Do(benchRequest(e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/events?limit=1", nil, ""))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var l struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(res.Body).Decode(&l); err != nil || len(l.Data) != 1 {
		b.Fatalf("latest event: %v", err)
	}
	return datamodel.EventKey(e.Vendor.ID, l.Data[0].ID)
}
