package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// sends records what the router sent, and refuses sends while down.
type sends struct {
	mu   sync.Mutex
	down bool
	got  []string
}

func (s *sends) Send(_ context.Context, q string, body []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return errors.New("sqs: service unavailable")
	}
	s.got = append(s.got, string(body))
	return nil
}

func (s *sends) set(down bool) { s.mu.Lock(); s.down = down; s.mu.Unlock() }

func (s *sends) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := s.got
	s.got = nil
	slices.Sort(got)
	return got
}

func jobRule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	return []pipeline.Outgoing{{Queue: "jobs", Body: []byte(c.Key.SK)}}, nil
}

// markers lists the pending markers' keys of items, over every shard.
func markers(t *testing.T, s store.Store) []string {
	t.Helper()
	var got []string
	for i := range datamodel.PendingShards {
		items, err := s.Query(context.Background(), store.Query{PK: datamodel.PendingShard(i), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			got = append(got, it.SK)
		}
	}
	slices.Sort(got)
	return got
}

func pendingStore(t *testing.T, now func() time.Time) *dynamodb.Store {
	client, table := ddbtest.NewTable(t)
	return dynamodb.New(client, table, dynamodb.WithClock(now),
		dynamodb.WithTransactHook(pipeline.Pending{Prefixes: []string{"JOB#"}, Now: now}.Mark))
}

// TestSweepRoutesWhatTheStreamDidNot: every routed insert commits with its
// marker (and a refused insert with none); the router deletes the marker of
// what it sent; a sweep sends, once, exactly the changes whose routing
// failed or never happened and that are older than the grace period, and
// drops the markers of items gone meanwhile.
func TestSweepRoutesWhatTheStreamDidNot(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	s := pendingStore(t, clk.Now)
	q := &sends{}
	r := pipeline.Router{Rules: []pipeline.Rule{jobRule}, Queue: q, Inserted: []string{"JOB#"}, Pending: s}

	put := func(sk string) store.Item {
		it := store.Item{PK: "VENDOR#v", SK: sk, Version: 1, Data: []byte(`{}`)}
		if err := s.Transact(ctx, store.Put(it, store.IfAbsent()), store.Put(store.Item{PK: "VENDOR#v", SK: "RECEIPT#" + sk, Version: 1}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
		return it
	}
	change := func(it store.Item) []store.Change {
		return []store.Change{{Kind: store.Inserted, Key: it.Key(), New: &it}}
	}
	j1, j2, _, j4 := put("JOB#1"), put("JOB#2"), put("JOB#3"), put("JOB#4")
	if err := s.Transact(ctx, store.Put(store.Item{PK: "VENDOR#v", SK: "OTHER#1", Version: 1}, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	// A refused insert commits nothing, its marker included.
	err := s.Transact(ctx, store.Put(store.Item{PK: "VENDOR#v", SK: "JOB#1", Version: 1}, store.IfAbsent()),
		store.Put(store.Item{PK: "VENDOR#v", SK: "JOB#5", Version: 1}, store.IfAbsent()))
	if !store.IsCondition(err) {
		t.Fatalf("a second insert of JOB#1: %v", err)
	}
	want := []string{"VENDOR#v|JOB#1", "VENDOR#v|JOB#2", "VENDOR#v|JOB#3", "VENDOR#v|JOB#4"}
	if got := markers(t, s); !slices.Equal(got, want) {
		t.Fatalf("markers %v, want %v", got, want)
	}

	// The stream routes JOB#1; JOB#2 fails (the queue refuses sends and
	// the mapping gives up); JOB#3 never reaches the router; JOB#4 is
	// gone (expired) before a sweep routes it.
	if n, err := r.Route(ctx, change(j1)); n != 1 || err != nil {
		t.Fatalf("route JOB#1: %d, %v", n, err)
	}
	q.set(true)
	if n, err := r.Route(ctx, change(j2)); n != 0 || err == nil {
		t.Fatalf("route JOB#2 with sends refused: %d, %v", n, err)
	}
	q.set(false)
	if err := s.Transact(ctx, store.Delete(j4.Key(), store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if got := q.take(); !slices.Equal(got, []string{"JOB#1"}) {
		t.Fatalf("sent %v", got)
	}
	if got := markers(t, s); !slices.Equal(got, want[1:]) {
		t.Fatalf("markers after routing JOB#1: %v", got)
	}

	// Within the grace period nothing is swept.
	if run, err := r.Sweep(ctx, clk.Now().Add(time.Minute), 5*time.Minute, 100); err != nil || run != (pipeline.Swept{}) {
		t.Fatalf("early sweep: %+v, %v", run, err)
	}
	// A sweep while sends are still refused leaves the changes pending
	// (it may already drop the marker of the gone item).
	q.set(true)
	failed, err := r.Sweep(ctx, clk.Now().Add(6*time.Minute), 5*time.Minute, 100)
	if err == nil || failed.Routed != 0 || failed.Failed == 0 {
		t.Fatalf("sweep with sends refused: %+v, %v", failed, err)
	}
	q.set(false)
	run, err := r.Sweep(ctx, clk.Now().Add(6*time.Minute), 5*time.Minute, 100)
	if err != nil || run.Routed != 2 || run.Failed != 0 || run.Gone+failed.Gone != 1 {
		t.Fatalf("sweep: %+v after %+v, %v", run, failed, err)
	}
	if got := q.take(); !slices.Equal(got, []string{"JOB#2", "JOB#3"}) {
		t.Fatalf("swept %v", got)
	}
	if got := markers(t, s); len(got) != 0 {
		t.Fatalf("markers left: %v", got)
	}
	if run, err := r.Sweep(ctx, clk.Now().Add(time.Hour), 5*time.Minute, 100); err != nil || run != (pipeline.Swept{}) {
		t.Fatalf("second sweep: %+v, %v", run, err)
	}
	// Later writes of a routed item (a job's results) make no marker.
	j2.Version = 2
	if err := s.Transact(ctx, store.Put(j2, store.IfVersion(1))); err != nil {
		t.Fatal(err)
	}
	if got := markers(t, s); len(got) != 0 {
		t.Fatalf("an update made markers: %v", got)
	}
}

// TestSweepAndStreamRaceSafely: sweeps racing the router and each other on
// real goroutines send every change at least once and leave no marker;
// the limit bounds one sweep.
func TestSweepAndStreamRaceSafely(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	s := pendingStore(t, clk.Now)
	q := &sends{}
	r := pipeline.Router{Rules: []pipeline.Rule{jobRule}, Queue: q, Inserted: []string{"JOB#"}, Pending: s}
	const n = 60
	var changes []store.Change
	for i := range n {
		it := store.Item{PK: "VENDOR#v", SK: fmt.Sprintf("JOB#%03d", i), Version: 1}
		if err := s.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, store.Change{Kind: store.Inserted, Key: it.Key(), New: &it})
	}
	if run, err := r.Sweep(ctx, clk.Now().Add(time.Hour), time.Minute, 10); err != nil || run.Routed != 10 {
		t.Fatalf("limited sweep: %+v, %v", run, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := r.Route(ctx, changes[:n/2]); err != nil {
			t.Error(err)
		}
	})
	for range 3 {
		wg.Go(func() {
			if _, err := r.Sweep(ctx, clk.Now().Add(time.Hour), time.Minute, n); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := map[string]int{}
	for _, b := range q.take() {
		got[b]++
	}
	for _, c := range changes {
		if got[c.Key.SK] == 0 {
			t.Errorf("%s never sent", c.Key.SK)
		}
	}
	if left := markers(t, s); len(left) != 0 {
		t.Fatalf("markers left: %v", left)
	}
}

// TestMarkOnlyRoutedInsertsWithinTheLimit: markers go with inserts under
// the routed prefixes only, and never take a transaction over the limit.
func TestMarkOnlyRoutedInsertsWithinTheLimit(t *testing.T) {
	clk := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	p := pipeline.Pending{Prefixes: []string{"JOB#"}, Now: clk.Now}
	put := func(sk string, c store.Cond) store.Op { return store.Put(store.Item{PK: "V", SK: sk, Version: 1}, c) }
	ops := []store.Op{put("JOB#1", store.IfAbsent()), put("JOB#2", store.IfVersion(1)), put("OTHER#1", store.IfAbsent()),
		store.Delete(store.Key{PK: "V", SK: "JOB#3"}, store.Cond{})}
	got := p.Mark(context.Background(), ops)
	if len(got) != len(ops)+1 || got[len(ops)].Item.Key() != datamodel.PendingKey(store.Key{PK: "V", SK: "JOB#1"}) {
		t.Fatalf("marked %+v", got)
	}
	full := make([]store.Op, store.MaxTransactOps)
	for i := range full {
		full[i] = put(fmt.Sprintf("JOB#%03d", i), store.IfAbsent())
	}
	if got := p.Mark(context.Background(), full); len(got) != store.MaxTransactOps {
		t.Fatalf("a full transaction grew to %d operations", len(got))
	}
}

// TestRouteStopsAtTheFirstFailedChange: on a queue that sends one message
// a call, a batch's rules run at once (RouteConcurrency of them in
// flight); a change whose rule fails stops the batch there: every change
// before it is sent and its marker deleted, it and the changes after it
// keep theirs, and the retry from it sends the rest.
func TestRouteStopsAtTheFirstFailedChange(t *testing.T) {
	ctx := context.Background()
	clk := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	s := pendingStore(t, clk.Now)
	q := &sends{}
	const n, bad = 40, 17
	var mu sync.Mutex
	inFlight, failing := 0, true
	together := make(chan struct{})
	rule := func(ctx context.Context, c store.Change) ([]pipeline.Outgoing, error) {
		mu.Lock()
		if inFlight++; inFlight == pipeline.RouteConcurrency {
			close(together)
		}
		fail := failing && c.Key.SK == fmt.Sprintf("JOB#%03d", bad)
		mu.Unlock()
		select {
		case <-together:
		case <-time.After(30 * time.Second):
			t.Error("the rules ran one at a time")
		}
		if fail {
			return nil, errors.New("store unavailable")
		}
		return jobRule(ctx, c)
	}
	r := pipeline.Router{Rules: []pipeline.Rule{rule}, Queue: q, Inserted: []string{"JOB#"}, Pending: s}
	var changes []store.Change
	var all []string
	for i := range n {
		it := store.Item{PK: "VENDOR#v", SK: fmt.Sprintf("JOB#%03d", i), Version: 1}
		if err := s.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
		changes = append(changes, store.Change{Kind: store.Inserted, Key: it.Key(), New: &it})
		all = append(all, "VENDOR#v|"+it.SK)
	}
	if got, err := r.Route(ctx, changes); got != bad || err == nil {
		t.Fatalf("routed %d, %v; want %d and the failure", got, err, bad)
	}
	sent := map[string]bool{}
	for _, b := range q.take() {
		sent[b] = true
	}
	for _, c := range changes[:bad] {
		if !sent[c.Key.SK] {
			t.Errorf("%s, before the failed change, was not sent", c.Key.SK)
		}
	}
	if sent[changes[bad].Key.SK] {
		t.Errorf("the failed change was sent")
	}
	if got := markers(t, s); !slices.Equal(got, all[bad:]) {
		t.Fatalf("markers %v, want those of the failed change and after (%v)", got, all[bad:])
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	if got, err := r.Route(ctx, changes[bad:]); got != n-bad || err != nil {
		t.Fatalf("the retry routed %d, %v; want %d", got, err, n-bad)
	}
	for _, b := range q.take() {
		sent[b] = true
	}
	if len(sent) != n {
		t.Errorf("%d of %d changes sent", len(sent), n)
	}
	if got := markers(t, s); len(got) != 0 {
		t.Fatalf("markers left: %v", got)
	}
}

// TestMarkOnlyWhatASubscriptionCouldReceive: with a vendor's counts in the
// context, an event no subscription could receive is flagged instead of
// marked; every other routed insert (another vendor's event, an event of
// a counted type or under a "*" subscription, a job, a document without
// a type) is marked, as is everything without counts, under counts that
// are not complete, and from the transaction that writes the counts on.
func TestMarkOnlyWhatASubscriptionCouldReceive(t *testing.T) {
	clk := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	p := pipeline.Pending{Prefixes: []string{datamodel.EventPrefix, "JOB#"}, Now: clk.Now}
	ev := func(vendor, typ string) store.Op {
		k := datamodel.EventKey(vendor, "evt_"+typ)
		return store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{"id":"evt_1","type":"` + typ + `","data":{}}`)}, store.IfAbsent())
	}
	job := store.Put(store.Item{PK: datamodel.VendorPartition("v1"), SK: "JOB#1", Version: 1}, store.IfAbsent())
	untyped := store.Put(store.Item{PK: datamodel.VendorPartition("v1"), SK: datamodel.EventPrefix + "x", Version: 1, Data: []byte(`{}`)}, store.IfAbsent())
	counts := func(nums map[string]int64) store.Item {
		k := datamodel.SubscriptionCountKey("v1")
		return store.Item{PK: k.PK, SK: k.SK, Version: 1, Nums: nums}
	}
	complete := counts(map[string]int64{datamodel.SubscriptionCountAttr: 1, datamodel.SubscriptionTypedAttr: 1, datamodel.SubscriptionTypeAttr("product.created"): 1})
	// marked says, per op, whether Mark gave it a marker.
	marked := func(ctx context.Context, ops ...store.Op) []bool {
		out := p.Mark(ctx, ops)
		got := make([]bool, len(ops))
		for i, op := range ops {
			for _, m := range out[len(ops):] {
				got[i] = got[i] || m.Item.Key() == datamodel.PendingKey(op.Item.Key())
			}
			flagged := out[i].Item.Nums[datamodel.EventUnmarkedAttr] == 1
			if flagged == got[i] && (op.Kind == store.OpPut && op.Cond.Absent) {
				t.Fatalf("op %d (%s): marked %v, flagged %v", i, op.Item.SK, got[i], flagged)
			}
		}
		if ops[0].Item.Nums != nil {
			t.Fatal("Mark changed the caller's item")
		}
		return got
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
		ops  []store.Op
		want []bool
	}{
		{"no counts", context.Background(), []store.Op{ev("v1", "inventory_item.adjusted")}, []bool{true}},
		{"no subscription", pipeline.WithReceivers(context.Background(), pipeline.ReceiversOf("v1", store.Item{})),
			[]store.Op{ev("v1", "inventory_item.adjusted"), ev("v2", "inventory_item.adjusted"), job, untyped}, []bool{false, true, true, true}},
		{"counted types", pipeline.WithReceivers(context.Background(), pipeline.ReceiversOf("v1", complete)),
			[]store.Op{ev("v1", "inventory_item.adjusted"), ev("v1", "product.created")}, []bool{false, true}},
		{"every type", pipeline.WithReceivers(context.Background(), pipeline.ReceiversOf("v1", counts(map[string]int64{datamodel.SubscriptionTypedAttr: 1, datamodel.SubscriptionTypeAttr("*"): 1}))),
			[]store.Op{ev("v1", "inventory_item.adjusted")}, []bool{true}},
		{"counts not complete", pipeline.WithReceivers(context.Background(), pipeline.ReceiversOf("v1", counts(map[string]int64{datamodel.SubscriptionCountAttr: 0}))),
			[]store.Op{ev("v1", "inventory_item.adjusted")}, []bool{true}},
	} {
		if got := marked(c.ctx, c.ops...); !slices.Equal(got, c.want) {
			t.Errorf("%s: marked %v, want %v", c.name, got, c.want)
		}
	}
	// A transaction that writes the counts marks its events, and the
	// request's later transactions too.
	ctx := pipeline.WithReceivers(context.Background(), pipeline.ReceiversOf("v1", complete))
	if got := marked(ctx, ev("v1", "inventory_item.adjusted")); got[0] {
		t.Fatal("marked before the counts changed")
	}
	add := store.Add(datamodel.SubscriptionCountKey("v1"), map[string]int64{datamodel.SubscriptionTypeAttr("inventory_item.adjusted"): 1}, 0, store.Cond{})
	if got := marked(ctx, ev("v1", "webhook_subscription.updated"), add); !got[0] {
		t.Fatal("the transaction that changes the counts: its event unmarked")
	}
	if got := marked(ctx, ev("v1", "inventory_item.adjusted")); !got[0] {
		t.Fatal("a transaction after the counts changed: unmarked")
	}
}

// TestEveryEventTypeHasACountOfItsOwn: each event type's count attribute
// is one the store takes, and no two types (nor "*") share one.
func TestEveryEventTypeHasACountOfItsOwn(t *testing.T) {
	seen := map[string]string{datamodel.SubscriptionTypeAttr("*"): "*"}
	for _, typ := range event.Types() {
		a := datamodel.SubscriptionTypeAttr(typ)
		if err := store.ValidAttr(a); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
		if other, ok := seen[a]; ok {
			t.Errorf("%s and %s share %s", typ, other, a)
		}
		seen[a] = typ
	}
	long := "a_very_long_resource_name.with_a_very_long_action_name"
	if a := datamodel.SubscriptionTypeAttr(long); store.ValidAttr(a) != nil || a != datamodel.SubscriptionTypeAttr(long) {
		t.Errorf("a type too long for a readable name: %q", a)
	}
}
