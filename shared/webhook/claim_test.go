package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// TestEachAttemptIsMadeOnce: an event fanned out twice (the router's sweep
// after a send it could not confirm) and a message received again after a
// worker died mid-batch make each attempt once: one request to the
// receiver, one attempt record, the event marked delivered, the healthy
// subscription's item left as it was; a redelivered failed
// attempt queues its retry again, a duplicate queues none, and the
// duplicate retries make the next attempt once. Duplicates are handled at once, on real goroutines, on
// both stores.
func TestEachAttemptIsMadeOnce(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st := open(t, clk)
			var posts atomic.Int64
			var failing atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				if failing.Load() {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			}))
			defer srv.Close()
			policy := Policy{AllowLoopback: true}
			box := testBox(t)
			svc := Service{Store: st, Clock: clk, Policy: policy, Secrets: box}
			const vendorID = "ven_1"
			prep, err := svc.PrepareCreate(ctx, vendorID, CreateInput{Destination: HTTPS(srv.URL + "/hook"), EventTypes: []string{"product.created"}})
			if err != nil {
				t.Fatal(err)
			}
			v := prep.View
			if err := st.Transact(ctx, prep.Ops...); err != nil {
				t.Fatal(err)
			}
			retries := &sink{}
			d := Deliverer{Store: st, Clock: clk, Queue: retries, Policy: policy, Jitter: func() float64 { return 0 }, Secrets: box}
			newEvent := func() store.Change {
				ev := event.New(clk.Now(), vendorID, event.ProductCreated, "product", "prd_1", nil)
				op, _ := event.Op(ev)
				if err := st.Transact(ctx, op); err != nil {
					t.Fatal(err)
				}
				return store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item}
			}
			// fanOut routes the change twice, as a sweep does after a
			// router that sent but could not confirm.
			fanOut := func(c store.Change) []queue.Message {
				var msgs []queue.Message
				for i := range 2 {
					out, err := d.Rule(ctx, c)
					if err != nil || len(out) != 1 {
						t.Fatalf("fan-out: %v, %v", out, err)
					}
					msgs = append(msgs, queue.Message{ID: fmt.Sprintf("%s-%d", c.Key.SK, i), Body: out[0].Body})
				}
				return msgs
			}
			handleAll := func(msgs []queue.Message) {
				var wg sync.WaitGroup
				for _, m := range msgs {
					wg.Go(func() {
						if err := d.Handle(ctx, m); err != nil {
							t.Error(err)
						}
					})
				}
				wg.Wait()
			}
			attempts := func() []Attempt {
				items, err := st.Query(ctx, store.Query{PK: datamodel.SubscriptionKey(vendorID, v.ID).PK, Prefix: datamodel.AttemptPrefix + v.ID + "#", Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				var out []Attempt
				for _, it := range items {
					var a Attempt
					json.Unmarshal(it.Data, &a)
					out = append(out, a)
				}
				return out
			}

			// A success, fanned out twice (handled at once), and each
			// message received again later (a worker killed before
			// deleting it; SQS never shows a message to two receivers
			// within its visibility timeout).
			subItem := func() store.Item {
				it, err := st.Get(ctx, datamodel.SubscriptionKey(vendorID, v.ID))
				if err != nil {
					t.Fatal(err)
				}
				return it
			}
			before := subItem()
			msgs := fanOut(newEvent())
			handleAll(msgs)
			handleAll(msgs)
			var first Message
			json.Unmarshal(msgs[0].Body, &first)
			marked, err := delivered(ctx, st, vendorID, v.ID, []string{first.EventID})
			if err != nil {
				t.Fatal(err)
			}
			if posts.Load() != 1 || len(attempts()) != 1 || !marked[first.EventID] {
				t.Fatalf("one delivery made %d requests, %d attempt records, delivered mark %v", posts.Load(), len(attempts()), marked)
			}
			if after := subItem(); len(after.Nums) != len(before.Nums) || after.Nums[datamodel.FailuresAttr] != 0 || after.Nums[datamodel.RecoveredAttr] != 0 {
				t.Fatalf("a success on a healthy subscription wrote its counters: %v, was %v", after.Nums, before.Nums)
			}

			// A failure: the retry is queued once per receive of the
			// message that made the attempt, and the next attempt made once.
			failing.Store(true)
			msgs = fanOut(newEvent())
			handleAll(msgs[:1])
			handleAll(msgs) // the same message again (a worker killed before deleting it), and the duplicate
			if posts.Load() != 2 || len(attempts()) != 2 {
				t.Fatalf("a failed attempt made %d requests, %d records", posts.Load(), len(attempts()))
			}
			// The owner's two receives queue the retry twice; the duplicate
			// queues nothing, so a dead endpoint's retry chain never forks.
			if len(retries.sent) != 2 || retries.sent[0].Attempt != 2 || retries.sent[1].Attempt != 2 {
				t.Fatalf("retries %+v, want attempt 2 queued once per receive of the owner", retries.sent)
			}
			failing.Store(false)
			clk.Advance(2 * MinRetryDelay)
			var again []queue.Message
			for i, m := range retries.sent {
				b, _ := json.Marshal(m)
				again = append(again, queue.Message{ID: fmt.Sprintf("retry-%d", i), Body: b})
			}
			handleAll(again)
			as := attempts()
			if posts.Load() != 3 || len(as) != 3 {
				t.Fatalf("the retry made %d requests, %d records", posts.Load(), len(as))
			}
			got, _ := svc.Get(ctx, vendorID, v.ID)
			if got.FailureStreak != 0 || got.RecoveredAt != clk.Now().UnixMilli() {
				t.Fatalf("the success after a failure: streak %d, recovered at %d; want 0 and %d", got.FailureStreak, got.RecoveredAt, clk.Now().UnixMilli())
			}
		})
	}
}
