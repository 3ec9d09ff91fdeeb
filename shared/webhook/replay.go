package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Replay statuses: queued → running → completed or failed.
const (
	ReplayQueued    = "queued"
	ReplayRunning   = "running"
	ReplayCompleted = "completed"
	ReplayFailed    = "failed"
)

// ReplayRetention is how long a replay stays readable.
const ReplayRetention = 30 * 24 * time.Hour

// Replay re-sends one event to the vendor's subscriptions. Its counters
// are numeric attributes of its item, moved atomically by the delivery
// worker as each destination is accounted for.
type Replay struct {
	ID       string `json:"replay_id"`
	EventID  string `json:"event_id"`
	VendorID string `json:"vendor_id"`
	Status   string `json:"status"`
	// SubscriptionIDs are the destinations asked for; nil means every
	// subscription that receives the event's type.
	SubscriptionIDs []string `json:"subscription_ids"`
	// Destinations are the subscriptions chosen for delivery.
	Destinations []string   `json:"destinations,omitempty"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at"`
	CompletedAt  *time.Time `json:"completed_at"`
}

// ReplayView is a replay as the API shows it.
type ReplayView struct {
	ReplayID        string     `json:"replay_id"`
	EventID         string     `json:"event_id"`
	VendorID        string     `json:"vendor_id"`
	Status          string     `json:"status"`
	SubscriptionIDs []string   `json:"subscription_ids"`
	Total           *int64     `json:"total"`
	Delivered       int64      `json:"delivered"`
	Failed          int64      `json:"failed"`
	Skipped         int64      `json:"skipped"`
	CreatedAt       time.Time  `json:"created_at"`
	StartedAt       *time.Time `json:"started_at"`
	CompletedAt     *time.Time `json:"completed_at"`
}

func decodeReplay(it store.Item) (Replay, ReplayView, error) {
	var r Replay
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return Replay{}, ReplayView{}, fmt.Errorf("webhook: decode %s: %w", it.SK, err)
	}
	v := ReplayView{ReplayID: r.ID, EventID: r.EventID, VendorID: r.VendorID, Status: r.Status, SubscriptionIDs: r.SubscriptionIDs,
		Delivered: it.Nums[datamodel.ReplayDeliveredAttr], Failed: it.Nums[datamodel.ReplayFailedAttr], Skipped: it.Nums[datamodel.ReplaySkippedAttr],
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt}
	if r.Status != ReplayQueued {
		total := it.Nums[datamodel.ReplayTotalAttr]
		v.Total = &total
	}
	return r, v, nil
}

func replayNotFound() error { return errs.Absent("replay") }

// CreateReplay stores a queued replay of an event; the pipeline starts it.
// Each call makes a new replay.
func (s Service) CreateReplay(ctx context.Context, vendorID, eventID string, in ReplayInput) (ReplayView, error) {
	if _, err := event.Read(ctx, s.Store, vendorID, eventID); err != nil {
		return ReplayView{}, err
	}
	now := s.Clock.Now()
	r := Replay{ID: ids.Sortable("rpl", now), EventID: eventID, VendorID: vendorID, Status: ReplayQueued,
		SubscriptionIDs: in.SubscriptionIDs, CreatedAt: now}
	doc, err := json.Marshal(r)
	if err != nil {
		return ReplayView{}, err
	}
	k := datamodel.ReplayKey(vendorID, eventID, r.ID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: doc, ExpiresAt: now.Add(ReplayRetention).Unix(),
		Nums: map[string]int64{datamodel.ReplayTotalAttr: 0, datamodel.ReplayDeliveredAttr: 0, datamodel.ReplayFailedAttr: 0, datamodel.ReplaySkippedAttr: 0, datamodel.ReplayPendingAttr: 0}}
	if err := s.Store.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return ReplayView{}, err
		}
		return ReplayView{}, errs.Unavailablef(err, "the replay could not be stored")
	}
	_, v, err := decodeReplay(it)
	return v, err
}

// GetReplay reads a replay of an event.
func (s Service) GetReplay(ctx context.Context, vendorID, eventID, replayID string) (ReplayView, error) {
	if !ids.Issued("evt", eventID) || !ids.Issued("rpl", replayID) {
		return ReplayView{}, replayNotFound()
	}
	return store.Read(ctx, s.Store, datamodel.ReplayKey(vendorID, eventID, replayID), viewOf(decodeReplay), replayNotFound(), func(err error) error {
		return errs.Unavailablef(err, "the replay could not be read")
	})
}

// viewOf is the decoder of a record's view alone, from decode, which
// decodes the record and its view.
func viewOf[R, V any](decode func(store.Item) (R, V, error)) func(store.Item) (V, error) {
	return func(it store.Item) (V, error) {
		_, v, err := decode(it)
		return v, err
	}
}

// replayJob is the message that starts a replay, or runs a page of a
// recovery (Kind jobRecovery, recover.go).
type replayJob struct {
	Kind     string `json:"kind,omitempty"`
	VendorID string `json:"vendor_id"`
	EventID  string `json:"event_id,omitempty"`
	ReplayID string `json:"replay_id,omitempty"`
	// SubscriptionID and RecoveryID name a recovery; After is the cursor
	// of the page the message runs.
	SubscriptionID string `json:"subscription_id,omitempty"`
	RecoveryID     string `json:"recovery_id,omitempty"`
	After          string `json:"after,omitempty"`
}

// Replayer is the replay worker, and the rule that starts its work.
type Replayer struct {
	Store store.Store
	Clock clock.Clock
	Queue queue.Sender
	Log   *slog.Logger
}

func (r Replayer) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Rule starts each new replay and recovery: one message on the replay
// queue. A recovery's waits until its window's end is event.Settle old,
// so that every event stamped before it has committed (event.Settle).
func (r Replayer) Rule(ctx context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || c.New == nil {
		return nil, nil
	}
	if strings.HasPrefix(c.Key.SK, datamodel.RecoveryPrefix) {
		rc, _, err := decodeRecovery(*c.New)
		if err != nil {
			r.log().ErrorContext(ctx, "recovery: unreadable recovery", "key", c.Key.SK, "error", err)
			return nil, nil
		}
		b, err := recoveryJob(rc, "")
		if err != nil {
			return nil, err
		}
		wait := min(max(rc.Until.Add(event.Settle).Sub(r.Clock.Now()), 0), queue.MaxDelay)
		return []pipeline.Outgoing{{Queue: queue.EventReplays, Body: b, Delay: wait}}, nil
	}
	if !strings.HasPrefix(c.Key.SK, datamodel.ReplayPrefix) {
		return nil, nil
	}
	rp, _, err := decodeReplay(*c.New)
	if err != nil {
		r.log().ErrorContext(ctx, "replay: unreadable replay", "key", c.Key.SK, "error", err)
		return nil, nil
	}
	b, err := json.Marshal(replayJob{VendorID: rp.VendorID, EventID: rp.EventID, ReplayID: rp.ID})
	if err != nil {
		return nil, err
	}
	return []pipeline.Outgoing{{Queue: queue.EventReplays, Body: b}}, nil
}

// Handle runs a replay: it selects the destinations and records them with
// total (skipping deleted, disabled and non-matching subscriptions), then
// queues one delivery per destination. The deliveries' outcomes move the
// counters; the last one completes the replay. Handled again after a
// crash, a running replay re-queues the destinations not yet accounted for.
func (r Replayer) Handle(ctx context.Context, qm queue.Message) error {
	var job replayJob
	if err := json.Unmarshal(qm.Body, &job); err != nil || (job.ReplayID == "" && job.RecoveryID == "") {
		return fmt.Errorf("replay: unreadable message %s: %v", qm.ID, err)
	}
	if job.Kind == jobRecovery {
		return r.recover(ctx, job, qm.Receives)
	}
	k := datamodel.ReplayKey(job.VendorID, job.EventID, job.ReplayID)
	it, err := r.Store.Get(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rp, _, err := decodeReplay(it)
	if err != nil {
		return err
	}
	switch rp.Status {
	case ReplayQueued:
		return r.start(ctx, it, rp)
	case ReplayRunning:
		return r.resume(ctx, rp)
	}
	return nil
}

func (r Replayer) start(ctx context.Context, it store.Item, rp Replay) error {
	now := r.Clock.Now()
	rp.StartedAt = &now
	ev, err := event.Read(ctx, r.Store, rp.VendorID, rp.EventID)
	if err != nil && errs.As(err).Kind != errs.NotFound {
		return err
	}
	if err != nil {
		// The event expired before the replay ran: nothing to send.
		r.log().WarnContext(ctx, "replay failed: the event has expired", "replay_id", rp.ID, "event_id", rp.EventID)
		rp.Status, rp.CompletedAt = ReplayFailed, &now
		_, err := r.commitStart(ctx, it, rp, 0, 0)
		return err
	}
	subs, err := all(ctx, r.Store, rp.VendorID)
	if err != nil {
		return err
	}
	byID := map[string]Subscription{}
	var candidates []string
	for _, s := range subs {
		byID[s.ID] = s
		if rp.SubscriptionIDs == nil && s.Matches(ev.Type) {
			candidates = append(candidates, s.ID)
		}
	}
	if rp.SubscriptionIDs != nil {
		candidates = rp.SubscriptionIDs
	}
	var skipped int64
	for _, id := range candidates {
		s, ok := byID[id]
		if !ok || s.Status != StatusEnabled || !s.Matches(ev.Type) {
			skipped++
			continue
		}
		rp.Destinations = append(rp.Destinations, id)
	}
	rp.Status = ReplayRunning
	if len(rp.Destinations) == 0 {
		rp.Status, rp.CompletedAt = ReplayCompleted, &now
	}
	started, err := r.commitStart(ctx, it, rp, int64(len(candidates)), skipped)
	if err != nil || !started {
		return err
	}
	return r.fanOut(ctx, rp, rp.Destinations)
}

// commitStart records the selection (and, when nothing is left to send,
// the end with its event), conditioned on the replay still being queued;
// false means another worker started it first.
func (r Replayer) commitStart(ctx context.Context, it store.Item, rp Replay, total, skipped int64) (bool, error) {
	doc, err := json.Marshal(rp)
	if err != nil {
		return false, err
	}
	deltas := map[string]int64{datamodel.ReplayTotalAttr: total, datamodel.ReplaySkippedAttr: skipped, datamodel.ReplayPendingAttr: int64(len(rp.Destinations))}
	ops := []store.Op{store.Update(it.Key(), doc, it.Version+1, deltas, store.IfVersion(it.Version))}
	if rp.CompletedAt != nil {
		ev, err := replayEvent(*rp.CompletedAt, rp, total, 0, 0, skipped)
		if err != nil {
			return false, err
		}
		ops = append(ops, ev)
	}
	err = r.Store.Transact(ctx, ops...)
	if store.IsCondition(err) {
		return false, nil
	}
	return err == nil, err
}

// resume re-queues the destinations of a running replay that have no
// outcome yet (after a crash between selecting and queueing).
func (r Replayer) resume(ctx context.Context, rp Replay) error {
	if len(rp.Destinations) == 0 {
		return nil
	}
	open, err := unmarked(ctx, r.Store, rp.Destinations, func(id string) store.Key {
		return datamodel.ReplayDestinationKey(rp.VendorID, rp.ID, id)
	})
	if err != nil {
		return err
	}
	return r.fanOut(ctx, rp, open)
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

func (r Replayer) fanOut(ctx context.Context, rp Replay, dests []string) error {
	now := r.Clock.Now()
	for _, id := range dests {
		m := Message{VendorID: rp.VendorID, EventID: rp.EventID, SubscriptionID: id, DeliveryID: DeliveryID(rp.EventID, id, rp.ID),
			ReplayID: rp.ID, Attempt: 1, CreatedAt: now, NotBefore: now}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := r.Queue.Send(ctx, queue.WebhookDeliveries, b, 0); err != nil {
			return err
		}
	}
	return nil
}

func replayEvent(now time.Time, rp Replay, total, delivered, failed, skipped int64) (store.Op, error) {
	return event.Op(event.New(now, rp.VendorID, event.EventReplayCompleted, "event_replay", rp.ID, map[string]any{
		"event_id": rp.EventID, "status": rp.Status, "total": total, "delivered": delivered, "failed": failed, "skipped": skipped}))
}

// Outcomes of a replay's destination.
const (
	replayDelivered = datamodel.ReplayDeliveredAttr
	replayFailed    = datamodel.ReplayFailedAttr
	replaySkipped   = datamodel.ReplaySkippedAttr
)

// replayOutcome counts a replay delivery's outcome once (a marker item
// created in the same transaction as the counters) and completes the
// replay when it was the last. It does nothing for ordinary deliveries.
func (d Deliverer) replayOutcome(ctx context.Context, m Message, outcome string) error {
	if m.RecoveryID != "" {
		return d.recoveryOutcome(ctx, m, outcome)
	}
	if m.ReplayID == "" {
		return nil
	}
	now := d.Clock.Now()
	mk := datamodel.ReplayDestinationKey(m.VendorID, m.ReplayID, m.SubscriptionID)
	mark, err := json.Marshal(map[string]any{"outcome": outcome, "delivery_id": m.DeliveryID, "at": now})
	if err != nil {
		return err
	}
	err = d.Store.Transact(ctx,
		store.Put(store.Item{PK: mk.PK, SK: mk.SK, Version: 1, Data: mark, ExpiresAt: now.Add(ReplayRetention).Unix()}, store.IfAbsent()),
		store.Add(datamodel.ReplayKey(m.VendorID, m.EventID, m.ReplayID), map[string]int64{outcome: 1, datamodel.ReplayPendingAttr: -1}, 0, store.Cond{Exists: true}))
	if store.IsCondition(err) {
		return nil // counted already, or the replay has expired
	}
	if err != nil {
		return err
	}
	return d.finishReplay(ctx, m)
}

// finishReplay completes a running replay with no destination pending:
// completed, or failed when nothing was delivered and something failed.
// The version and the pending bound make exactly one worker do it.
func (d Deliverer) finishReplay(ctx context.Context, m Message) error {
	k := datamodel.ReplayKey(m.VendorID, m.EventID, m.ReplayID)
	for range 3 {
		it, err := d.Store.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		rp, v, err := decodeReplay(it)
		if err != nil {
			return err
		}
		if rp.Status != ReplayRunning || it.Nums[datamodel.ReplayPendingAttr] > 0 {
			return nil
		}
		now := d.Clock.Now()
		rp.Status, rp.CompletedAt = ReplayCompleted, &now
		if v.Delivered == 0 && v.Failed > 0 {
			rp.Status = ReplayFailed
		}
		doc, err := json.Marshal(rp)
		if err != nil {
			return err
		}
		ev, err := replayEvent(now, rp, *v.Total, v.Delivered, v.Failed, v.Skipped)
		if err != nil {
			return err
		}
		cond := store.IfVersion(it.Version)
		cond.Bounds = []store.Bound{{Attr: datamodel.ReplayPendingAttr, Cmp: store.LE, Value: 0}}
		err = d.Store.Transact(ctx, store.Update(k, doc, it.Version+1, nil, cond), ev)
		if !store.IsCondition(err) {
			return err
		}
	}
	return nil
}

// AttemptsPrefix is the sort-key prefix of a subscription's delivery
// attempts.
func AttemptsPrefix(subID string) string { return datamodel.AttemptPrefix + subID + "#" }

// AttemptFilter narrows a subscription's delivery log.
type AttemptFilter struct {
	// EventID keeps the attempts of this event; "" keeps all.
	EventID string
	// Outcome keeps the attempts of this outcome; "" keeps all.
	Outcome string
}

func (f AttemptFilter) keep(a Attempt) bool {
	return (f.EventID == "" || a.EventID == f.EventID) && (f.Outcome == "" || a.Outcome == f.Outcome)
}

// Attempts reads a page of a subscription's delivery attempts, newest
// first, after the sort key after, keeping those f accepts (a bounded
// scan, store.MaxScan records a page, like every filtered list).
func (s Service) Attempts(ctx context.Context, vendorID, subID, after string, limit int, f AttemptFilter) (store.PageOf[Attempt], error) {
	if _, err := s.Get(ctx, vendorID, subID); err != nil {
		return store.PageOf[Attempt]{}, err
	}
	prefix := AttemptsPrefix(subID)
	if err := errs.ForeignCursor(after, prefix); err != nil {
		return store.PageOf[Attempt]{}, err
	}
	decode := func(it store.Item) (Attempt, error) {
		var a Attempt
		return a, json.Unmarshal(it.Data, &a)
	}
	q := store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: prefix, After: after, Desc: true}
	page, err := store.Page(ctx, s.Store, q, limit, decode, f.keep)
	if err != nil {
		return store.PageOf[Attempt]{}, errs.Unavailablef(err, "delivery attempts could not be read")
	}
	return page, nil
}
