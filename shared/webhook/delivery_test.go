package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/event"
)

func TestRetryCeilings(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Minute, 2: 2 * time.Minute, 3: 4 * time.Minute, 10: 512 * time.Minute,
		11: 12 * time.Hour, 12: 12 * time.Hour, 100: 12 * time.Hour} {
		if got := RetryCeiling(n); got != want {
			t.Errorf("RetryCeiling(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	start := clocktest.Date(2026, 1, 1, 0, 0, 0)
	m := Message{CreatedAt: start, Attempt: 3}
	// Full jitter: anywhere from the minimum to the ceiling.
	if at, ok := m.next(start.Add(time.Hour), 1); !ok || at != start.Add(time.Hour+4*time.Minute) {
		t.Fatalf("jitter 1: %v %v", at, ok)
	}
	if at, ok := m.next(start.Add(time.Hour), 0.5); !ok || at != start.Add(time.Hour+2*time.Minute) {
		t.Fatalf("jitter 0.5: %v %v", at, ok)
	}
	if at, ok := m.next(start.Add(time.Hour), 0); !ok || at != start.Add(time.Hour+MinRetryDelay) {
		t.Fatalf("jitter 0: %v %v", at, ok)
	}
	// Never past the window: the last attempt is at its end.
	m.Attempt = 20
	if at, ok := m.next(start.Add(70*time.Hour), 1); !ok || at != start.Add(RetryWindow) {
		t.Fatalf("clamped: %v %v", at, ok)
	}
	if _, ok := m.next(start.Add(RetryWindow), 1); ok {
		t.Fatal("an attempt after the window")
	}
	// Replays have a window of their own.
	m.ReplayID = "rpl_1"
	if _, ok := m.next(start.Add(ReplayRetryWindow), 0.5); ok {
		t.Fatal("a replay attempt after the replay window")
	}
}

func TestDeliveryIDs(t *testing.T) {
	a, b := DeliveryID("evt_1", "whsub_1", ""), DeliveryID("evt_1", "whsub_1", "")
	if a != b || a == DeliveryID("evt_1", "whsub_2", "") || a == DeliveryID("evt_1", "whsub_1", "rpl_1") || len(a) != len("dlv_")+32 {
		t.Fatalf("delivery ids: %s %s", a, b)
	}
}

// sink is a queue.Sender that can fail.
type sink struct {
	mu   sync.Mutex
	fail error
	sent []Message
	// queues are the queues of sent, in order.
	queues []string
}

func (s *sink) Send(_ context.Context, q string, body []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	var m Message
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	s.sent = append(s.sent, m)
	s.queues = append(s.queues, q)
	return nil
}

// A replay worker that crashes after recording its selection but before
// queueing every delivery resumes with the destinations that have no
// outcome yet, and never selects twice.
func TestReplayResumesAfterACrash(t *testing.T) {
	ctx := context.Background()
	f := newReplayFixture(t, 3)
	st, clk, subs, msg := f.st, f.clk, f.subs, f.msg

	// The queue is down after the selection is stored: the handler fails.
	down := &sink{fail: errors.New("queue unavailable")}
	if err := (Replayer{Store: st, Clock: clk, Queue: down}).Handle(ctx, msg); err == nil {
		t.Fatal("handled without queueing the deliveries")
	}
	if got := f.get(t); got.Status != ReplayRunning || *got.Total != 3 {
		t.Fatalf("after the crash: %+v", got)
	}
	// One destination's outcome is in before the retry.
	d := Deliverer{Store: st, Clock: clk}
	first := Message{VendorID: fixtureVendor, EventID: f.ev.ID, SubscriptionID: subs[0], ReplayID: f.rv.ID, DeliveryID: DeliveryID(f.ev.ID, subs[0], f.rv.ID)}
	if err := d.countOutcome(ctx, first, replayDelivered); err != nil {
		t.Fatal(err)
	}
	// Counted once, however often it is reported.
	if err := d.countOutcome(ctx, first, replayDelivered); err != nil {
		t.Fatal(err)
	}
	up := &sink{}
	if err := (Replayer{Store: st, Clock: clk, Queue: up}).Handle(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if len(up.sent) != 2 || up.sent[0].SubscriptionID != subs[1] || up.sent[1].SubscriptionID != subs[2] || up.sent[0].ReplayID != f.rv.ID {
		t.Fatalf("resumed with %+v", up.sent)
	}
	if got := f.get(t); got.Status != ReplayRunning || *got.Total != 3 || got.Delivered != 1 {
		t.Fatalf("still running: %+v", got)
	}
	for _, m := range up.sent {
		if err := d.countOutcome(ctx, m, replaySkipped); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.get(t); got.Status != ReplayCompleted || got.Delivered != 1 || got.Skipped != 2 || got.CompletedAt == nil {
		t.Fatalf("completed: %+v", got)
	}
	// Handled again once complete, it does nothing.
	again := &sink{}
	if err := (Replayer{Store: st, Clock: clk, Queue: again}).Handle(ctx, msg); err != nil || len(again.sent) != 0 {
		t.Fatalf("a completed replay re-sent %d: %v", len(again.sent), err)
	}
	if n := completions(t, st, event.EventReplayCompleted); n != 1 {
		t.Fatalf("%d event_replay.completed events", n)
	}
}
