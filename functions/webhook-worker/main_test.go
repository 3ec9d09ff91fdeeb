package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// TestSampleEvent keeps events/webhook-worker/delivery.json a batch as the queue's event
// source mapping delivers it, whose body is the work's JSON message.
func TestSampleEvent(t *testing.T) {
	lambdatest.SQSSample(t, "webhook-worker/delivery.json", work, "vendor_id", "event_id", "subscription_id", "delivery_id", "attempt")
}

type received struct {
	header http.Header
	body   []byte
}

// A new event is delivered end to end through the worker's Lambda handler,
// on each store: the stream router's rules fan the event's insert out to
// one message for the subscription, and the handler, given that message as
// SQS delivers it, posts the event to the subscriber, signed with its
// secret. A receiver that fails gets a retry scheduled, not a batch failure.
func TestDeliveryThroughTheHandler(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			status := http.StatusNoContent
			got := make(chan received, 4)
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- received{r.Header.Clone(), b}
				w.WriteHeader(status)
			}))
			defer recv.Close()
			// Loopback receivers need the local flag.
			e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
			r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/webhook-subscriptions", Token: e.Token,
				Headers: map[string]string{"Idempotency-Key": "webhook-worker-1"},
				Body:    map[string]any{"url": recv.URL + "/hooks", "event_types": []string{event.ProductCreated}}})
			var sub struct{ Data struct{ ID, Secret string } }
			r.JSON(t, &sub)
			if r.Status != http.StatusCreated {
				t.Fatalf("subscribe: %d %s", r.Status, r.Body)
			}

			deliver := func(id string) lambdatest.Sent {
				t.Helper()
				ev := event.New(e.Clock.Now(), e.Vendor.ID, event.ProductCreated, "product", id, map[string]any{"revision": 1, "inventory_item_ids": []string{}})
				op, err := event.Op(ev)
				if err != nil {
					t.Fatal(err)
				}
				if err := e.Store.Transact(ctx, op); err != nil {
					t.Fatal(err)
				}
				q := lambdatest.Work(t, e.App, op.Item, work)
				var d received
				select {
				case d = <-got:
				default:
					t.Fatal("the subscriber received nothing")
				}
				if d.header.Get(webhook.HeaderEventID) != ev.ID || !strings.Contains(string(d.body), ev.ID) {
					t.Fatalf("delivery of %s: headers %v, body %s", ev.ID, d.header, d.body)
				}
				if err := signature.Verify(d.header.Get(webhook.HeaderSignature), d.body, sub.Data.Secret, e.Clock.Now(), 0); err != nil {
					t.Fatalf("signature: %v", err)
				}
				if again := q.Take(work); len(again) > 0 {
					t.Fatalf("%d messages sent back to the fresh lane: %s", len(again), again[0].Body)
				}
				// A retry waits in the slow lane.
				retries := q.Take(queue.WebhookSlowLane)
				if len(retries) > 1 {
					t.Fatalf("%d retries scheduled", len(retries))
				}
				if len(retries) == 1 {
					return retries[0]
				}
				return lambdatest.Sent{}
			}
			if retry := deliver("prd_1"); retry.Body != nil {
				t.Fatalf("a retry after a delivered event: %s", retry.Body)
			}
			status = http.StatusServiceUnavailable
			if retry := deliver("prd_2"); retry.Body == nil || retry.Delay <= 0 {
				t.Fatalf("after a failed attempt the retry is %+v, want a delayed message", retry)
			}
		})
	}
}

// The deliveries of one batch are made at once: three subscriptions of a
// vendor to a receiver that answers only once all three requests are in
// (or gives up when a delivery times out) all succeed from one invocation,
// which a handler taking them in turn never achieves (each would wait out
// its timeout alone, then fail). On each store: the worker Lambdas count
// the vendor's slots in the store, the local server in memory.
func TestBatchDeliveredAtOnce(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			const n = 3
			var mu sync.Mutex
			arrived, together := 0, 0
			all := make(chan struct{})
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				if arrived++; arrived == n {
					close(all)
				}
				mu.Unlock()
				select {
				case <-all:
					mu.Lock()
					together++
					mu.Unlock()
					w.WriteHeader(http.StatusNoContent)
				case <-r.Context().Done():
				}
			}))
			defer recv.Close()
			e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
			for i := range n {
				r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/webhook-subscriptions", Token: e.Token,
					Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("webhook-batch-%d", i)},
					Body:    map[string]any{"url": recv.URL + "/hooks", "event_types": []string{event.ProductCreated}}})
				if r.Status != http.StatusCreated {
					t.Fatalf("subscribe: %d %s", r.Status, r.Body)
				}
			}
			ev := event.New(e.Clock.Now(), e.Vendor.ID, event.ProductCreated, "product", "prd_1", map[string]any{"revision": 1, "inventory_item_ids": []string{}})
			op, err := event.Op(ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Store.Transact(t.Context(), op); err != nil {
				t.Fatal(err)
			}
			q := &lambdatest.Queues{}
			if _, err := e.App.Router(q).Route(t.Context(), []store.Change{{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item}}); err != nil {
				t.Fatal(err)
			}
			msgs := q.Take(work)
			if len(msgs) != n {
				t.Fatalf("routed %d deliveries, want %d", len(msgs), n)
			}
			h, err := lambdaapi.NewWorker(e.App, q, work)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h(t.Context(), lambdatest.SQSBatch(work, msgs...))
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("worker: %+v, %v", resp, err)
			}
			if retries := q.Take(work); len(retries) != 0 || together != n {
				t.Fatalf("%d of %d deliveries answered together, %d retries queued", together, n, len(retries))
			}
		})
	}
}
