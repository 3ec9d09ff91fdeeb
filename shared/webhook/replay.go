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

// Replay re-sends one event to the vendor's subscriptions: a job (job.go)
// of one page, its destinations. Its counters are numeric attributes of
// its item, moved atomically by the delivery worker as each destination
// is accounted for.
type Replay struct {
	ReplayHead
	// Destinations are the subscriptions chosen for delivery.
	Destinations []string `json:"destinations,omitempty"`
	JobTimes
}

// ReplayHead is what a replay is and shows alike.
type ReplayHead struct {
	ID       string `json:"replay_id"`
	EventID  string `json:"event_id"`
	VendorID string `json:"vendor_id"`
	Status   string `json:"status"`
	// SubscriptionIDs are the destinations asked for; nil means every
	// subscription that receives the event's type.
	SubscriptionIDs []string `json:"subscription_ids"`
}

// ReplayView is a replay as the API shows it.
type ReplayView struct {
	ReplayHead
	Total *int64 `json:"total"`
	Outcomes
	JobTimes
}

func (r Replay) view(t tally) ReplayView {
	v := ReplayView{ReplayHead: r.ReplayHead, Outcomes: t.Outcomes, JobTimes: r.JobTimes}
	if r.Status != ReplayQueued {
		v.Total = &t.Total
	}
	return v
}

func (r *Replay) running() bool                 { return r.Status == ReplayRunning }
func (r *Replay) more() bool                    { return false }
func (r *Replay) delay(time.Time) time.Duration { return 0 }

func (r *Replay) message() replayJob {
	return replayJob{VendorID: r.VendorID, EventID: r.EventID, ReplayID: r.ID}
}

func (r *Replay) delivery(subID string, _ int64) Message {
	return Message{VendorID: r.VendorID, EventID: r.EventID, SubscriptionID: subID, DeliveryID: DeliveryID(r.EventID, subID, r.ID), ReplayID: r.ID}
}

func (r *Replay) end(now time.Time, t tally) { r.Status, r.CompletedAt = t.final(), &now }

func (r *Replay) ended(t tally) *event.Event {
	if r.CompletedAt == nil {
		return nil
	}
	ev := event.New(*r.CompletedAt, r.VendorID, event.EventReplayCompleted, "event_replay", r.ID, map[string]any{
		"event_id": r.EventID, "status": r.Status, "total": t.Total, "delivered": t.Delivered, "failed": t.Failed, "skipped": t.Skipped})
	return &ev
}

// CreateReplay stores a queued replay of an event; the pipeline starts it.
// Each call makes a new replay.
func (s Service) CreateReplay(ctx context.Context, vendorID, eventID string, in ReplayInput) (ReplayView, error) {
	if _, err := event.Read(ctx, s.Store, vendorID, eventID); err != nil {
		return ReplayView{}, err
	}
	now := s.Clock.Now()
	r := Replay{ReplayHead: ReplayHead{ID: ids.Sortable("rpl", now), EventID: eventID, VendorID: vendorID, Status: ReplayQueued,
		SubscriptionIDs: in.SubscriptionIDs}, JobTimes: JobTimes{CreatedAt: now}}
	it, err := replayKind.item(datamodel.ReplayKey(vendorID, eventID, r.ID), r, now)
	if err != nil {
		return ReplayView{}, err
	}
	if err := s.Store.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return ReplayView{}, err
		}
		return ReplayView{}, errs.Unavailablef(err, "the replay could not be stored")
	}
	return r.view(tallyOf(it)), nil
}

// GetReplay reads a replay of an event.
func (s Service) GetReplay(ctx context.Context, vendorID, eventID, replayID string) (ReplayView, error) {
	return readView(ctx, s.Store, replayKind, ids.Issued("evt", eventID) && ids.Issued("rpl", replayID),
		datamodel.ReplayKey(vendorID, eventID, replayID), Replay.view)
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
	// Lanes, when its Slots are set, is the deliveries' own Deliverer: a
	// replay that fans out beyond its vendor's slots sends the deliveries
	// to subscriptions marked slow to the slow lane, as the event's
	// fan-out does (Deliverer.Rule).
	Lanes Deliverer
}

func (r Replayer) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r Replayer) jobs() jobs {
	return jobs{Store: r.Store, Clock: r.Clock, Queue: r.Queue, lanes: r.Lanes}
}

// Rule starts each new replay and recovery: one message on the replay
// queue. A recovery's waits until its window's end is event.Settle old,
// so that every event stamped before it has committed (event.Settle).
func (r Replayer) Rule(ctx context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || c.New == nil {
		return nil, nil
	}
	for _, k := range []jobKind{recoveryKind, replayKind} {
		if !strings.HasPrefix(c.Key.SK, k.prefix) {
			continue
		}
		j, err := k.decode(*c.New)
		if err != nil {
			r.log().ErrorContext(ctx, k.name+": unreadable "+k.name, "key", c.Key.SK, "error", err)
			return nil, nil
		}
		b, err := json.Marshal(j.message())
		if err != nil {
			return nil, err
		}
		return []pipeline.Outgoing{{Queue: queue.EventReplays, Body: b, Delay: j.delay(r.Clock.Now())}}, nil
	}
	return nil, nil
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
	it, j, found, err := r.jobs().load(ctx, replayKind, datamodel.ReplayKey(job.VendorID, job.EventID, job.ReplayID))
	if !found {
		return err
	}
	rp := j.(*Replay)
	switch rp.Status {
	case ReplayQueued:
		return r.start(ctx, it, rp)
	case ReplayRunning:
		// Re-queue the destinations that have no outcome yet (after a
		// crash between selecting and queueing).
		return r.jobs().requeue(ctx, replayKind, rp, 0, rp.Destinations)
	}
	return nil
}

func (r Replayer) start(ctx context.Context, it store.Item, rp *Replay) error {
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
	return r.jobs().fan(ctx, replayKind, rp, 0, rp.Destinations)
}

// commitStart records the selection (and, when nothing is left to send,
// the end with its event), conditioned on the replay still being queued;
// false means another worker started it first.
func (r Replayer) commitStart(ctx context.Context, it store.Item, rp *Replay, total, skipped int64) (bool, error) {
	deltas := map[string]int64{datamodel.ReplayTotalAttr: total, datamodel.ReplaySkippedAttr: skipped, datamodel.ReplayPendingAttr: int64(len(rp.Destinations))}
	err := r.jobs().write(ctx, it, rp, deltas, false)
	if store.IsCondition(err) {
		return false, nil
	}
	return err == nil, err
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
