package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// TestSlowReceiverMovesItsDeliveriesToTheSlowLane: an attempt that takes
// SlowAfter or longer marks its subscription; the subscription's next
// fresh delivery is moved to the slow lane without an attempt, while the
// vendor's other subscription stays in the fresh lane; in the slow lane
// the attempt is made, and a prompt answer there takes the mark away, so
// that the next delivery is made in the fresh lane again. A failed
// attempt's retry, and a retry found in the fresh lane, go to the slow
// lane. With the slots and marks in memory (the local server) and in
// each store (the worker Lambdas), side by side: each waits out a slow
// attempt on the wall clock (how long an attempt took is measured so).
func TestSlowReceiverMovesItsDeliveriesToTheSlowLane(t *testing.T) {
	for name, open := range slotKeepers() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st, slots := open(t, clk)
			const slowAfter = 400 * time.Millisecond
			var dawdle atomic.Bool
			var slowPosts, quickPosts atomic.Int64
			status := atomic.Int64{}
			status.Store(http.StatusOK)
			slowSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				slowPosts.Add(1)
				if dawdle.Load() {
					time.Sleep(slowAfter + 100*time.Millisecond)
				}
				w.WriteHeader(int(status.Load()))
			}))
			defer slowSrv.Close()
			quickSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { quickPosts.Add(1) }))
			defer quickSrv.Close()
			policy := Policy{AllowLoopback: true}
			const vendorID = "ven_1"
			box := testBox(t)
			subscribe := func(url string) string {
				prep, err := Service{Store: st, Clock: clk, Policy: policy, Secrets: box}.PrepareCreate(ctx, vendorID, CreateInput{Destination: HTTPS(url + "/hook"), EventTypes: []string{"product.created"}})
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Transact(ctx, prep.Ops...); err != nil {
					t.Fatal(err)
				}
				return prep.View.ID
			}
			slowSub, quickSub := subscribe(slowSrv.URL), subscribe(quickSrv.URL)
			out := &sink{}
			d := Deliverer{Store: st, Clock: clk, Queue: out, Policy: policy, Jitter: func() float64 { return 0 }, Slots: slots, SlowAfter: slowAfter, Secrets: box}
			// fanOut records a new event and returns its fresh messages by
			// subscription.
			n := 0
			fanOut := func() map[string][]byte {
				n++
				ev := event.New(clk.Now(), vendorID, event.ProductCreated, "product", "prd_"+string(rune('a'+n)), nil)
				op, _ := event.Op(ev)
				if err := st.Transact(ctx, op); err != nil {
					t.Fatal(err)
				}
				routed, err := d.Rule(ctx, store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item})
				if err != nil || len(routed) != 2 {
					t.Fatalf("fan-out: %v, %v", routed, err)
				}
				bySub := map[string][]byte{}
				for _, o := range routed {
					if o.Queue != queue.WebhookDeliveries {
						t.Fatalf("fan-out to %s, want the fresh lane", o.Queue)
					}
					var m Message
					json.Unmarshal(o.Body, &m)
					bySub[m.SubscriptionID] = o.Body
				}
				return bySub
			}
			handle := func(id string, body []byte) {
				t.Helper()
				if err := d.Handle(ctx, queue.Message{ID: id, Body: body, Receives: 1}); err != nil {
					t.Fatal(err)
				}
			}
			marked := func() bool {
				l, err := slots.Look(ctx, vendorID)
				if err != nil {
					t.Fatal(err)
				}
				return l.SlowUntil(slowSub).After(clk.Now())
			}

			// A slow attempt in the fresh lane marks its subscription.
			dawdle.Store(true)
			msgs := fanOut()
			handle("m1", msgs[slowSub])
			if slowPosts.Load() != 1 || !marked() {
				t.Fatalf("after a slow attempt: %d requests, marked %v", slowPosts.Load(), marked())
			}
			// Its next delivery moves to the slow lane, unattempted; the
			// other subscription's is made in the fresh lane.
			msgs = fanOut()
			handle("m2", msgs[slowSub])
			handle("m3", msgs[quickSub])
			if slowPosts.Load() != 1 || quickPosts.Load() != 1 || len(out.sent) != 1 || out.queues[0] != queue.WebhookSlowLane ||
				out.sent[0].Lane != LaneSlow || out.sent[0].Attempt != 1 || out.sent[0].SubscriptionID != slowSub {
				t.Fatalf("a marked subscription's delivery: %d slow and %d quick requests, sent %+v to %v", slowPosts.Load(), quickPosts.Load(), out.sent, out.queues)
			}
			// In the slow lane, a prompt answer takes the mark away.
			dawdle.Store(false)
			b, _ := json.Marshal(out.sent[0])
			handle("m4", b)
			if slowPosts.Load() != 2 || marked() {
				t.Fatalf("after a prompt attempt in the slow lane: %d requests, marked %v", slowPosts.Load(), marked())
			}
			// Unmarked, its deliveries are made in the fresh lane again; a
			// failure's retry goes to the slow lane.
			status.Store(http.StatusInternalServerError)
			msgs = fanOut()
			handle("m5", msgs[slowSub])
			if slowPosts.Load() != 3 || len(out.sent) != 2 || out.queues[1] != queue.WebhookSlowLane || out.sent[1].Attempt != 2 || out.sent[1].Lane != LaneSlow {
				t.Fatalf("a failed fresh attempt: %d requests, sent %+v to %v", slowPosts.Load(), out.sent, out.queues)
			}
			// A retry found in the fresh lane (sent before the lanes), once
			// due, is moved, unattempted.
			clk.Advance(time.Minute)
			stray := out.sent[1]
			stray.Lane = ""
			b, _ = json.Marshal(stray)
			handle("m6", b)
			if slowPosts.Load() != 3 || len(out.sent) != 3 || out.queues[2] != queue.WebhookSlowLane || out.sent[2].Attempt != 2 {
				t.Fatalf("a retry in the fresh lane: %d requests, sent %+v to %v", slowPosts.Load(), out.sent, out.queues)
			}
		})
	}
}

// TestMarkRunsOut: a lane mark ends at its time (SlowMark after the slow
// attempt), in the store as in memory.
func TestMarkRunsOut(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	st := slotStores()["sqlite"](t, clk)
	for name, slots := range map[string]Slots{"memory": NewMemorySlots(clk), "store": StoreSlots{Store: st, Clock: clk}} {
		if err := slots.MarkSlow(ctx, "ven_1", "whsub_1", clk.Now().Add(SlowMark)); err != nil {
			t.Fatal(err)
		}
		l, err := slots.Look(ctx, "ven_1")
		if err != nil || !l.SlowUntil("whsub_1").After(clk.Now()) || !l.SlowUntil("whsub_2").IsZero() {
			t.Fatalf("%s: marked %v (%v)", name, l.SlowUntil("whsub_1"), err)
		}
		if !misrouted(Message{SubscriptionID: "whsub_1", Attempt: 1}, 1, l, clk.Now()) ||
			misrouted(Message{SubscriptionID: "whsub_1", Attempt: 1}, 1, l, clk.Now().Add(SlowMark)) ||
			misrouted(Message{SubscriptionID: "whsub_1", Attempt: 1}, 2, l, clk.Now()) {
			t.Errorf("%s: misrouted does not follow the mark's time or a message received again", name)
		}
	}
	clk.Advance(SlowMark + time.Second)
	if l, _ := (StoreSlots{Store: st, Clock: clk}).Look(ctx, "ven_1"); !l.SlowUntil("whsub_1").IsZero() {
		t.Errorf("an expired mark still reads: %v", l.SlowUntil("whsub_1"))
	}
}
