package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/webhook"
)

// TestSampleEvent keeps events/replay-worker/replay.json a batch as the queue's event
// source mapping delivers it, whose body is the work's JSON message.
func TestSampleEvent(t *testing.T) {
	lambdatest.SQSSample(t, "replay-worker/replay.json", work, "vendor_id", "event_id", "replay_id")
}

// A replay runs end to end through the worker's Lambda handler, on each
// store: the stream router's rules turn the replay's insert into its
// message, and the handler, given that message as SQS delivers it, chooses
// the destinations and queues one delivery per subscription on the
// webhook-deliveries queue.
func TestReplayThroughTheHandler(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
			var subs []string
			for i, url := range []string{"http://127.0.0.1:9/a", "http://127.0.0.1:9/b"} {
				r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/webhook-subscriptions", Token: e.Token,
					Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("replay-worker-%d", i+1)},
					Body:    map[string]any{"url": url, "event_types": []string{"*"}}})
				var sub struct{ Data struct{ ID string } }
				r.JSON(t, &sub)
				if r.Status != http.StatusCreated {
					t.Fatalf("subscribe: %d %s", r.Status, r.Body)
				}
				subs = append(subs, sub.Data.ID)
			}
			ev := event.New(e.Clock.Now(), e.Vendor.ID, event.ProductCreated, "product", "prd_1", map[string]any{"revision": 1, "inventory_item_ids": []string{}})
			op, err := event.Op(ev)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Store.Transact(ctx, op); err != nil {
				t.Fatal(err)
			}
			r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/events/" + ev.ID + "/replay", Token: e.Token,
				Headers: map[string]string{"Idempotency-Key": "replay-worker-replay"}})
			var rp struct {
				Data struct {
					ID     string `json:"replay_id"`
					Status string
				}
			}
			r.JSON(t, &rp)
			if r.Status != http.StatusAccepted || rp.Data.Status != "queued" {
				t.Fatalf("replay: %d %s", r.Status, r.Body)
			}

			q := lambdatest.WorkStored(t, e.App, datamodel.ReplayKey(e.Vendor.ID, ev.ID, rp.Data.ID), work)
			deliveries := q.Take(queue.WebhookDeliveries)
			to := map[string]bool{}
			for _, d := range deliveries {
				var m webhook.Message
				if err := json.Unmarshal(d.Body, &m); err != nil {
					t.Fatal(err)
				}
				if m.ReplayID != rp.Data.ID || m.EventID != ev.ID {
					t.Fatalf("delivery %s is not of the replay", d.Body)
				}
				to[m.SubscriptionID] = true
			}
			if len(deliveries) != 2 || !to[subs[0]] || !to[subs[1]] {
				t.Fatalf("deliveries to %v, want one to each of %v", to, subs)
			}
		})
	}
}
