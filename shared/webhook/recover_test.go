package webhook

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestRecoveryWindowIsExactToTheMillisecond: a recovery over [since,
// until) takes the events stamped in since's millisecond and in the one
// before until's, and none of the millisecond before since or of until's.
func TestRecoveryWindowIsExactToTheMillisecond(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := Service{Store: st, Clock: clk, Policy: Policy{AllowLoopback: true}, Secrets: testBox(t)}
	const vendorID = "ven_1"
	prep, err := svc.PrepareCreate(ctx, vendorID, CreateInput{Destination: HTTPS("http://127.0.0.1:9/hook"), EventTypes: []string{AllTypes}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, prep.Ops...); err != nil {
		t.Fatal(err)
	}
	since := clk.Now().Add(time.Second)
	until := since.Add(time.Second)
	stamp := func(at time.Time) string {
		ev := event.New(at, vendorID, event.ProductCreated, "product", "prd_1", nil)
		op, err := event.Op(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Transact(ctx, op); err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	ms := time.Millisecond
	stamp(since.Add(-ms))
	want := []string{stamp(since), stamp(since.Add(ms / 2)), stamp(until.Add(-ms))}
	stamp(until)
	stamp(until.Add(ms / 2))
	slices.Sort(want) // the log's order: within a millisecond, the ids' random part

	clk.Advance(time.Minute + 2*time.Second)
	sub, err := svc.Get(ctx, vendorID, prep.View.View.ID)
	if err != nil {
		t.Fatal(err)
	}
	v, put, err := newRecovery(clk.Now(), sub, since, until)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, put); err != nil {
		t.Fatal(err)
	}
	job, _ := json.Marshal(replayJob{Kind: jobRecovery, VendorID: vendorID, SubscriptionID: sub.ID, RecoveryID: v.ID})
	out := &sink{}
	if err := (Replayer{Store: st, Clock: clk, Queue: out}).Handle(ctx, queue.Message{ID: "m1", Queue: queue.EventReplays, Body: job, Receives: 1}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, m := range out.sent {
		if out.queues[i] != queue.WebhookSlowLane || m.Lane != LaneSlow || m.RecoveryID != v.ID {
			t.Fatalf("delivery %+v on %s", m, out.queues[i])
		}
		got = append(got, m.EventID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("queued %v, want %v", got, want)
	}
	rv, err := svc.GetRecovery(ctx, vendorID, sub.ID, v.ID)
	if err != nil || rv.Status != ReplayRunning || rv.Total != 3 {
		t.Fatalf("recovery %+v: %v", rv, err)
	}
	// Each outcome is counted once; the last completes it.
	d := Deliverer{Store: st, Clock: clk, Queue: out}
	for _, m := range append(out.sent, out.sent[0]) {
		if err := d.countOutcome(ctx, m, replayDelivered); err != nil {
			t.Fatal(err)
		}
	}
	rv, _ = svc.GetRecovery(ctx, vendorID, sub.ID, v.ID)
	if rv.Status != ReplayCompleted || rv.Delivered != 3 || rv.Skipped != 0 || rv.CompletedAt == nil {
		t.Fatalf("completed: %+v", rv)
	}
	if n := completions(t, st, event.WebhookRecoveryCompleted); n != 1 {
		t.Fatalf("%d webhook_recovery.completed events", n)
	}
}
