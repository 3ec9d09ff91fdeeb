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
	"fmt"
	"strings"
	"time"

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
	RecoveryHead
	// Cursor is the event log's sort key the next page starts after; ""
	// before the first page.
	Cursor string `json:"cursor,omitempty"`
	// InFlight are the events of the last page queued for delivery.
	InFlight []string `json:"in_flight,omitempty"`
	// Done is set once the last page has been read.
	Done bool `json:"done,omitempty"`
	JobTimes
}

// RecoveryHead is what a recovery is and shows alike.
type RecoveryHead struct {
	ID             string    `json:"id"`
	VendorID       string    `json:"vendor_id"`
	SubscriptionID string    `json:"subscription_id"`
	Since          time.Time `json:"since"`
	Until          time.Time `json:"until"`
	Status         string    `json:"status"`
	// Reason says why a failed recovery stopped early; nil otherwise.
	Reason *string `json:"reason"`
}

// RecoveryView is a recovery as the API shows it.
type RecoveryView struct {
	RecoveryHead
	Total int64 `json:"total"`
	Outcomes
	JobTimes
}

func (rc Recovery) view(t tally) RecoveryView {
	return RecoveryView{RecoveryHead: rc.RecoveryHead, Total: t.Total, Outcomes: t.Outcomes, JobTimes: rc.JobTimes}
}

func (rc *Recovery) running() bool { return rc.Status == ReplayRunning }
func (rc *Recovery) more() bool    { return !rc.Done }

func (rc *Recovery) message() replayJob {
	return replayJob{Kind: jobRecovery, VendorID: rc.VendorID, SubscriptionID: rc.SubscriptionID, RecoveryID: rc.ID, After: rc.Cursor}
}

// delay is until the window's end is event.Settle old (at most
// queue.MaxDelay), so that every event stamped before it has committed.
func (rc *Recovery) delay(now time.Time) time.Duration {
	return min(max(rc.Until.Add(event.Settle).Sub(now), 0), queue.MaxDelay)
}

// delivery is an event's delivery, in the slow lane.
func (rc *Recovery) delivery(eventID string, successes int64) Message {
	return Message{VendorID: rc.VendorID, EventID: eventID, SubscriptionID: rc.SubscriptionID, DeliveryID: DeliveryID(eventID, rc.SubscriptionID, rc.ID),
		RecoveryID: rc.ID, Successes: successes, Lane: LaneSlow}
}

func (rc *Recovery) end(now time.Time, t tally) {
	rc.Status, rc.CompletedAt, rc.InFlight = t.final(), &now, nil
}

func (rc *Recovery) ended(t tally) *event.Event {
	if rc.CompletedAt == nil {
		return nil
	}
	ev := event.New(*rc.CompletedAt, rc.VendorID, event.WebhookRecoveryCompleted, "webhook_recovery", rc.ID, map[string]any{
		"subscription_id": rc.SubscriptionID, "since": rc.Since, "until": rc.Until, "status": rc.Status, "reason": rc.Reason,
		"total": t.Total, "delivered": t.Delivered, "failed": t.Failed, "skipped": t.Skipped})
	return &ev
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

func disabledConflict(id string) error {
	return errs.Ef(errs.CodeWebhookSubscriptionState, "webhook subscription %s is disabled: its deliveries would be dropped; re-enable it with PATCH {\"status\": \"enabled\", \"recover_since\": ...}", id)
}

// newRecovery builds the item of a queued recovery of sub over [since,
// end) and the operation that stores it.
func newRecovery(now time.Time, sub Subscription, since, end time.Time) (RecoveryView, store.Op, error) {
	rc := Recovery{RecoveryHead: RecoveryHead{ID: ids.Sortable("rcv", now), VendorID: sub.VendorID, SubscriptionID: sub.ID, Since: since, Until: end,
		Status: ReplayQueued}, JobTimes: JobTimes{CreatedAt: now}}
	it, err := recoveryKind.item(datamodel.RecoveryKey(sub.VendorID, sub.ID, rc.ID), rc, now)
	if err != nil {
		return RecoveryView{}, store.Op{}, err
	}
	return rc.view(tallyOf(it)), store.Put(it, store.IfAbsent()), nil
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
	explain := func(*store.ConditionError) error { return subscriptionErrors.NotFound() }
	return store.Prepared[RecoveryView]{View: v, Ops: ops, Explain: explain}, nil
}

// GetRecovery reads a recovery of a subscription.
func (s Service) GetRecovery(ctx context.Context, vendorID, subID, recoveryID string) (RecoveryView, error) {
	return readView(ctx, s.Store, recoveryKind, ids.Issued("whsub", subID) && ids.Issued("rcv", recoveryID),
		datamodel.RecoveryKey(vendorID, subID, recoveryID), Recovery.view)
}

// jobRecovery is replayJob.Kind for a recovery's message.
const jobRecovery = "recovery"

// recoveryJob is the message that runs rc's page after the cursor after.
func recoveryJob(rc Recovery, after string) ([]byte, error) {
	rc.Cursor = after
	return json.Marshal(rc.message())
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
		it, j, found, err := r.jobs().load(ctx, recoveryKind, k)
		if !found {
			return err
		}
		rc := j.(*Recovery)
		if rc.Status != ReplayQueued && rc.Status != ReplayRunning {
			return nil
		}
		if wait := rc.delay(r.Clock.Now()); rc.Status == ReplayQueued && wait > 0 {
			// Early (a queue that did not keep the delay): not before until
			// is settled.
			b, err := recoveryJob(*rc, after)
			if err != nil {
				return err
			}
			return r.Queue.Send(ctx, queue.EventReplays, b, wait)
		}
		if rc.Cursor != after || tallyOf(it).Pending > 0 {
			if receives > 1 {
				return r.jobs().settle(ctx, recoveryKind, it, rc, r.requeue(ctx))
			}
			return nil
		}
		next, sent, err := r.page(ctx, it, rc)
		if err != nil || sent || next == nil {
			return err
		}
		after = *next
	}
	b, err := recoveryJob(Recovery{RecoveryHead: RecoveryHead{ID: job.RecoveryID, VendorID: job.VendorID, SubscriptionID: job.SubscriptionID}}, after)
	if err != nil {
		return err
	}
	return r.Queue.Send(ctx, queue.EventReplays, b, 0)
}

// requeue queues again the deliveries of a recovery's page that have no
// outcome (after a crash between recording the page and queueing it).
func (r Replayer) requeue(ctx context.Context) func(record) error {
	return func(j record) error {
		rc := j.(*Recovery)
		sub, err := get(ctx, r.Store, rc.VendorID, rc.SubscriptionID)
		if err != nil && errs.As(err).Kind != errs.NotFound {
			return err
		}
		return r.jobs().requeue(ctx, recoveryKind, rc, sub.Successes, rc.InFlight)
	}
}

// page reads the recovery's next page of events, records it (the cursor,
// the events it queues, total and skipped, pending; and the end when it
// was the last page and nothing is pending), then queues its deliveries.
// next is the cursor to go on from when the page queued nothing and more
// may follow; sent reports deliveries queued; neither means the recovery
// is over, or another worker took the page.
func (r Replayer) page(ctx context.Context, it store.Item, rc *Recovery) (next *string, sent bool, err error) {
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
		if err := r.jobs().write(ctx, it, rc, nil, false); err != nil && !store.IsCondition(err) {
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
		rc.Status, rc.CompletedAt = tallyOf(it).final(), &now
	}
	deltas := map[string]int64{datamodel.ReplayTotalAttr: int64(len(found)), datamodel.ReplaySkippedAttr: int64(len(found) - len(rc.InFlight)),
		datamodel.ReplayPendingAttr: int64(len(rc.InFlight))}
	if err := r.jobs().write(ctx, it, rc, deltas, false); err != nil {
		if store.IsCondition(err) {
			return nil, false, nil // another worker took this page
		}
		return nil, false, err
	}
	if len(rc.InFlight) > 0 {
		return nil, true, r.jobs().fan(ctx, recoveryKind, rc, sub.Successes, rc.InFlight)
	}
	if rc.CompletedAt != nil {
		return nil, false, nil
	}
	return &rc.Cursor, false, nil
}

// windowStart is the sort key just before the first event of since's
// millisecond: the floor id without its trailing zeros, a prefix of
// every id of that millisecond and after every id before it.
func windowStart(since time.Time) string {
	return datamodel.EventPrefix + strings.TrimRight(ids.SortableFloor("evt", since), "0")
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
