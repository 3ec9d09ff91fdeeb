package webhook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
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
	at := clocktest.Date(2026, 3, 4, 10, 0, 0)
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
			`{"replay_id":"rpl_1","event_id":"evt_1","vendor_id":"ven_1","status":"running","subscription_ids":["whsub_1"],"destinations":["whsub_1"],"created_at":"{at}","started_at":"{later}","completed_at":null}`},
		{ReplayView{ReplayHead: ReplayHead{ID: "rpl_1", EventID: "evt_1", VendorID: "ven_1", Status: ReplayCompleted}, Total: &total, Outcomes: outcomes,
			JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"replay_id":"rpl_1","event_id":"evt_1","vendor_id":"ven_1","status":"completed","subscription_ids":null,"total":5,"delivered":3,"failed":1,"skipped":1,"created_at":"{at}","started_at":"{later}","completed_at":"{later}"}`},
		{Recovery{RecoveryHead: rh, Cursor: "EVENT#x", InFlight: []string{"evt_1"}, Done: true, JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"id":"rcv_1","vendor_id":"ven_1","subscription_id":"whsub_1","since":"{at}","until":"{later}","status":"failed","reason":"subscription_disabled","cursor":"EVENT#x","in_flight":["evt_1"],"done":true,"created_at":"{at}","started_at":"{later}","completed_at":"{later}"}`},
		{RecoveryView{RecoveryHead: rh, Total: 5, Outcomes: outcomes, JobTimes: JobTimes{CreatedAt: at, StartedAt: &later, CompletedAt: &later}},
			`{"id":"rcv_1","vendor_id":"ven_1","subscription_id":"whsub_1","since":"{at}","until":"{later}","status":"failed","reason":"subscription_disabled","total":5,"delivered":3,"failed":1,"skipped":1,"created_at":"{at}","started_at":"{later}","completed_at":"{later}"}`},
	}
	dates := strings.NewReplacer("{at}", at.Format(time.RFC3339), "{later}", later.Format(time.RFC3339))
	for _, c := range cases {
		want := dates.Replace(c.want)
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != want {
			t.Errorf("%T encodes as\n%s (%v), want\n%s", c.v, b, err, want)
		}
	}
}

// replayFixture is a stored replay, not yet started, of one
// product.created event to subs, enabled subscriptions of the event's
// type, on an embedded store; msg is the message that starts it.
type replayFixture struct {
	st   store.Store
	clk  *clock.Fake
	svc  Service
	subs []string
	ev   event.Event
	rv   ReplayView
	msg  queue.Message
}

const fixtureVendor = "ven_1"

func newReplayFixture(t *testing.T, subs int) replayFixture {
	t.Helper()
	ctx := context.Background()
	f := replayFixture{clk: clocktest.Fake(2026, 3, 4, 10, 0, 0)}
	f.clk.Tick(time.Millisecond)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(f.clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f.st = st
	f.svc = Service{Store: st, Clock: f.clk, Policy: Policy{AllowLoopback: true}, Secrets: testBox(t)}
	for range subs {
		prep, err := f.svc.PrepareCreate(ctx, fixtureVendor, CreateInput{Destination: HTTPS("http://127.0.0.1:9/hook"), EventTypes: []string{"product.created"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Transact(ctx, prep.Ops...); err != nil {
			t.Fatal(err)
		}
		f.subs = append(f.subs, prep.View.View.ID)
	}
	f.ev = event.New(f.clk.Now(), fixtureVendor, event.ProductCreated, "product", "prd_1", nil)
	op, err := event.Op(f.ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, op); err != nil {
		t.Fatal(err)
	}
	if f.rv, err = f.svc.CreateReplay(ctx, fixtureVendor, f.ev.ID, ReplayInput{}); err != nil {
		t.Fatal(err)
	}
	job, _ := json.Marshal(replayJob{VendorID: fixtureVendor, EventID: f.ev.ID, ReplayID: f.rv.ID})
	f.msg = queue.Message{ID: "m1", Queue: queue.EventReplays, Body: job}
	return f
}

// get reads the replay.
func (f replayFixture) get(t *testing.T) ReplayView {
	t.Helper()
	v, err := f.svc.GetReplay(context.Background(), fixtureVendor, f.ev.ID, f.rv.ID)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// completions counts the vendor's events of type typ (a job's completion).
func completions(t *testing.T, st store.Store, typ string) int {
	t.Helper()
	items, err := st.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(fixtureVendor), Prefix: datamodel.EventPrefix, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range items {
		if e, _ := event.Decode(it); e.Type == typ {
			n++
		}
	}
	return n
}

// TestReplayEndsWhenItsLastOutcomeIsReportedAgain: a delivery worker that
// counted a replay's last outcome and died before ending the replay
// leaves it running with nothing pending; the message handled again
// (its outcome already counted) ends it, once, as a recovery's does.
func TestReplayEndsWhenItsLastOutcomeIsReportedAgain(t *testing.T) {
	ctx := context.Background()
	f := newReplayFixture(t, 1)
	out := &sink{}
	if err := (Replayer{Store: f.st, Clock: f.clk, Queue: out}).Handle(ctx, f.msg); err != nil {
		t.Fatal(err)
	}
	if len(out.sent) != 1 {
		t.Fatalf("%d deliveries queued, want 1", len(out.sent))
	}
	m := out.sent[0]
	// The crashed worker's count: the mark and the counters, no end.
	key, mk := replayKind.keys(m)
	if err := f.st.Transact(ctx, store.Put(store.Item{PK: mk.PK, SK: mk.SK, Version: 1, Data: []byte(`{}`)}, store.IfAbsent()),
		store.Add(key, map[string]int64{replayDelivered: 1, datamodel.ReplayPendingAttr: -1}, 0, store.Cond{Exists: true})); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t); got.Status != ReplayRunning || got.Delivered != 1 {
		t.Fatalf("after the crash: %+v", got)
	}
	d := Deliverer{Store: f.st, Clock: f.clk, Queue: out}
	for range 2 {
		if err := d.countOutcome(ctx, m, replayDelivered); err != nil {
			t.Fatal(err)
		}
	}
	if got := f.get(t); got.Status != ReplayCompleted || got.Delivered != 1 || *got.Total != 1 || got.CompletedAt == nil {
		t.Fatalf("reported again: %+v", got)
	}
	if n := completions(t, f.st, event.EventReplayCompleted); n != 1 {
		t.Fatalf("%d event_replay.completed events, want 1", n)
	}
}
