package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// writeLog is a store that keeps the operations of every transaction,
// and fails the next one whose operations all satisfy failNext (a crash
// of the worker at that write).
type writeLog struct {
	store.Store
	mu       sync.Mutex
	txs      [][]store.Op
	failNext func(store.Op) bool
}

var errCrash = errors.New("the worker died at this write")

func (w *writeLog) Transact(ctx context.Context, ops ...store.Op) error {
	w.mu.Lock()
	if f := w.failNext; f != nil {
		all := true
		for _, op := range ops {
			all = all && f(op)
		}
		if all {
			w.failNext = nil
			w.mu.Unlock()
			return errCrash
		}
	}
	w.txs = append(w.txs, ops)
	w.mu.Unlock()
	return w.Store.Transact(ctx, ops...)
}

// take returns the transactions since the last take.
func (w *writeLog) take() [][]store.Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.txs
	w.txs = nil
	return out
}

func isPrefix(prefix string) func(store.Op) bool {
	return func(op store.Op) bool { return strings.HasPrefix(op.Item.SK, prefix) }
}

// writing is a vendor with one subscription to a loopback receiver that
// answers each event as answer says, and a deliverer over a writeLog.
type writing struct {
	t      *testing.T
	st     *writeLog
	clk    *clock.Fake
	out    *sink
	d      Deliverer
	posts  atomic.Int64
	answer func(eventID string) int
	subID  string
}

func newWriting(t *testing.T, st store.Store, clk *clock.Fake) *writing {
	t.Helper()
	ctx := context.Background()
	w := &writing{t: t, st: &writeLog{Store: st}, clk: clk, out: &sink{}}
	w.answer = func(string) int { return http.StatusNoContent }
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.posts.Add(1)
		rw.WriteHeader(w.answer(r.Header.Get(HeaderEventID)))
	}))
	t.Cleanup(srv.Close)
	policy := Policy{AllowLoopback: true}
	box := testBox(t)
	prep, err := Service{Store: st, Clock: clk, Policy: policy, Secrets: box}.PrepareCreate(ctx, preparingVendor, CreateInput{Destination: HTTPS(srv.URL + "/hook"), EventTypes: []string{"product.created"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, prep.Ops...); err != nil {
		t.Fatal(err)
	}
	w.subID = prep.View.ID
	w.d = Deliverer{Store: w.st, Clock: clk, Queue: w.out, Policy: policy, Jitter: func() float64 { return 0 }, Secrets: box}
	return w
}

// fanOut writes a new event and returns its delivery message.
func (w *writing) fanOut() (Message, []byte) {
	w.t.Helper()
	ctx := context.Background()
	ev := event.New(w.clk.Now(), preparingVendor, event.ProductCreated, "product", "prd_1", nil)
	op, _ := event.Op(ev)
	if err := w.st.Store.Transact(ctx, op); err != nil {
		w.t.Fatal(err)
	}
	routed, err := w.d.Rule(ctx, store.Change{Kind: store.Inserted, Key: op.Item.Key(), New: &op.Item})
	if err != nil || len(routed) != 1 {
		w.t.Fatalf("fan-out: %v, %v", routed, err)
	}
	var m Message
	if err := json.Unmarshal(routed[0].Body, &m); err != nil {
		w.t.Fatal(err)
	}
	return m, routed[0].Body
}

func (w *writing) sub() Subscription {
	w.t.Helper()
	it, err := w.st.Store.Get(context.Background(), datamodel.SubscriptionKey(preparingVendor, w.subID))
	if err != nil {
		w.t.Fatal(err)
	}
	s, err := Decode(it)
	if err != nil {
		w.t.Fatal(err)
	}
	return s
}

// attempts are the subscription's attempt records of eventID.
func (w *writing) attempts(eventID string) []Attempt {
	w.t.Helper()
	items, err := w.st.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(preparingVendor), Prefix: AttemptsPrefix(w.subID), Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []Attempt
	for _, it := range items {
		var a Attempt
		if err := json.Unmarshal(it.Data, &a); err != nil {
			w.t.Fatal(err)
		}
		if a.EventID == eventID {
			out = append(out, a)
		}
	}
	return out
}

func (w *writing) marked(eventID string) bool {
	w.t.Helper()
	_, err := w.st.Store.Get(context.Background(), datamodel.DeliveredKey(preparingVendor, w.subID, eventID))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		w.t.Fatal(err)
	}
	return err == nil
}

// TestAttemptWritesAndCrashes: an attempt's writes, and a worker that dies
// between them, on both stores. A success on a healthy subscription writes
// three lone items (the claim, the record, the delivered mark) and leaves
// the subscription's item alone; a failure writes the claim and one
// transaction of the record and the streak. A message handled again after
// dying at any write after the record finds the attempt made and counted,
// makes no request, and only does what follows: the mark, the retry. A
// claim written by an older build (outcome on the claim) still finishes
// its attempt without a request; one it never recorded is made once.
func TestAttemptWritesAndCrashes(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			w := newWriting(t, open(t, clk), clk)
			wantWrites := func(what string, prefixes ...[]string) {
				t.Helper()
				txs := w.st.take()
				var got [][]string
				for _, tx := range txs {
					var keys []string
					for _, op := range tx {
						keys = append(keys, strings.SplitN(op.Item.SK, "#", 2)[0]+"#")
					}
					got = append(got, keys)
				}
				if fmt.Sprint(got) != fmt.Sprint(prefixes) {
					t.Fatalf("%s wrote %v; want %v", what, got, prefixes)
				}
			}
			claimP, attP, okP, subP := datamodel.ClaimPrefix, datamodel.AttemptPrefix, "WHOK#", datamodel.SubscriptionPrefix

			// A success on a healthy subscription: three lone writes (the
			// record and the mark side by side, so in either order).
			before := w.sub()
			m, body := w.fanOut()
			if err := w.d.Handle(ctx, queue.Message{ID: "m1", Body: body, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			txs := w.st.take()
			if len(txs) != 3 || len(txs[0]) != 1 || txs[0][0].Item.SK[:len(claimP)] != claimP {
				t.Fatalf("a success wrote %d transactions, first %+v", len(txs), txs[0])
			}
			seen := map[string]bool{}
			for _, tx := range txs[1:] {
				if len(tx) != 1 {
					t.Fatalf("a success wrote a transaction of %d items", len(tx))
				}
				seen[strings.SplitN(tx[0].Item.SK, "#", 2)[0]+"#"] = true
			}
			if !seen[attP] || !seen[okP] || w.posts.Load() != 1 || !w.marked(m.EventID) || len(w.attempts(m.EventID)) != 1 {
				t.Fatalf("a success: writes %v, %d requests, marked %v, %d records", seen, w.posts.Load(), w.marked(m.EventID), len(w.attempts(m.EventID)))
			}
			if after := w.sub(); after.Version != before.Version || after.FailureStreak != 0 || after.RecoveredAt != 0 || after.Successes != before.Successes {
				t.Fatalf("a success on a healthy subscription changed it: %+v, was %+v", after, before)
			}

			// The worker dies putting the mark, after the record: handled
			// again, it makes no request and puts the mark.
			m, body = w.fanOut()
			w.st.failNext = isPrefix(okP)
			if err := w.d.Handle(ctx, queue.Message{ID: "m2", Body: body, Receives: 1}); !errors.Is(err, errCrash) {
				t.Fatalf("the dying worker: %v", err)
			}
			if w.marked(m.EventID) || len(w.attempts(m.EventID)) != 1 {
				t.Fatalf("after dying at the mark: marked %v, %d records", w.marked(m.EventID), len(w.attempts(m.EventID)))
			}
			w.st.take()
			if err := w.d.Handle(ctx, queue.Message{ID: "m2", Body: body, Receives: 2}); err != nil {
				t.Fatal(err)
			}
			// (The claim's put is refused: the message finds its own.)
			wantWrites("the message handled again", []string{claimP}, []string{okP})
			if w.posts.Load() != 2 || !w.marked(m.EventID) || len(w.attempts(m.EventID)) != 1 {
				t.Fatalf("handled again: %d requests, marked %v, %d records", w.posts.Load(), w.marked(m.EventID), len(w.attempts(m.EventID)))
			}

			// A failure: the claim, then the record and the streak in one
			// transaction; the worker dies queueing the retry. Handled
			// again: no request, the streak counted once, the retry
			// queued, carrying the first attempt's time.
			m, body = w.fanOut()
			bad := m.EventID
			w.answer = func(id string) int {
				if id == bad {
					return http.StatusServiceUnavailable
				}
				return http.StatusNoContent
			}
			w.out.fail = errCrash
			if err := w.d.Handle(ctx, queue.Message{ID: "m3", Body: body, Receives: 1}); !errors.Is(err, errCrash) {
				t.Fatalf("the dying worker: %v", err)
			}
			w.out.fail = nil
			wantWrites("a failure", []string{claimP}, []string{attP, subP})
			first := w.attempts(bad)
			if len(first) != 1 || first[0].Outcome != OutcomeFailed || w.sub().FailureStreak != 1 {
				t.Fatalf("after the failure: %+v, streak %d", first, w.sub().FailureStreak)
			}
			if err := w.d.Handle(ctx, queue.Message{ID: "m3", Body: body, Receives: 2}); err != nil {
				t.Fatal(err)
			}
			wantWrites("the failure handled again", []string{claimP})
			if w.posts.Load() != 3 || w.sub().FailureStreak != 1 || len(w.out.sent) != 1 || len(w.attempts(bad)) != 1 {
				t.Fatalf("handled again: %d requests, streak %d, %d retries, %d records", w.posts.Load(), w.sub().FailureStreak, len(w.out.sent), len(w.attempts(bad)))
			}
			retry := w.out.sent[0]
			if retry.Attempt != 2 || retry.FirstAttemptAt == nil || !retry.FirstAttemptAt.Equal(first[0].AttemptedAt) {
				t.Fatalf("the retry %+v; want attempt 2 carrying the first attempt's time %s", retry, first[0].AttemptedAt)
			}

			// The retry succeeds: it ends the streak, in the record's
			// transaction, and puts the mark beside it.
			w.answer = func(string) int { return http.StatusNoContent }
			clk.Advance(time.Minute)
			rb, _ := json.Marshal(retry)
			if err := w.d.Handle(ctx, queue.Message{ID: "m4", Body: rb, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			txs = w.st.take()
			if len(txs) != 3 {
				t.Fatalf("the success ending a streak wrote %d transactions", len(txs))
			}
			if s := w.sub(); s.FailureStreak != 0 || s.RecoveredAt != clk.Now().UnixMilli() || !w.marked(bad) {
				t.Fatalf("after the streak's end: streak %d, recovered at %d (want %d), marked %v", s.FailureStreak, s.RecoveredAt, clk.Now().UnixMilli(), w.marked(bad))
			}

			// A claim an older build recorded (its outcome on the claim, no
			// record id): handled again, no request, what follows is done.
			m, body = w.fanOut()
			next := clk.Now().Add(time.Minute)
			old, _ := json.Marshal(map[string]any{"owner": "m5", "outcome": OutcomeFailed, "next_attempt_at": next})
			k := claimKey(m)
			if err := w.st.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: old}, store.IfAbsent())); err != nil {
				t.Fatal(err)
			}
			w.st.take()
			if err := w.d.Handle(ctx, queue.Message{ID: "m5", Body: body, Receives: 2}); err != nil {
				t.Fatal(err)
			}
			wantWrites("an older build's recorded claim handled again", []string{claimP})
			if w.posts.Load() != 4 || len(w.out.sent) != 2 || w.out.sent[1].Attempt != 2 || !w.out.sent[1].NotBefore.Equal(next) {
				t.Fatalf("an older build's claim: %d requests, sent %+v", w.posts.Load(), w.out.sent)
			}

			// A claim an older build made but never recorded: the attempt
			// is made, the claim names its record first, and a crash after
			// the record is found as above.
			m, body = w.fanOut()
			old, _ = json.Marshal(map[string]any{"owner": "m6"})
			k = claimKey(m)
			if err := w.st.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: old}, store.IfAbsent())); err != nil {
				t.Fatal(err)
			}
			w.st.failNext = isPrefix(okP)
			if err := w.d.Handle(ctx, queue.Message{ID: "m6", Body: body, Receives: 2}); !errors.Is(err, errCrash) {
				t.Fatalf("the dying worker: %v", err)
			}
			if err := w.d.Handle(ctx, queue.Message{ID: "m6", Body: body, Receives: 3}); err != nil {
				t.Fatal(err)
			}
			if w.posts.Load() != 5 || len(w.attempts(m.EventID)) != 1 || !w.marked(m.EventID) {
				t.Fatalf("an older build's unrecorded claim: %d requests, %d records, marked %v", w.posts.Load(), len(w.attempts(m.EventID)), w.marked(m.EventID))
			}
		})
	}
}

// TestDisableCountsSuccessesSinceTheFirstAttempt: a delivery that dies
// disables its subscription unless a delivery succeeded after its first
// attempt failed. A success before that attempt, even after the delivery
// was fanned out, does not keep it enabled: the endpoint failed every
// attempt of the dead delivery. (Builds before issue 26's "A delivery's
// writes" counted every success and compared the count at the fan-out.)
// Successes after the first failure end the streak, on real goroutines at
// once, and keep the subscription enabled.
func TestDisableCountsSuccessesSinceTheFirstAttempt(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			w := newWriting(t, open(t, clk), clk)
			w.d.Jitter = func() float64 { return 0.999 } // the longest waits: a few dozen attempts in the window
			var doomed sync.Map
			w.answer = func(id string) int {
				if _, ok := doomed.Load(id); ok {
					return http.StatusServiceUnavailable
				}
				return http.StatusNoContent
			}
			// retryUntilDead handles the delivery's retries, each when it
			// is due, until the sink has none left.
			retryUntilDead := func(eventID string) {
				t.Helper()
				for i := 0; ; i++ {
					w.out.mu.Lock()
					if len(w.out.sent) == 0 {
						w.out.mu.Unlock()
						break
					}
					r := w.out.sent[0]
					w.out.sent, w.out.queues = w.out.sent[1:], w.out.queues[1:]
					w.out.mu.Unlock()
					if d := r.NotBefore.Sub(clk.Now()); d > 0 {
						clk.Advance(d)
					}
					b, _ := json.Marshal(r)
					if err := w.d.Handle(ctx, queue.Message{ID: fmt.Sprintf("retry-%s-%d", eventID, i), Body: b, Receives: 1}); err != nil {
						t.Fatal(err)
					}
				}
				as := w.attempts(eventID)
				if len(as) < 2 || as[len(as)-1].Outcome != OutcomeDead {
					t.Fatalf("the delivery of %s did not die: %d attempts", eventID, len(as))
				}
			}

			// Fanned out, then a success of another event, then the first
			// attempt fails, and every retry: disabled.
			m, body := w.fanOut()
			doomed.Store(m.EventID, true)
			_, okBody := w.fanOut()
			if err := w.d.Handle(ctx, queue.Message{ID: "ok-1", Body: okBody, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			if err := w.d.Handle(ctx, queue.Message{ID: "doomed-1", Body: body, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			retryUntilDead(m.EventID)
			if s := w.sub(); s.Status != StatusDisabled || s.DisabledReason == nil || *s.DisabledReason != DisabledByFailures {
				t.Fatalf("a delivery failing every attempt left %+v", s.View())
			}

			// Enabled again: a delivery fails its first attempt, then
			// successes of other events at once (on goroutines, with failures
			// of yet other events among them): it dies, and stays enabled.
			s := w.sub()
			prev := s.Version
			s.Status, s.DisabledReason, s.DisabledAt = StatusEnabled, nil, nil
			s.Version++
			doc, _ := json.Marshal(s)
			k := datamodel.SubscriptionKey(preparingVendor, w.subID)
			if err := w.st.Store.Transact(ctx, store.Update(k, doc, s.Version, nil, store.IfVersion(prev))); err != nil {
				t.Fatal(err)
			}
			m, body = w.fanOut()
			doomed.Store(m.EventID, true)
			if err := w.d.Handle(ctx, queue.Message{ID: "doomed-2", Body: body, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			streak := w.sub().FailureStreak
			dead := w.out.sent
			w.out.sent, w.out.queues = nil, nil
			var bodies [][]byte
			for i := range 6 {
				m, b := w.fanOut()
				if i%3 == 2 {
					doomed.Store(m.EventID, true)
				}
				bodies = append(bodies, b)
			}
			clk.Advance(time.Second)
			var wg sync.WaitGroup
			for i, b := range bodies {
				wg.Go(func() {
					if err := w.d.Handle(ctx, queue.Message{ID: fmt.Sprintf("race-%d", i), Body: b, Receives: 1}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if s := w.sub(); s.RecoveredAt <= 0 || s.FailureStreak < 0 || s.FailureStreak > 2 || streak < 1 {
				t.Fatalf("after racing successes: streak %d (was %d), recovered at %d", s.FailureStreak, streak, s.RecoveredAt)
			}
			w.out.mu.Lock()
			w.out.sent, w.out.queues = dead, []string{queue.WebhookSlowLane}
			w.out.mu.Unlock()
			retryUntilDead(m.EventID)
			if s := w.sub(); s.Status != StatusEnabled {
				t.Fatalf("a success after the dead delivery's first attempt, and still %+v", s.View())
			}
		})
	}
}
