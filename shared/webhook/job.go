package webhook

// A replay and a recovery are one kind of job: a stored record whose
// deliveries are queued a page at a time, each delivery's outcome counted
// once on the job's item (numeric attributes: total, delivered, failed,
// skipped, pending), and whose end is written with its completion event
// by whichever worker sees nothing pending and no page left. A replay is
// a recovery of one page, its destinations. This file holds that shape:
// storing and reading a job, queueing a page's deliveries and again those
// no outcome accounted for, counting an outcome, moving the job on and
// ending it. What tells the two apart (the keys, the lane, which targets a
// page holds, the completion event) is data (jobKind) and the few methods
// of record; how each picks a page stays in replay.go and recover.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// JobTimes are when a replay or a recovery was created, started and
// completed.
type JobTimes struct {
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// Outcomes count a job's deliveries by outcome, as the API shows them.
type Outcomes struct {
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
	Skipped   int64 `json:"skipped"`
}

// final is the status a job ends with: failed when nothing was delivered
// and something failed, completed otherwise.
func (o Outcomes) final() string {
	if o.Delivered == 0 && o.Failed > 0 {
		return ReplayFailed
	}
	return ReplayCompleted
}

// tally is a job's counters as its item holds them.
type tally struct {
	Total   int64
	Pending int64
	Outcomes
}

// Outcomes of a delivery, and the counters they move.
const (
	replayDelivered = datamodel.ReplayDeliveredAttr
	replayFailed    = datamodel.ReplayFailedAttr
	replaySkipped   = datamodel.ReplaySkippedAttr
)

func tallyOf(it store.Item) tally {
	n := it.Nums
	return tally{Total: n[datamodel.ReplayTotalAttr], Pending: n[datamodel.ReplayPendingAttr],
		Outcomes: Outcomes{Delivered: n[replayDelivered], Failed: n[replayFailed], Skipped: n[replaySkipped]}}
}

// plus is t with deltas added (a job's counters after a write of them).
func (t tally) plus(deltas map[string]int64) tally {
	t.Total += deltas[datamodel.ReplayTotalAttr]
	t.Pending += deltas[datamodel.ReplayPendingAttr]
	t.Delivered += deltas[replayDelivered]
	t.Failed += deltas[replayFailed]
	t.Skipped += deltas[replaySkipped]
	return t
}

// record is a replay or a recovery, as the code they share reads it.
type record interface {
	// running reports a job started and not ended.
	running() bool
	// more reports pages left to read after the current one.
	more() bool
	// message is the replay queue's message that runs the job from where
	// it stands.
	message() replayJob
	// delay is how long the job must wait at now before its first page.
	delay(now time.Time) time.Duration
	// delivery is the first attempt, but for its times, of the job's
	// delivery to target (a subscription of a replay, an event of a
	// recovery), for a subscription with successes.
	delivery(target string, successes int64) Message
	// end gives a job whose pages are all read and counted its final
	// status at now.
	end(now time.Time, t tally)
	// ended is the event that says the job ended, with its counters t;
	// nil while it runs.
	ended(t tally) *event.Event
}

// jobKind is what tells one kind of job from the other where they run
// alike.
type jobKind struct {
	// name names the kind in errors and logs ("replay").
	name string
	// prefix starts the sort keys of the kind's jobs.
	prefix string
	// retention is how long a job and its outcome marks stay readable.
	retention time.Duration
	// lane is the queue the kind's deliveries travel on.
	lane string
	// keys are the job a delivery's outcome is counted on and the mark
	// that counts it once.
	keys func(m Message) (job, mark store.Key)
	// decode reads a job of the kind.
	decode func(store.Item) (record, error)
}

// jobKinds are the kinds of job; jobOf finds a delivery's.
var (
	replayKind = jobKind{name: "replay", prefix: datamodel.ReplayPrefix, retention: ReplayRetention, lane: queue.WebhookDeliveries,
		keys: func(m Message) (store.Key, store.Key) {
			return datamodel.ReplayKey(m.VendorID, m.EventID, m.ReplayID), datamodel.ReplayDestinationKey(m.VendorID, m.ReplayID, m.SubscriptionID)
		},
		decode: decodeRecord[Replay]}
	recoveryKind = jobKind{name: "recovery", prefix: datamodel.RecoveryPrefix, retention: RecoveryRetention, lane: queue.WebhookSlowLane,
		keys: func(m Message) (store.Key, store.Key) {
			return datamodel.RecoveryKey(m.VendorID, m.SubscriptionID, m.RecoveryID), datamodel.RecoveryEventKey(m.VendorID, m.RecoveryID, m.EventID)
		},
		decode: decodeRecord[Recovery]}
)

// jobOf is the kind of job a delivery belongs to; false for an ordinary
// delivery.
func jobOf(m Message) (jobKind, bool) {
	switch {
	case m.RecoveryID != "":
		return recoveryKind, true
	case m.ReplayID != "":
		return replayKind, true
	}
	return jobKind{}, false
}

// decodeJob reads a job record of type R.
func decodeJob[R any](it store.Item) (R, error) {
	var r R
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return r, fmt.Errorf("webhook: decode %s: %w", it.SK, err)
	}
	return r, nil
}

// decodeRecord reads a job record of type R as a record.
func decodeRecord[R any, P interface {
	*R
	record
}](it store.Item) (record, error) {
	r, err := decodeJob[R](it)
	return P(&r), err
}

// item is the item of a new job of the kind at key: doc at version 1,
// its counters at zero, kept for the kind's retention from now.
func (k jobKind) item(key store.Key, doc any, now time.Time) (store.Item, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return store.Item{}, err
	}
	return store.Item{PK: key.PK, SK: key.SK, Version: 1, Data: b, ExpiresAt: now.Add(k.retention).Unix(),
		Nums: map[string]int64{datamodel.ReplayTotalAttr: 0, replayDelivered: 0, replayFailed: 0, replaySkipped: 0, datamodel.ReplayPendingAttr: 0}}, nil
}

// readView reads the job of the kind at key as the API shows it. A job
// whose ids the service never issues (issued false) is not found too.
func readView[R, V any](ctx context.Context, st store.Store, k jobKind, issued bool, key store.Key, view func(R, tally) V) (V, error) {
	e := errs.Record{Name: k.name, Unreadable: "the " + k.name + " could not be read"}
	if !issued {
		var zero V
		return zero, e.NotFound()
	}
	return store.Read(ctx, st, key, func(it store.Item) (V, error) {
		r, err := decodeJob[R](it)
		if err != nil {
			var zero V
			return zero, err
		}
		return view(r, tallyOf(it)), nil
	}, e.NotFound(), e.Unavailable)
}

// jobs are the steps of a job both workers take: the replay worker's
// pages, and the delivery worker's outcomes.
type jobs struct {
	Store store.Store
	Clock clock.Clock
	Queue queue.Sender
	// lanes routes a fresh-lane kind's deliveries to subscriptions marked
	// slow to the slow lane (its Slots, Clock and Log; none without Slots).
	lanes Deliverer
}

// load reads the job of kind k at key; found is false when it is gone
// (expired).
func (j jobs) load(ctx context.Context, k jobKind, key store.Key) (it store.Item, r record, found bool, err error) {
	it, err = j.Store.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return it, nil, false, nil
	}
	if err != nil {
		return it, nil, false, err
	}
	r, err = k.decode(it)
	return it, r, err == nil, err
}

// write stores r as the next version of the job item it, with deltas
// added to its counters, conditioned on the version read and, with
// settled, on no delivery pending; with the completion event when r
// ended.
func (j jobs) write(ctx context.Context, it store.Item, r record, deltas map[string]int64, settled bool) error {
	doc, err := json.Marshal(r)
	if err != nil {
		return err
	}
	cond := store.IfVersion(it.Version)
	if settled {
		cond.Bounds = []store.Bound{{Attr: datamodel.ReplayPendingAttr, Cmp: store.LE, Value: 0}}
	}
	ops := []store.Op{store.Update(it.Key(), doc, it.Version+1, deltas, cond)}
	if ev := r.ended(tallyOf(it).plus(deltas)); ev != nil {
		op, err := event.Op(*ev)
		if err != nil {
			return err
		}
		ops = append(ops, op)
	}
	return j.Store.Transact(ctx, ops...)
}

// fan queues the first attempts of r's deliveries to targets on the
// kind's lane. When they are more than the vendor's slots, those to
// subscriptions marked slow go to the slow lane at once, as the event's
// fan-out sends them (Deliverer.Rule), not through a fresh-lane handling
// each.
func (j jobs) fan(ctx context.Context, k jobKind, r record, successes int64, targets []string) error {
	now := j.Clock.Now()
	msgs := make([]Message, len(targets))
	for i, target := range targets {
		msgs[i] = r.delivery(target, successes)
		msgs[i].Attempt, msgs[i].CreatedAt, msgs[i].NotBefore = 1, now, now
	}
	var look Look
	looked := false
	if k.lane == queue.WebhookDeliveries && len(msgs) > 0 {
		look, looked = j.lanes.fanOutLook(ctx, msgs[0].VendorID, len(msgs))
	}
	for _, m := range msgs {
		lane, delay := k.lane, time.Duration(0)
		if looked && misrouted(m, 1, look, now) {
			m, delay = j.lanes.slowLane(m, look, now)
			lane = queueOf(m)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := j.Queue.Send(ctx, lane, b, min(max(delay, 0), queue.MaxDelay)); err != nil {
			return err
		}
	}
	return nil
}

// requeue queues again r's deliveries to targets that no outcome has
// accounted for (after a crash between recording a page and queueing
// it; the attempts' claims drop what was queued already).
func (j jobs) requeue(ctx context.Context, k jobKind, r record, successes int64, targets []string) error {
	if len(targets) == 0 {
		return nil
	}
	open, err := unmarked(ctx, j.Store, targets, func(target string) store.Key {
		_, mark := k.keys(r.delivery(target, successes))
		return mark
	})
	if err != nil {
		return err
	}
	return j.fan(ctx, k, r, successes, open)
}

// unmarked returns the ids whose outcome mark, key(id), is absent: the
// destinations of a replay, or the events of a recovery's page, that no
// delivery has accounted for yet.
func unmarked(ctx context.Context, st store.Store, ids []string, key func(string) store.Key) ([]string, error) {
	keys := make([]store.Key, len(ids))
	for i, id := range ids {
		keys[i] = key(id)
	}
	marks, err := st.GetMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	var open []string
	for i, m := range marks {
		if m.PK == "" {
			open = append(open, ids[i])
		}
	}
	return open, nil
}

// settle moves on a running job whose item is it: while deliveries are
// pending, pending (when set) handles it; with nothing pending, the job
// goes on to its next page in a fresh message, or ends after its last.
// The end is conditioned on the version read and on nothing pending, so
// exactly one worker writes it; a job that moved meanwhile is looked at
// again.
func (j jobs) settle(ctx context.Context, k jobKind, it store.Item, r record, pending func(record) error) error {
	for range 3 {
		if !r.running() {
			return nil
		}
		t := tallyOf(it)
		if t.Pending > 0 {
			if pending == nil {
				return nil
			}
			return pending(r)
		}
		if r.more() {
			b, err := json.Marshal(r.message())
			if err != nil {
				return err
			}
			return j.Queue.Send(ctx, queue.EventReplays, b, 0)
		}
		r.end(j.Clock.Now(), t)
		err := j.write(ctx, it, r, nil, true)
		if !store.IsCondition(err) {
			return err
		}
		// Changed meanwhile: look again.
		var found bool
		if it, r, found, err = j.load(ctx, k, it.Key()); !found {
			return err
		}
	}
	return nil
}

// countOutcome counts a job delivery's outcome once (a mark created in
// the same transaction as the counters), then moves the job on (settle),
// also when the outcome was counted already: the message handled again
// after a crash between the two. It does nothing for ordinary deliveries.
func (d Deliverer) countOutcome(ctx context.Context, m Message, outcome string) error {
	k, ok := jobOf(m)
	if !ok {
		return nil
	}
	now := d.Clock.Now()
	key, mk := k.keys(m)
	mark, err := json.Marshal(map[string]any{"outcome": outcome, "delivery_id": m.DeliveryID, "at": now})
	if err != nil {
		return err
	}
	err = d.Store.Transact(ctx,
		store.Put(store.Item{PK: mk.PK, SK: mk.SK, Version: 1, Data: mark, ExpiresAt: now.Add(k.retention).Unix()}, store.IfAbsent()),
		store.Add(key, map[string]int64{outcome: 1, datamodel.ReplayPendingAttr: -1}, 0, store.Cond{Exists: true}))
	if err != nil && !store.IsCondition(err) {
		return err
	}
	j := jobs{Store: d.Store, Clock: d.Clock, Queue: d.Queue}
	it, r, found, err := j.load(ctx, k, key)
	if !found {
		return err
	}
	return j.settle(ctx, k, it, r, nil)
}
