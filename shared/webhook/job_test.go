package webhook

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestJobRecordsKeepTheirShape: replays and recoveries, stored and shown,
// encode as they did before they shared a shape (JobTimes, Outcomes and
// their heads embedded): the same members in the same order.
func TestJobRecordsKeepTheirShape(t *testing.T) {
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	later := at.Add(time.Minute)
	reason := RecoveryStoppedDisabled
	total := int64(5)
	outcomes := Outcomes{Delivered: 3, Failed: 1, Skipped: 1}
	rh := RecoveryHead{ID: "rcv_1", VendorID: "ven_1", SubscriptionID: "whsub_1", Since: at, Until: later, Status: ReplayFailed, Reason: &reason}
	cases := []struct {
		v    any
		want string
	}{
		{Replay{ReplayHead: ReplayHead{ID: "rpl_1", EventID: "evt_1", VendorID: "ven_1", Status: ReplayRunning, SubscriptionIDs: []string{"whsub_1"}},
			Destinations: []string{"whsub_1"}, JobTimes: JobTimes{CreatedAt: at, StartedAt: &later}},
			`{"replay_id":"rpl_1","event_id":"evt_1","vendor_id":"ven_1","status":"running","subscription_ids":["whsub_1"],"destinations":["whsub_1"],"created_at":"2026-03-04T10:00:00Z","started_at":"2026-03-04T10:01:00Z","completed_at":null}`},
		{ReplayView{ReplayHead: ReplayHead{ID: "rpl_1", EventID: "evt_1", VendorID: "ven_1", Status: ReplayCompleted}, Total: &total, Outcomes: outcomes,
			JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"replay_id":"rpl_1","event_id":"evt_1","vendor_id":"ven_1","status":"completed","subscription_ids":null,"total":5,"delivered":3,"failed":1,"skipped":1,"created_at":"2026-03-04T10:00:00Z","started_at":"2026-03-04T10:01:00Z","completed_at":"2026-03-04T10:01:00Z"}`},
		{Recovery{RecoveryHead: rh, Cursor: "EVENT#x", InFlight: []string{"evt_1"}, Done: true, JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"id":"rcv_1","vendor_id":"ven_1","subscription_id":"whsub_1","since":"2026-03-04T10:00:00Z","until":"2026-03-04T10:01:00Z","status":"failed","reason":"subscription_disabled","cursor":"EVENT#x","in_flight":["evt_1"],"done":true,"created_at":"2026-03-04T10:00:00Z","started_at":"2026-03-04T10:01:00Z","completed_at":"2026-03-04T10:01:00Z"}`},
		{RecoveryView{RecoveryHead: rh, Total: 5, Outcomes: outcomes, JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"id":"rcv_1","vendor_id":"ven_1","subscription_id":"whsub_1","since":"2026-03-04T10:00:00Z","until":"2026-03-04T10:01:00Z","status":"failed","reason":"subscription_disabled","total":5,"delivered":3,"failed":1,"skipped":1,"created_at":"2026-03-04T10:00:00Z","started_at":"2026-03-04T10:01:00Z","completed_at":"2026-03-04T10:01:00Z"}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("%T encodes as\n%s (%v), want\n%s", c.v, b, err, c.want)
		}
	}
}

// TestReplayEndsWhenItsLastOutcomeIsReportedAgain: a delivery worker that
// counted a replay's last outcome and died before ending the replay
// leaves it running with nothing pending; the message handled again
// (its outcome already counted) ends it, once, as a recovery's does.
func TestReplayEndsWhenItsLastOutcomeIsReportedAgain(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	clk.Tick(time.Millisecond)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	svc := Service{Store: st, Clock: clk, Policy: Policy{AllowLoopback: true}, Secrets: testBox(t)}
	const vendorID = "ven_1"
	prep, err := svc.PrepareCreate(ctx, vendorID, CreateInput{Destination: HTTPS("http://127.0.0.1:9/hook"), EventTypes: []string{"product.created"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, prep.Ops...); err != nil {
		t.Fatal(err)
	}
	ev := event.New(clk.Now(), vendorID, event.ProductCreated, "product", "prd_1", nil)
	op, _ := event.Op(ev)
	if err := st.Transact(ctx, op); err != nil {
		t.Fatal(err)
	}
	rv, err := svc.CreateReplay(ctx, vendorID, ev.ID, ReplayInput{})
	if err != nil {
		t.Fatal(err)
	}
	job, _ := json.Marshal(replayJob{VendorID: vendorID, EventID: ev.ID, ReplayID: rv.ID})
	out := &sink{}
	if err := (Replayer{Store: st, Clock: clk, Queue: out}).Handle(ctx, queue.Message{ID: "m1", Queue: queue.EventReplays, Body: job}); err != nil {
		t.Fatal(err)
	}
	if len(out.sent) != 1 {
		t.Fatalf("%d deliveries queued, want 1", len(out.sent))
	}
	m := out.sent[0]
	// The crashed worker's count: the mark and the counters, no end.
	key, mk := replayKind.keys(m)
	if err := st.Transact(ctx, store.Put(store.Item{PK: mk.PK, SK: mk.SK, Version: 1, Data: []byte(`{}`)}, store.IfAbsent()),
		store.Add(key, map[string]int64{replayDelivered: 1, datamodel.ReplayPendingAttr: -1}, 0, store.Cond{Exists: true})); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.GetReplay(ctx, vendorID, ev.ID, rv.ID); got.Status != ReplayRunning || got.Delivered != 1 {
		t.Fatalf("after the crash: %+v", got)
	}
	d := Deliverer{Store: st, Clock: clk, Queue: out}
	for range 2 {
		if err := d.countOutcome(ctx, m, replayDelivered); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := svc.GetReplay(ctx, vendorID, ev.ID, rv.ID)
	if got.Status != ReplayCompleted || got.Delivered != 1 || *got.Total != 1 || got.CompletedAt == nil {
		t.Fatalf("reported again: %+v", got)
	}
	items, _ := st.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.EventPrefix, Limit: 100})
	n := 0
	for _, it := range items {
		if e, _ := event.Decode(it); e.Type == event.EventReplayCompleted {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d event_replay.completed events, want 1", n)
	}
}
