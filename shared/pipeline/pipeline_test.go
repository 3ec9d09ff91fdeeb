package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
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

// perEntry is a queue.PartialBatchSender that counts its calls and fails
// the messages whose bodies it is told to, each on its own, as SQS's
// SendMessageBatch answers per entry.
type perEntry struct {
	mu     sync.Mutex
	refuse map[string]bool
	calls  [][]queue.Outgoing
	sent   []string
}

func (p *perEntry) Send(ctx context.Context, q string, body []byte, d time.Duration) error {
	return p.SendEach(ctx, []queue.Outgoing{{Queue: q, Body: body, Delay: d}})[0]
}

func (p *perEntry) SendEach(_ context.Context, msgs []queue.Outgoing) []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, msgs)
	errs := make([]error, len(msgs))
	for i, m := range msgs {
		if p.refuse[string(m.Body)] {
			errs[i] = errors.New("InvalidParameterValue: message too long")
			continue
		}
		p.sent = append(p.sent, m.Queue+":"+string(m.Body))
	}
	return errs
}

// oneByOne is a plain queue.Sender over the same fake: what the router
// did before it sent in batches, a call a message.
type oneByOne struct{ p *perEntry }

func (o oneByOne) Send(ctx context.Context, q string, body []byte, d time.Duration) error {
	return o.p.Send(ctx, q, body, d)
}

// fanOut is a rule making, for each change JOB#<n>, one message to each
// of the queues, bodies "<sk>/<queue>/<i>", per queues messages each.
func fanOut(per int, queues ...string) pipeline.Rule {
	return func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
		var out []pipeline.Outgoing
		for _, q := range queues {
			for i := range per {
				out = append(out, pipeline.Outgoing{Queue: q, Body: []byte(fmt.Sprintf("%s/%s/%d", c.Key.SK, q, i)), Delay: time.Duration(i) * time.Second})
			}
		}
		return out, nil
	}
}

func jobs(n int) []store.Change {
	var cs []store.Change
	for i := range n {
		cs = append(cs, store.Change{Kind: store.Inserted, Key: store.Key{PK: "V", SK: fmt.Sprintf("JOB#%d", i)}})
	}
	return cs
}

// A pass of 25 messages to one queue (five changes of five) is three
// calls on a PartialBatchSender, ten, ten and five, where a plain sender
// makes 25; messages of two queues never share a call, and each message
// keeps its delay.
func TestRouterSendsTenToACall(t *testing.T) {
	ctx := context.Background()
	p := &perEntry{}
	if n, err := (pipeline.Router{Rules: []pipeline.Rule{fanOut(5, "jobs")}, Queue: oneByOne{p}}).Route(ctx, jobs(5)); err != nil || n != 5 {
		t.Fatalf("one by one: routed %d, %v", n, err)
	}
	if len(p.calls) != 25 {
		t.Fatalf("a plain sender made %d calls for 25 messages, want 25", len(p.calls))
	}

	p = &perEntry{}
	if n, err := (pipeline.Router{Rules: []pipeline.Rule{fanOut(5, "jobs")}, Queue: p}).Route(ctx, jobs(5)); err != nil || n != 5 {
		t.Fatalf("in batches: routed %d, %v", n, err)
	}
	var sizes []int
	for _, c := range p.calls {
		sizes = append(sizes, len(c))
	}
	slices.Sort(sizes)
	if !slices.Equal(sizes, []int{5, 10, 10}) || len(p.sent) != 25 {
		t.Fatalf("calls of %v messages sent %d, want 3 calls (5, 10, 10) sending 25", sizes, len(p.sent))
	}

	// Two queues, 13 changes of one message each to both: 2 calls a queue.
	p = &perEntry{}
	if n, err := (pipeline.Router{Rules: []pipeline.Rule{fanOut(1, "hooks", "jobs")}, Queue: p}).Route(ctx, jobs(13)); err != nil || n != 13 {
		t.Fatalf("two queues: routed %d, %v", n, err)
	}
	if len(p.calls) != 4 || len(p.sent) != 26 {
		t.Fatalf("two queues: %d calls sending %d, want 4 sending 26", len(p.calls), len(p.sent))
	}
	for _, c := range p.calls {
		for _, m := range c {
			if m.Queue != c[0].Queue {
				t.Fatalf("a call mixes queues %s and %s", c[0].Queue, m.Queue)
			}
			if m.Delay != 0 {
				t.Fatalf("message %s has delay %s, want none", m.Body, m.Delay)
			}
		}
	}
	p = &perEntry{}
	(pipeline.Router{Rules: []pipeline.Rule{fanOut(3, "jobs")}, Queue: p}).Route(ctx, jobs(1))
	for _, m := range p.calls[0] {
		if !strings.HasSuffix(string(m.Body), fmt.Sprint(int(m.Delay/time.Second))) {
			t.Fatalf("message %s sent with delay %s", m.Body, m.Delay)
		}
	}
}

// A message the queue refuses fails only its change: Route reports the
// changes before it routed and names the message; the changes after it
// were sent in the same pass, and the retry from the failed change sends
// them again (routed twice, done once) and routes the rest.
func TestRouterMapsAFailedMessageToItsChange(t *testing.T) {
	ctx := context.Background()
	p := &perEntry{refuse: map[string]bool{"JOB#7/jobs/1": true}}
	r := pipeline.Router{Rules: []pipeline.Rule{fanOut(2, "hooks", "jobs")}, Queue: p}
	changes := jobs(12) // 48 messages: 3 calls a queue
	n, err := r.Route(ctx, changes)
	if n != 7 || err == nil || !strings.Contains(err.Error(), "V/JOB#7") || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("routed %d, %v; want 7 and the refused message's error", n, err)
	}
	if len(p.calls) != 6 || len(p.sent) != 47 {
		t.Fatalf("%d calls sent %d messages, want 6 calls sending all but the refused one", len(p.calls), len(p.sent))
	}
	delete(p.refuse, "JOB#7/jobs/1")
	if n, err := r.Route(ctx, changes[n:]); n != 5 || err != nil {
		t.Fatalf("the retry routed %d, %v; want the remaining 5", n, err)
	}
	count := map[string]int{}
	for _, s := range p.sent {
		count[s]++
	}
	if len(count) != 48 || count["jobs:JOB#7/jobs/1"] != 1 || count["jobs:JOB#11/jobs/0"] != 2 || count["hooks:JOB#0/hooks/0"] != 1 {
		t.Fatalf("sent %d distinct messages (%v)", len(count), count)
	}

	// The first change's message refused: nothing is routed.
	p = &perEntry{refuse: map[string]bool{"JOB#0/hooks/0": true}}
	if n, err := (pipeline.Router{Rules: []pipeline.Rule{fanOut(1, "hooks")}, Queue: p}).Route(ctx, jobs(3)); n != 0 || err == nil {
		t.Fatalf("routed %d, %v; want 0 and the failure", n, err)
	}
}
