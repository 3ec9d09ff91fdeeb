package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// lookCounter is a Slots that counts its Looks, and fails them with fail.
type lookCounter struct {
	Slots
	looks atomic.Int64
	fail  error
}

func (s *lookCounter) Look(ctx context.Context, vendorID string) (Look, error) {
	s.looks.Add(1)
	if s.fail != nil {
		return Look{}, s.fail
	}
	return s.Slots.Look(ctx, vendorID)
}

// delayed records what is sent, with its queue and delay.
type delayed struct {
	mu   sync.Mutex
	sent []pipeline.Outgoing
}

func (q *delayed) Send(_ context.Context, name string, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, pipeline.Outgoing{Queue: name, Body: body, Delay: delay})
	return nil
}

// fanOutEvent writes a new event of vendorID and returns what d's rule
// routes for it.
func fanOutEvent(t *testing.T, st store.Store, clk clock.Clock, d Deliverer, vendorID, productID string) []pipeline.Outgoing {
	t.Helper()
	ctx := context.Background()
	ev := event.New(clk.Now(), vendorID, event.ProductCreated, "product", productID, nil)
	op, _ := event.Op(ev)
	if err := st.Transact(ctx, op); err != nil {
		t.Fatal(err)
	}
	routed, err := d.Rule(ctx, store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item})
	if err != nil {
		t.Fatalf("fan-out: %v", err)
	}
	return routed
}

func decodeMessage(t *testing.T, b []byte) Message {
	t.Helper()
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestFanOutSendsMarkedSubscriptionsToTheSlowLane: a vendor with 20
// subscriptions, 5 of them marked slow, whose 4 slots are all held by slow
// attempts. Its event's fan-out looks at the slots once and sends the 5
// marked subscriptions' deliveries to the slow lane as their first
// deferral (delay at least FirstDeferDelay, the one the worker would have
// given them), the 15 others to the fresh lane unchanged. The worker,
// handling the fresh-lane message of a marked subscription, sends exactly
// the message and delay the fan-out did; and a deferred message from the
// fan-out, once due and with a slot free, is attempted in the slow lane.
// With slots free when looked, the marked ones go to the slow lane at
// once, not deferred (the one whose prompt attempt took its mark away, to
// the fresh lane). On both stores and in memory.
func TestFanOutSendsMarkedSubscriptionsToTheSlowLane(t *testing.T) {
	const vendorID = "ven_tarpit"
	for name, open := range slotKeepers() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st, inner := open(t, clk)
			slots := &lookCounter{Slots: inner}
			var posts atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
			defer srv.Close()
			q := &delayed{}
			d := Deliverer{Store: st, Clock: clk, Queue: q, Policy: Policy{AllowLoopback: true}, Jitter: func() float64 { return 0.5 },
				Slots: slots, Secrets: testBox(t)}
			subs, _ := stormVendor(t, st, clk, d, vendorID, srv.URL+"/hook", MaxSubscriptions, 0)
			marked := map[string]bool{}
			for _, id := range subs[:5] {
				marked[id] = true
				if err := inner.MarkSlow(ctx, vendorID, id, clk.Now().Add(SlowMark)); err != nil {
					t.Fatal(err)
				}
			}
			var releases []func(context.Context) error
			for i := range VendorSlots {
				look, err := inner.Look(ctx, vendorID)
				if err != nil {
					t.Fatal(err)
				}
				r, ok, err := inner.Take(ctx, look, Holder{Owner: fmt.Sprintf("held-%d", i), SubscriptionID: subs[i]})
				if err != nil || !ok {
					t.Fatalf("take slot %d: %v %v", i, ok, err)
				}
				releases = append(releases, r)
			}

			routed := fanOutEvent(t, st, clk, d, vendorID, "prd_1")
			if len(routed) != MaxSubscriptions || slots.looks.Load() != 1 {
				t.Fatalf("fan-out: %d messages after %d looks; want %d after one", len(routed), slots.looks.Load(), MaxSubscriptions)
			}
			var slow []pipeline.Outgoing
			for _, o := range routed {
				m := decodeMessage(t, o.Body)
				if m.Attempt != 1 || !m.CreatedAt.Equal(clk.Now()) || !m.NotBefore.Equal(clk.Now()) || m.DeliveryID != DeliveryID(m.EventID, m.SubscriptionID, "") {
					t.Fatalf("a fanned-out message %+v", m)
				}
				if !marked[m.SubscriptionID] {
					if o.Queue != queue.WebhookDeliveries || o.Delay != 0 || m.Lane != "" || m.Deferrals != 0 {
						t.Fatalf("an unmarked subscription's delivery went to %s after %v as %+v; want the fresh lane at once", o.Queue, o.Delay, m)
					}
					continue
				}
				if o.Queue != queue.WebhookSlowLane || m.Lane != LaneSlow || m.Deferrals != 1 || o.Delay < FirstDeferDelay {
					t.Fatalf("a marked subscription's delivery went to %s after %v as %+v; want the slow lane, deferred once, after at least %v",
						o.Queue, o.Delay, m, FirstDeferDelay)
				}
				slow = append(slow, o)
			}
			if len(slow) != len(marked) {
				t.Fatalf("%d deliveries in the slow lane, want %d", len(slow), len(marked))
			}

			// The worker, given the same delivery in the fresh lane, sends
			// the same message after the same delay.
			fresh := decodeMessage(t, slow[0].Body)
			fresh.Lane, fresh.Deferrals = "", 0
			b, _ := json.Marshal(fresh)
			if err := d.Handle(ctx, queue.Message{ID: "fresh-1", Body: b, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			if len(q.sent) != 1 || q.sent[0].Queue != slow[0].Queue || q.sent[0].Delay != slow[0].Delay ||
				decodeMessage(t, q.sent[0].Body) != decodeMessage(t, slow[0].Body) {
				t.Fatalf("the worker moved the delivery as %+v; the fan-out as %s after %v: %s", q.sent, slow[0].Queue, slow[0].Delay, slow[0].Body)
			}

			// Once due, with a slot free, the deferred message is attempted.
			clk.Advance(slow[0].Delay)
			for _, r := range releases {
				if err := r(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Handle(ctx, queue.Message{ID: "slow-1", Body: slow[0].Body, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			if posts.Load() != 1 {
				t.Fatalf("the fan-out's slow-lane delivery made %d requests, want 1", posts.Load())
			}
			// Its prompt answer took its subscription's mark away.
			delete(marked, decodeMessage(t, slow[0].Body).SubscriptionID)

			// Slots free when looked: the marked ones are moved at once.
			routed = fanOutEvent(t, st, clk, d, vendorID, "prd_2")
			for _, o := range routed {
				m := decodeMessage(t, o.Body)
				want := queue.WebhookDeliveries
				if marked[m.SubscriptionID] {
					want = queue.WebhookSlowLane
				}
				if o.Queue != want || o.Delay != 0 || m.Deferrals != 0 {
					t.Fatalf("with slots free, %s's delivery went to %s after %v as %+v; want %s at once", m.SubscriptionID, o.Queue, o.Delay, m, want)
				}
			}
		})
	}
}

// TestFanOutLooksOnlyBeyondTheSlots: an event fanning out to at most
// VendorSlots deliveries makes no look, and its deliveries stay in the
// fresh lane even to a marked subscription (the worker moves them); a
// failed look leaves every delivery in the fresh lane, logs a warning,
// and fails nothing. On both stores and in memory.
func TestFanOutLooksOnlyBeyondTheSlots(t *testing.T) {
	for name, open := range slotKeepers() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st, inner := open(t, clk)
			slots := &lookCounter{Slots: inner}
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			var logs bytes.Buffer
			d := Deliverer{Store: st, Clock: clk, Queue: &delayed{}, Policy: Policy{AllowLoopback: true}, Slots: slots, Secrets: testBox(t),
				Log: slog.New(slog.NewJSONHandler(&logs, nil))}
			allFresh := func(routed []pipeline.Outgoing, n int) {
				t.Helper()
				if len(routed) != n {
					t.Fatalf("%d messages, want %d", len(routed), n)
				}
				for _, o := range routed {
					if m := decodeMessage(t, o.Body); o.Queue != queue.WebhookDeliveries || o.Delay != 0 || m.Lane != "" || m.Deferrals != 0 {
						t.Fatalf("a delivery went to %s after %v as %+v; want the fresh lane at once", o.Queue, o.Delay, m)
					}
				}
			}

			few, _ := stormVendor(t, st, clk, d, "ven_few", srv.URL+"/hook", VendorSlots, 0)
			for _, id := range few {
				if err := inner.MarkSlow(ctx, "ven_few", id, clk.Now().Add(SlowMark)); err != nil {
					t.Fatal(err)
				}
			}
			allFresh(fanOutEvent(t, st, clk, d, "ven_few", "prd_1"), VendorSlots)
			if n := slots.looks.Load(); n != 0 {
				t.Fatalf("a fan-out to %d deliveries made %d looks, want none", VendorSlots, n)
			}

			many, _ := stormVendor(t, st, clk, d, "ven_many", srv.URL+"/hook", VendorSlots+1, 0)
			for _, id := range many {
				if err := inner.MarkSlow(ctx, "ven_many", id, clk.Now().Add(SlowMark)); err != nil {
					t.Fatal(err)
				}
			}
			slots.fail = errors.New("the slots partition is unreadable")
			allFresh(fanOutEvent(t, st, clk, d, "ven_many", "prd_2"), VendorSlots+1)
			if n := slots.looks.Load(); n != 1 {
				t.Fatalf("a fan-out to %d deliveries made %d looks, want one", VendorSlots+1, n)
			}
			if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), "ven_many") ||
				!strings.Contains(logs.String(), "the slots partition is unreadable") {
				t.Fatalf("a failed look logged %s; want a warning naming the vendor and the error", logs.String())
			}
		})
	}
}

// TestMarkedBurstSkipsTheFreshLane measures the fan-out's slot look on
// the tarpit minute (tarpitMinute). When the fan-out leaves every
// delivery in the fresh lane (as before), all 240 are handled there
// first, only to be deferred; when it looks, none is, and the deliveries
// are handled over the simulated minute about 240 times fewer, with no
// request made and none lost. In memory and on the embedded store, and
// on DynamoDB Local with SELLERAPI_TEST_STORES=all: the look it makes
// there is TestFanOutSendsMarkedSubscriptionsToTheSlowLane's, and the
// worker's deferrals over those slots TestDeferralStormIsSpread's.
func TestMarkedBurstSkipsTheFreshLane(t *testing.T) {
	for name, open := range slotKeepers() {
		if name == "dynamodb" && !onDynamoDB() {
			continue
		}
		t.Run(name, func(t *testing.T) {
			allFresh, fresh := tarpitMinute(t, open, false, false)
			if fresh != tarpitMessages {
				t.Fatalf("a fan-out that did not look sent %d deliveries to the fresh lane, want all %d", fresh, tarpitMessages)
			}
			looked, fresh := tarpitMinute(t, open, false, true)
			if fresh != 0 {
				t.Fatalf("a fan-out that looked sent %d deliveries to the fresh lane, want none", fresh)
			}
			if looked > allFresh-tarpitMessages/2 {
				t.Fatalf("the deliveries were handled %d times in the minute after a fan-out that looked, %d after one that did not; want at least %d fewer",
					looked, allFresh, tarpitMessages/2)
			}
		})
	}
}

// TestReplayFanOutSendsMarkedSubscriptionsToTheSlowLane: a replay's
// deliveries take the event fan-out's route. With more destinations than
// the vendor's slots, all of them held by attempts to receivers marked
// slow, the deliveries to the marked subscriptions go to the slow lane as
// their first deferral, the others to the fresh lane at once, after one
// look; without slots every delivery goes to the fresh lane, as before.
func TestReplayFanOutSendsMarkedSubscriptionsToTheSlowLane(t *testing.T) {
	ctx := context.Background()
	f := newReplayFixture(t, 6)
	slots := &lookCounter{Slots: StoreSlots{Store: f.st, Clock: f.clk}}
	marked := map[string]bool{f.subs[0]: true, f.subs[1]: true}
	for id := range marked {
		if err := slots.MarkSlow(ctx, fixtureVendor, id, f.clk.Now().Add(SlowMark)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range VendorSlots {
		look, err := slots.Slots.Look(ctx, fixtureVendor)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := slots.Take(ctx, look, Holder{Owner: fmt.Sprintf("held-%d", i), SubscriptionID: f.subs[i%2]}); err != nil || !ok {
			t.Fatalf("take slot %d: %v %v", i, ok, err)
		}
	}
	q := &delayed{}
	if err := (Replayer{Store: f.st, Clock: f.clk, Queue: q, Lanes: Deliverer{Clock: f.clk, Slots: slots}}).Handle(ctx, f.msg); err != nil {
		t.Fatal(err)
	}
	if len(q.sent) != 6 || slots.looks.Load() != 1 {
		t.Fatalf("%d deliveries after %d looks; want 6 after one", len(q.sent), slots.looks.Load())
	}
	for _, o := range q.sent {
		m := decodeMessage(t, o.Body)
		if m.ReplayID != f.rv.ID || m.Attempt != 1 {
			t.Fatalf("a replayed delivery %+v", m)
		}
		switch {
		case marked[m.SubscriptionID]:
			if o.Queue != queue.WebhookSlowLane || m.Lane != LaneSlow || m.Deferrals != 1 || o.Delay < FirstDeferDelay {
				t.Errorf("a marked subscription's delivery went to %s after %v as %+v; want the slow lane, deferred once", o.Queue, o.Delay, m)
			}
		case o.Queue != queue.WebhookDeliveries || o.Delay != 0 || m.Lane != "" || m.Deferrals != 0:
			t.Errorf("an unmarked subscription's delivery went to %s after %v as %+v; want the fresh lane at once", o.Queue, o.Delay, m)
		}
	}

	g := newReplayFixture(t, 6)
	plain := &delayed{}
	if err := (Replayer{Store: g.st, Clock: g.clk, Queue: plain}).Handle(ctx, g.msg); err != nil {
		t.Fatal(err)
	}
	for _, o := range plain.sent {
		if o.Queue != queue.WebhookDeliveries || o.Delay != 0 {
			t.Errorf("without slots a delivery went to %s after %v; want the fresh lane at once", o.Queue, o.Delay)
		}
	}
}
