package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestTailRoutesEachInsertOnce writes items, routes the change log twice
// and checks each matching insert made exactly one message; a failing rule
// stops the tail before the failed change, which is routed on a later pass.
func TestTailRoutesEachInsertOnce(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q, err := sqlitequeue.New(s.DB(), clock.System{}.Now)
	if err != nil {
		t.Fatal(err)
	}
	fail := true
	rule := func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
		if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, "JOB#") {
			return nil, nil
		}
		if c.Key.SK == "JOB#3" && fail {
			return nil, errors.New("queue unreachable")
		}
		return []pipeline.Outgoing{{Queue: "jobs", Body: []byte(c.Key.SK)}}, nil
	}
	r := pipeline.Router{Rules: []pipeline.Rule{rule}, Queue: q}
	for _, sk := range []string{"JOB#1", "OTHER#1", "JOB#2", "JOB#3", "JOB#4"} {
		if err := s.Transact(ctx, store.Put(store.Item{PK: "V", SK: sk, Version: 1}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
	s.Transact(ctx, store.Put(store.Item{PK: "V", SK: "JOB#1", Version: 2}, store.Cond{})) // a modify: no work

	if n, err := pipeline.Tail(ctx, s, r, 100); err == nil || n != 3 {
		t.Fatalf("first pass routed %d, err %v; want 3 and the failure", n, err)
	}
	fail = false
	if n, err := pipeline.Tail(ctx, s, r, 100); err != nil || n != 3 {
		t.Fatalf("second pass routed %d, %v; want the remaining 3", n, err)
	}
	if n, _ := pipeline.Tail(ctx, s, r, 100); n != 0 {
		t.Fatalf("third pass routed %d", n)
	}
	var got []string
	q.Work(ctx, "jobs", 100, func(_ context.Context, m queue.Message) error { got = append(got, string(m.Body)); return nil })
	if strings.Join(got, ",") != "JOB#1,JOB#2,JOB#3,JOB#4" {
		t.Fatalf("messages %v", got)
	}
}

// TestRouterSeesOnlyTheRoutedInserts: with Inserted set, the rules are
// shown inserts under those prefixes and nothing else, as the deployed
// stream filter passes them.
func TestRouterSeesOnlyTheRoutedInserts(t *testing.T) {
	r := pipeline.Router{Inserted: []string{"EVENT#", "BULK#"}}
	for _, c := range []struct {
		kind store.ChangeKind
		sk   string
		want bool
	}{
		{store.Inserted, "EVENT#01", true},
		{store.Inserted, "BULK#bop_1", true},
		{store.Modified, "BULK#bop_1", false},
		{store.Removed, "EVENT#01", false},
		{store.Inserted, "PRODUCT#prd_1", false},
		{store.Inserted, "EVENTS", false},
	} {
		if got := r.Sees(store.Change{Kind: c.kind, Key: store.Key{PK: "VENDOR#v", SK: c.sk}}); got != c.want {
			t.Errorf("%v %s: sees %v, want %v", c.kind, c.sk, got, c.want)
		}
	}
	if !(pipeline.Router{}).Sees(store.Change{Kind: store.Removed, Key: store.Key{SK: "X"}}) {
		t.Error("a router without Inserted must show its rules every change")
	}
}

// batches records what the router sent a batch at a time, and refuses
// batches while down.
type batches struct {
	down bool
	got  [][]string
}

func (b *batches) Send(ctx context.Context, q string, body []byte, d time.Duration) error {
	return b.SendBatch(ctx, []queue.Outgoing{{Queue: q, Body: body, Delay: d}})
}

func (b *batches) SendBatch(_ context.Context, msgs []queue.Outgoing) error {
	if b.down {
		return errors.New("queue unavailable")
	}
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, string(m.Body))
	}
	b.got = append(b.got, bodies)
	return nil
}

// TestTailPassesWhatItDoesNotRoute: the router reads past the changes it
// does not show its rules, a batch at a time, and keeps going (Tail
// reports them) until it reaches the routed ones, whose messages go in one
// batch per pass; a batch the queue refuses moves the cursor nowhere.
func TestTailPassesWhatItDoesNotRoute(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rule := func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
		return []pipeline.Outgoing{{Queue: "jobs", Body: []byte(c.Key.SK)}}, nil
	}
	q := &batches{down: true}
	r := pipeline.Router{Rules: []pipeline.Rule{rule}, Queue: q, Inserted: []string{"JOB#"}}
	for _, sk := range []string{"OTHER#1", "OTHER#2", "OTHER#3", "OTHER#4", "JOB#1", "JOB#2"} {
		if err := s.Transact(ctx, store.Put(store.Item{PK: "V", SK: sk, Version: 1}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
	s.Transact(ctx, store.Put(store.Item{PK: "V", SK: "JOB#1", Version: 2}, store.Cond{})) // a modify: not shown

	// Three changes a pass: the first pass only reads past.
	if n, err := pipeline.Tail(ctx, s, r, 3); err != nil || n != 3 {
		t.Fatalf("first pass went past %d, %v; want 3", n, err)
	}
	if n, err := pipeline.Tail(ctx, s, r, 3); err == nil || n != 0 {
		t.Fatalf("second pass with the queue down: %d, %v; want 0 and the failure", n, err)
	}
	q.down = false
	// The failed pass went past OTHER#4 only: the jobs and the modify.
	if n, err := pipeline.Tail(ctx, s, r, 3); err != nil || n != 3 {
		t.Fatalf("third pass went past %d, %v; want 3", n, err)
	}
	if n, err := pipeline.Tail(ctx, s, r, 3); err != nil || n != 0 {
		t.Fatalf("fourth pass went past %d, %v; want nothing left", n, err)
	}
	if len(q.got) != 1 || strings.Join(q.got[0], ",") != "JOB#1,JOB#2" {
		t.Fatalf("batches sent %v, want one of JOB#1 and JOB#2", q.got)
	}
	if rest, _ := s.Changes(ctx, 0, 100); len(rest) != 0 {
		t.Fatalf("the log still holds %d changes every cursor passed", len(rest))
	}
}
