package webhook

// A recovery delivers to one subscription, oldest first, every event of
// its types in a window that it has not yet received successfully: the
// catch-up after a receiver's outage. It is a job of the replay worker
// (a message kind on queue.EventReplays, no queue or function of its own)
// whose deliveries travel in the slow lane, so that a catch-up of many
// events never holds the fresh lane other vendors share. It pages through
// the event log RecoveryPage events at a time: a page's deliveries are
// queued together, their outcomes move its counters, and the outcome that
// leaves nothing pending sends the job on to the next page. So one
// recovery holds at most RecoveryPage deliveries in flight, however long
// its window.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

const (
	// RecoveryPage is how many events a recovery reads at once, and so
	// the most deliveries it has in flight.
	RecoveryPage = 100
	// RecoveryQuietPages is how many pages with nothing to send (every
	// event delivered already) one handling reads before it hands the job
	// on in a new message, so that no handling runs long.
	RecoveryQuietPages = 10
	// RecoverySkew is how far ahead of the service's clock until may be.
	RecoverySkew = time.Minute
	// RecoveryRetention is how long a recovery stays readable.
	RecoveryRetention = ReplayRetention
)

// Why a recovery stopped before its window's end (Recovery.Reason).
const (
	RecoveryStoppedDisabled = "subscription_disabled"
	RecoveryStoppedDeleted  = "subscription_deleted"
)

// Recovery is the stored job. Its counters are numeric attributes of its
// item, as a replay's are: total (events of the window and the
// subscription's types read so far), skipped (delivered before, or
// dropped when their delivery came up), delivered, failed, and pending.
type Recovery struct {
	ID             string    `json:"id"`
	VendorID       string    `json:"vendor_id"`
	SubscriptionID string    `json:"subscription_id"`
	Since          time.Time `json:"since"`
	Until          time.Time `json:"until"`
	Status         string    `json:"status"`
	// Reason says why a failed recovery stopped early; nil otherwise.
	Reason *string `json:"reason"`
	// Cursor is the event log's sort key the next page starts after; ""
	// before the first page.
	Cursor string `json:"cursor,omitempty"`
	// InFlight are the events of the last page queued for delivery.
	InFlight []string `json:"in_flight,omitempty"`
	// Done is set once the last page has been read.
	Done        bool       `json:"done,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// RecoveryView is a recovery as the API shows it.
type RecoveryView struct {
	ID             string     `json:"id"`
	VendorID       string     `json:"vendor_id"`
	SubscriptionID string     `json:"subscription_id"`
	Since          time.Time  `json:"since"`
	Until          time.Time  `json:"until"`
	Status         string     `json:"status"`
	Reason         *string    `json:"reason"`
	Total          int64      `json:"total"`
	Delivered      int64      `json:"delivered"`
	Failed         int64      `json:"failed"`
	Skipped        int64      `json:"skipped"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at"`
	CompletedAt    *time.Time `json:"completed_at"`
}

func decodeRecovery(it store.Item) (Recovery, RecoveryView, error) {
	var r Recovery
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return Recovery{}, RecoveryView{}, fmt.Errorf("webhook: decode %s: %w", it.SK, err)
	}
	v := RecoveryView{ID: r.ID, VendorID: r.VendorID, SubscriptionID: r.SubscriptionID, Since: r.Since, Until: r.Until, Status: r.Status, Reason: r.Reason,
		Total: it.Nums[datamodel.ReplayTotalAttr], Delivered: it.Nums[datamodel.ReplayDeliveredAttr], Failed: it.Nums[datamodel.ReplayFailedAttr],
		Skipped: it.Nums[datamodel.ReplaySkippedAttr], CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt}
	return r, v, nil
}

// RecoverInput is a parsed recover body.
type RecoverInput struct {
	Since time.Time
	// Until is nil for "now".
	Until *time.Time
}

// ParseRecover reads a recover body: since required, until optional.
// The window is checked against the clock when the recovery is prepared
// (CheckWindow).
func ParseRecover(body []byte) (RecoverInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return RecoverInput{}, err
	}
	var in RecoverInput
	since := o.Time("since", fields.Required)
	in.Until = o.Time("until", fields.OptionalNullable)
	if err := o.Err(); err != nil {
		return RecoverInput{}, err
	}
	in.Since = *since
	return in, nil
}

// CheckWindow checks a recovery's window at now and returns its end:
// until (now when nil) no further ahead than RecoverySkew, after since,
// and since no older than the event log keeps events (event.Retention).
// field names since in the errors ("since", or "recover_since").
func CheckWindow(field string, since time.Time, until *time.Time, now time.Time) (time.Time, error) {
	end := now
	if until != nil {
		end = *until
	}
	invalid := func(field, detail string) error {
		return errs.Ef(errs.CodeInvalidRequest, "%s: %s", field, detail)
	}
	switch {
	case until != nil && end.After(now.Add(RecoverySkew)):
		return time.Time{}, invalid("until", "must not be in the future")
	case until != nil && !end.After(since):
		return time.Time{}, invalid("until", "must be after "+field)
	case !end.After(since):
		return time.Time{}, invalid(field, "must be in the past")
	case since.Before(now.Add(-event.Retention)):
		return time.Time{}, invalid(field, fmt.Sprintf("must be within the event log's retention (%d days): older events are gone", int(event.Retention/(24*time.Hour))))
	}
	return end, nil
}

func recoveryNotFound() error { return errs.Absent("recovery") }

func disabledConflict(id string) error {
	return errs.Ef(errs.CodeWebhookSubscriptionState, "webhook subscription %s is disabled: its deliveries would be dropped; re-enable it with PATCH {\"status\": \"enabled\", \"recover_since\": ...}", id)
}

// newRecovery builds the item of a queued recovery of sub over [since,
// end) and the operation that stores it.
func newRecovery(now time.Time, sub Subscription, since, end time.Time) (RecoveryView, store.Op, error) {
	rc := Recovery{ID: ids.Sortable("rcv", now), VendorID: sub.VendorID, SubscriptionID: sub.ID, Since: since, Until: end, Status: ReplayQueued, CreatedAt: now}
	doc, err := json.Marshal(rc)
	if err != nil {
		return RecoveryView{}, store.Op{}, err
	}
	k := datamodel.RecoveryKey(sub.VendorID, sub.ID, rc.ID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: doc, ExpiresAt: now.Add(RecoveryRetention).Unix(),
		Nums: map[string]int64{datamodel.ReplayTotalAttr: 0, datamodel.ReplayDeliveredAttr: 0, datamodel.ReplayFailedAttr: 0, datamodel.ReplaySkippedAttr: 0, datamodel.ReplayPendingAttr: 0}}
	_, v, err := decodeRecovery(it)
	return v, store.Put(it, store.IfAbsent()), err
}

// PrepareRecover checks the subscription (it must exist and be enabled)
// and the window, and returns the operations that store a queued recovery
// of it while it exists: the pipeline starts it (Replayer.Rule). A
// subscription disabled meanwhile stops the recovery at its first page.
func (s Service) PrepareRecover(ctx context.Context, vendorID, subID string, in RecoverInput) (store.Prepared[RecoveryView], error) {
	sub, err := s.Get(ctx, vendorID, subID)
	if err != nil {
		return store.Prepared[RecoveryView]{}, err
	}
	if sub.Status != StatusEnabled {
		return store.Prepared[RecoveryView]{}, disabledConflict(sub.ID)
	}
	now := s.Clock.Now()
	end, err := CheckWindow("since", in.Since, in.Until, now)
	if err != nil {
		return store.Prepared[RecoveryView]{}, err
	}
	v, put, err := newRecovery(now, sub, in.Since, end)
	if err != nil {
		return store.Prepared[RecoveryView]{}, err
	}
	ops := []store.Op{put, store.Check(datamodel.SubscriptionKey(vendorID, subID), store.Cond{Exists: true})}
	explain := func(*store.ConditionError) error { return notFound() }
	return store.Prepared[RecoveryView]{View: v, Ops: ops, Explain: explain}, nil
}

// GetRecovery reads a recovery of a subscription.
func (s Service) GetRecovery(ctx context.Context, vendorID, subID, recoveryID string) (RecoveryView, error) {
	if !ids.Issued("whsub", subID) || !ids.Issued("rcv", recoveryID) {
		return RecoveryView{}, recoveryNotFound()
	}
	return store.Read(ctx, s.Store, datamodel.RecoveryKey(vendorID, subID, recoveryID), viewOf(decodeRecovery), recoveryNotFound(), func(err error) error {
		return errs.Unavailablef(err, "the recovery could not be read")
	})
}

// jobRecovery is replayJob.Kind for a recovery's message.
const jobRecovery = "recovery"

func recoveryJob(rc Recovery, after string) ([]byte, error) {
	return json.Marshal(replayJob{Kind: jobRecovery, VendorID: rc.VendorID, SubscriptionID: rc.SubscriptionID, RecoveryID: rc.ID, After: after})
}

// recover runs a recovery's message: the page after job.After, when that
// is where the recovery stands and nothing of the page before is pending.
// Any other message is a duplicate, or the same message received again
// after a crash: the latter nudges the recovery on (nudge), since it may
// have committed a page and died before queueing it.
func (r Replayer) recover(ctx context.Context, job replayJob, receives int) error {
	k := datamodel.RecoveryKey(job.VendorID, job.SubscriptionID, job.RecoveryID)
	after := job.After
	for range RecoveryQuietPages {
		it, err := r.Store.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		rc, v, err := decodeRecovery(it)
		if err != nil {
			return err
		}
		if rc.Status != ReplayQueued && rc.Status != ReplayRunning {
			return nil
		}
		if wait := rc.Until.Add(event.Settle).Sub(r.Clock.Now()); rc.Status == ReplayQueued && wait > 0 {
			// Early (a queue that did not keep the delay): not before until
			// is settled.
			b, err := recoveryJob(rc, after)
			if err != nil {
				return err
			}
			return r.Queue.Send(ctx, queue.EventReplays, b, min(wait, queue.MaxDelay))
		}
		if rc.Cursor != after || it.Nums[datamodel.ReplayPendingAttr] > 0 {
			if receives > 1 {
				return recoveries{r.Store, r.Clock, r.Queue}.nudge(ctx, it, rc, true)
			}
			return nil
		}
		next, sent, err := r.page(ctx, it, rc, v)
		if err != nil || sent || next == nil {
			return err
		}
		after = *next
	}
	b, err := recoveryJob(Recovery{ID: job.RecoveryID, VendorID: job.VendorID, SubscriptionID: job.SubscriptionID}, after)
	if err != nil {
		return err
	}
	return r.Queue.Send(ctx, queue.EventReplays, b, 0)
}

// page reads the recovery's next page of events, records it (the cursor,
// the events it queues, total and skipped, pending; and the end when it
// was the last page and nothing is pending), then queues its deliveries.
// next is the cursor to go on from when the page queued nothing and more
// may follow; sent reports deliveries queued; neither means the recovery
// is over, or another worker took the page.
func (r Replayer) page(ctx context.Context, it store.Item, rc Recovery, v RecoveryView) (next *string, sent bool, err error) {
	now := r.Clock.Now()
	if rc.StartedAt == nil {
		rc.Status, rc.StartedAt = ReplayRunning, &now
	}
	sub, err := get(ctx, r.Store, rc.VendorID, rc.SubscriptionID)
	if err != nil && errs.As(err).Kind != errs.NotFound {
		return nil, false, err
	}
	if err != nil || sub.Status != StatusEnabled {
		reason := RecoveryStoppedDisabled
		if err != nil {
			reason = RecoveryStoppedDeleted
		}
		rc.Status, rc.Reason, rc.CompletedAt, rc.InFlight = ReplayFailed, &reason, &now, nil
		if err := r.commitPage(ctx, it, rc, v, nil); err != nil && !store.IsCondition(err) {
			return nil, false, err
		}
		return nil, false, nil
	}
	start := rc.Cursor
	if start == "" {
		start = windowStart(rc.Since)
	}
	q := store.Query{PK: datamodel.VendorPartition(rc.VendorID), Prefix: datamodel.EventPrefix, After: start}
	keep := func(e event.Event) bool { return sub.Matches(e.Type) }
	events, err := store.PageUntil(ctx, r.Store, q, RecoveryPage, event.Decode, keep, datamodel.EventPrefix+ids.SortableFloor("evt", rc.Until))
	if err != nil {
		return nil, false, err
	}
	found := make([]string, len(events.Items))
	for i, e := range events.Items {
		found[i] = e.ID
	}
	done, err := delivered(ctx, r.Store, rc.VendorID, rc.SubscriptionID, found)
	if err != nil {
		return nil, false, err
	}
	rc.InFlight = nil
	for _, id := range found {
		if !done[id] {
			rc.InFlight = append(rc.InFlight, id)
		}
	}
	if events.Last != "" {
		rc.Cursor = events.Last
	}
	rc.Done = !events.More
	if rc.Done && len(rc.InFlight) == 0 {
		rc.Status, rc.CompletedAt = finalStatus(v.Delivered, v.Failed), &now
	}
	deltas := map[string]int64{datamodel.ReplayTotalAttr: int64(len(found)), datamodel.ReplaySkippedAttr: int64(len(found) - len(rc.InFlight)),
		datamodel.ReplayPendingAttr: int64(len(rc.InFlight))}
	if err := r.commitPage(ctx, it, rc, v, deltas); err != nil {
		if store.IsCondition(err) {
			return nil, false, nil // another worker took this page
		}
		return nil, false, err
	}
	if len(rc.InFlight) > 0 {
		return nil, true, recoveries{r.Store, r.Clock, r.Queue}.queue(ctx, rc, sub.Successes, rc.InFlight)
	}
	if rc.CompletedAt != nil {
		return nil, false, nil
	}
	return &rc.Cursor, false, nil
}

// commitPage writes rc with deltas, conditioned on the version read, with
// the completion event when rc is over.
func (r Replayer) commitPage(ctx context.Context, it store.Item, rc Recovery, v RecoveryView, deltas map[string]int64) error {
	doc, err := json.Marshal(rc)
	if err != nil {
		return err
	}
	ops := []store.Op{store.Update(it.Key(), doc, it.Version+1, deltas, store.IfVersion(it.Version))}
	if rc.CompletedAt != nil {
		v.Status, v.Reason = rc.Status, rc.Reason
		v.Total += deltas[datamodel.ReplayTotalAttr]
		v.Skipped += deltas[datamodel.ReplaySkippedAttr]
		ev, err := recoveryEvent(*rc.CompletedAt, v)
		if err != nil {
			return err
		}
		ops = append(ops, ev)
	}
	return r.Store.Transact(ctx, ops...)
}

// windowStart is the sort key just before the first event of since's
// millisecond: the floor id without its trailing zeros, a prefix of
// every id of that millisecond and after every id before it.
func windowStart(since time.Time) string {
	return datamodel.EventPrefix + strings.TrimRight(ids.SortableFloor("evt", since), "0")
}

func finalStatus(delivered, failed int64) string {
	if delivered == 0 && failed > 0 {
		return ReplayFailed
	}
	return ReplayCompleted
}

func recoveryEvent(now time.Time, v RecoveryView) (store.Op, error) {
	return event.Op(event.New(now, v.VendorID, event.WebhookRecoveryCompleted, "webhook_recovery", v.ID, map[string]any{
		"subscription_id": v.SubscriptionID, "since": v.Since, "until": v.Until, "status": v.Status, "reason": v.Reason,
		"total": v.Total, "delivered": v.Delivered, "failed": v.Failed, "skipped": v.Skipped}))
}

// delivered reports which of the events the subscription has received
// successfully: those with a delivered mark (DeliveredKey, written with
// every successful attempt), and, for events delivered before marks were
// written, those whose original delivery has a successful attempt on
// record (its claims).
func delivered(ctx context.Context, st store.Store, vendorID, subID string, eventIDs []string) (map[string]bool, error) {
	keys := make([]store.Key, len(eventIDs))
	for i, id := range eventIDs {
		keys[i] = datamodel.DeliveredKey(vendorID, subID, id)
	}
	out := map[string]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	marks, err := st.GetMany(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, m := range marks {
		if m.PK != "" {
			out[eventIDs[i]] = true
			continue
		}
		claims, err := st.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.ClaimPrefix + DeliveryID(eventIDs[i], subID, "") + "#", Limit: 50})
		if err != nil {
			return nil, err
		}
		for _, c := range claims {
			var cl claim
			if json.Unmarshal(c.Data, &cl) == nil && cl.Outcome == OutcomeSucceeded {
				out[eventIDs[i]] = true
			}
		}
	}
	return out, nil
}

// recoveries are the steps of a recovery both workers take: the replay
// worker's pages, and the delivery worker's outcomes.
type recoveries struct {
	Store store.Store
	Clock clock.Clock
	Queue queue.Sender
}

// queue sends the deliveries of events to the slow lane.
func (rs recoveries) queue(ctx context.Context, rc Recovery, successes int64, eventIDs []string) error {
	now := rs.Clock.Now()
	for _, id := range eventIDs {
		m := Message{VendorID: rc.VendorID, EventID: id, SubscriptionID: rc.SubscriptionID, DeliveryID: DeliveryID(id, rc.SubscriptionID, rc.ID),
			RecoveryID: rc.ID, Attempt: 1, CreatedAt: now, NotBefore: now, Successes: successes, Lane: LaneSlow}
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := rs.Queue.Send(ctx, queue.WebhookSlowLane, b, 0); err != nil {
			return err
		}
	}
	return nil
}

// nudge moves a running recovery on from where it stands: with requeue,
// it queues again the deliveries of its page that have no outcome (after
// a crash between recording the page and queueing it; the attempts'
// claims drop what was queued already); with nothing pending, it sends
// the job on to the next page, or completes the recovery after its last.
func (rs recoveries) nudge(ctx context.Context, it store.Item, rc Recovery, requeue bool) error {
	k := it.Key()
	for range 3 {
		if rc.Status != ReplayRunning {
			return nil
		}
		if it.Nums[datamodel.ReplayPendingAttr] > 0 {
			if !requeue {
				return nil
			}
			open, err := unmarked(ctx, rs.Store, rc.InFlight, func(id string) store.Key {
				return datamodel.RecoveryEventKey(rc.VendorID, rc.ID, id)
			})
			if err != nil {
				return err
			}
			sub, err := get(ctx, rs.Store, rc.VendorID, rc.SubscriptionID)
			if err != nil && errs.As(err).Kind != errs.NotFound {
				return err
			}
			return rs.queue(ctx, rc, sub.Successes, open)
		}
		if !rc.Done {
			b, err := recoveryJob(rc, rc.Cursor)
			if err != nil {
				return err
			}
			return rs.Queue.Send(ctx, queue.EventReplays, b, 0)
		}
		_, v, err := decodeRecovery(it)
		if err != nil {
			return err
		}
		now := rs.Clock.Now()
		rc.Status, rc.CompletedAt, rc.InFlight = finalStatus(v.Delivered, v.Failed), &now, nil
		v.Status = rc.Status
		doc, err := json.Marshal(rc)
		if err != nil {
			return err
		}
		ev, err := recoveryEvent(now, v)
		if err != nil {
			return err
		}
		cond := store.IfVersion(it.Version)
		cond.Bounds = []store.Bound{{Attr: datamodel.ReplayPendingAttr, Cmp: store.LE, Value: 0}}
		err = rs.Store.Transact(ctx, store.Update(k, doc, it.Version+1, nil, cond), ev)
		if !store.IsCondition(err) {
			return err
		}
		// Changed meanwhile: look again.
		if it, err = rs.Store.Get(ctx, k); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		if rc, _, err = decodeRecovery(it); err != nil {
			return err
		}
	}
	return nil
}

// recoveryOutcome counts a recovery delivery's outcome once (a marker
// created in the same transaction as the counters), then nudges the
// recovery on, also when the outcome was counted already (the message
// handled again after a crash between the two).
func (d Deliverer) recoveryOutcome(ctx context.Context, m Message, outcome string) error {
	now := d.Clock.Now()
	k := datamodel.RecoveryKey(m.VendorID, m.SubscriptionID, m.RecoveryID)
	mk := datamodel.RecoveryEventKey(m.VendorID, m.RecoveryID, m.EventID)
	mark, err := json.Marshal(map[string]any{"outcome": outcome, "delivery_id": m.DeliveryID, "at": now})
	if err != nil {
		return err
	}
	err = d.Store.Transact(ctx,
		store.Put(store.Item{PK: mk.PK, SK: mk.SK, Version: 1, Data: mark, ExpiresAt: now.Add(RecoveryRetention).Unix()}, store.IfAbsent()),
		store.Add(k, map[string]int64{outcome: 1, datamodel.ReplayPendingAttr: -1}, 0, store.Cond{Exists: true}))
	if err != nil && !store.IsCondition(err) {
		return err
	}
	it, err := d.Store.Get(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rc, _, err := decodeRecovery(it)
	if err != nil {
		return err
	}
	return recoveries{d.Store, d.Clock, d.Queue}.nudge(ctx, it, rc, false)
}
