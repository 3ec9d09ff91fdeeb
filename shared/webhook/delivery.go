package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// Headers of a delivery.
const (
	HeaderEventID    = "Moku-Event-Id"
	HeaderDeliveryID = "Moku-Delivery-Id"
	HeaderAttempt    = "Moku-Delivery-Attempt"
	HeaderSignature  = signature.Header
	UserAgent        = "Moku-Webhooks/1.0"
)

// The retry schedule. After failed attempt n the next one waits a random
// time between 0 and min(MaxRetryCeiling, FirstRetryCeiling·2^(n-1))
// (exponential backoff with full jitter, at least MinRetryDelay), and no
// attempt is scheduled past the delivery's window: the last one happens
// at the window's end, so a delivery that never succeeds is retried for
// exactly RetryWindow (ReplayRetryWindow for a replay's deliveries) and
// then recorded as dead.
const (
	FirstRetryCeiling = time.Minute
	MaxRetryCeiling   = 12 * time.Hour
	MinRetryDelay     = time.Second
	RetryWindow       = 72 * time.Hour
	ReplayRetryWindow = time.Hour
	// AttemptRetention is how long attempt records stay readable.
	AttemptRetention = 30 * 24 * time.Hour
)

// RetryCeiling is the longest wait after failed attempt n (1-based).
func RetryCeiling(n int) time.Duration {
	d := FirstRetryCeiling
	for i := 1; i < n && d < MaxRetryCeiling; i++ {
		d *= 2
	}
	return min(d, MaxRetryCeiling)
}

// Message is one delivery of one event to one subscription as it travels
// through the queue; each retry is a new message with the next attempt
// number. Waits longer than the queue's maximum delay are made of several
// hops of at most queue.MaxDelay, each re-sending the message until
// NotBefore has come.
type Message struct {
	VendorID       string `json:"vendor_id"`
	EventID        string `json:"event_id"`
	SubscriptionID string `json:"subscription_id"`
	DeliveryID     string `json:"delivery_id"`
	// ReplayID is set on the deliveries of a replay.
	ReplayID string `json:"replay_id,omitempty"`
	// RecoveryID is set on the deliveries of a recovery (recover.go).
	RecoveryID string `json:"recovery_id,omitempty"`
	// Attempt is the attempt this message makes, from 1.
	Attempt int `json:"attempt"`
	// CreatedAt starts the retry window.
	CreatedAt time.Time `json:"created_at"`
	// NotBefore is when the attempt is due.
	NotBefore time.Time `json:"not_before"`
	// Successes is the subscription's count of successful deliveries when
	// the delivery began, as older builds kept it: if it grew by the time
	// the delivery dies, a success came since (an older build's worker
	// counted it) and the subscription stays enabled.
	Successes int64 `json:"successes"`
	// FirstAttemptAt is when the delivery's first attempt was made, set on
	// the messages of its retries: a delivery that dies disables its
	// subscription unless a success ended a failure streak since
	// (Subscription.RecoveredAt). Messages of older builds have none, and
	// the delivery's CreatedAt stands in.
	FirstAttemptAt *time.Time `json:"first_attempt_at,omitempty"`
	// Deferrals counts the times this attempt was put off because its
	// vendor had no free delivery slot (Slots); it paces the next one.
	Deferrals int `json:"deferrals,omitempty"`
	// Lane is LaneSlow for a message of the slow lane (lanes.go).
	Lane string `json:"lane,omitempty"`
}

// DeliveryID names a delivery: the same for every attempt of one event to
// one subscription, and new for each replay.
func DeliveryID(eventID, subscriptionID, replayID string) string {
	h := sha256.Sum256([]byte(eventID + "\x00" + subscriptionID + "\x00" + replayID))
	return "dlv_" + hex.EncodeToString(h[:16])
}

func (m Message) window() time.Duration {
	if m.ReplayID != "" || m.RecoveryID != "" {
		return ReplayRetryWindow
	}
	return RetryWindow
}

// next is when the attempt after a failed one at now is due, or false
// when the window is over.
func (m Message) next(now time.Time, jitter float64) (time.Time, bool) {
	end := m.CreatedAt.Add(m.window())
	if !now.Before(end) {
		return time.Time{}, false
	}
	wait := max(time.Duration(jitter*float64(RetryCeiling(m.Attempt))), MinRetryDelay)
	at := now.Add(wait)
	if at.After(end) {
		at = end
	}
	return at, true
}

// Outcomes of an attempt.
const (
	OutcomeSucceeded = "succeeded"
	// OutcomeFailed: the attempt failed and another is scheduled.
	OutcomeFailed = "failed"
	// OutcomeDead: the attempt failed and it was the last one.
	OutcomeDead = "dead"
)

// Attempt is the record of one delivery attempt, readable by the vendor.
type Attempt struct {
	ID             string    `json:"id"`
	SubscriptionID string    `json:"subscription_id"`
	DeliveryID     string    `json:"delivery_id"`
	EventID        string    `json:"event_id"`
	EventType      string    `json:"event_type"`
	ReplayID       *string   `json:"replay_id"`
	RecoveryID     *string   `json:"recovery_id"`
	Attempt        int       `json:"attempt"`
	AttemptedAt    time.Time `json:"attempted_at"`
	DurationMS     int64     `json:"duration_ms"`
	StatusCode     *int      `json:"status_code"`
	// Response is the first ResponseExcerpt bytes of the receiver's
	// answer, as text; nil when no response came.
	Response      *string    `json:"response"`
	Error         *string    `json:"error"`
	Outcome       string     `json:"outcome"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// Notice is NoticeFailing on the attempt whose failure made the
	// subscription's streak reach FailingStreak; nil otherwise.
	Notice *string `json:"notice"`
}

// Deliverer is the delivery worker, and the rule that starts its work.
type Deliverer struct {
	Store  store.Store
	Clock  clock.Clock
	Queue  queue.Sender
	Policy Policy
	Log    *slog.Logger
	// Client sends the requests; nil means a new NewClient(Policy) per
	// delivery, so long-lived workers should set it.
	Client *http.Client
	// Jitter returns a number in [0, 1); nil means math/rand.
	Jitter func() float64
	// Slots bounds each vendor's attempts in flight and keeps the lane
	// marks; nil means no bound and one lane.
	Slots Slots
	// SlowAfter is how long an attempt may take before its receiver is
	// marked slow; zero means SlowReceiver.
	SlowAfter time.Duration
	// MetricsNamespace, when set, makes each attempt's line embed its
	// outcome's metrics (emf): the attempt's lag and duration.
	MetricsNamespace string
	// Secrets opens the signing secrets, and seals a secret still in the
	// clear when the worker writes its subscription.
	Secrets *envelope.Box
	// AWS sends the deliveries to EventBridge and SQS destinations.
	AWS Senders
}

func (d Deliverer) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d Deliverer) jitter() float64 {
	if d.Jitter != nil {
		return d.Jitter()
	}
	return rand.Float64()
}

// Rule fans a new event out: one delivery message per enabled
// subscription of the vendor that receives the event's type.
func (d Deliverer) Rule(ctx context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || c.New == nil || !strings.HasPrefix(c.Key.SK, datamodel.EventPrefix) {
		return nil, nil
	}
	ev, err := event.Decode(*c.New)
	if err != nil {
		// An unreadable event can never be delivered; holding the router
		// on it would stop every later change.
		d.log().ErrorContext(ctx, "webhook fan-out: unreadable event", "key", c.Key.SK, "error", err)
		return nil, nil
	}
	subs, err := all(ctx, d.Store, ev.VendorID)
	if err != nil {
		return nil, fmt.Errorf("webhook: read subscriptions of %s: %w", ev.VendorID, err)
	}
	now := d.Clock.Now()
	var msgs []Message
	for _, s := range subs {
		if s.Status != StatusEnabled || !s.Matches(ev.Type) {
			continue
		}
		msgs = append(msgs, Message{VendorID: ev.VendorID, EventID: ev.ID, SubscriptionID: s.ID, DeliveryID: DeliveryID(ev.ID, s.ID, ""),
			Attempt: 1, CreatedAt: now, NotBefore: now, Successes: s.Successes})
	}
	look, looked := d.fanOutLook(ctx, ev.VendorID, len(msgs))
	out := make([]pipeline.Outgoing, 0, len(msgs))
	for _, m := range msgs {
		var delay time.Duration
		if looked && misrouted(m, 1, look, now) {
			m, delay = d.slowLane(m, look, now)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out = append(out, pipeline.Outgoing{Queue: queueOf(m), Body: b, Delay: min(max(delay, 0), queue.MaxDelay)})
	}
	return out, nil
}

// fanOutLook reads the slots of a vendor whose event fans out to n
// deliveries, when n is more than VendorSlots (they will contend for its
// slots anyway), so that the deliveries to subscriptions marked slow go
// to the slow lane from the fan-out instead of through a fresh-lane
// handling each (issue 25). looked is false when no look was made: few
// deliveries, no Slots, or a failed read, which is logged and leaves every
// delivery in the fresh lane, as before; the routing never fails for it.
func (d Deliverer) fanOutLook(ctx context.Context, vendorID string, n int) (look Look, looked bool) {
	if d.Slots == nil || n <= VendorSlots {
		return Look{}, false
	}
	look, err := d.Slots.Look(ctx, vendorID)
	if err != nil {
		d.log().WarnContext(ctx, "webhook fan-out: slots not read; every delivery goes to the fresh lane", "vendor_id", vendorID, "error", err)
		return Look{}, false
	}
	return look, true
}

// slowLane is m, which belongs in the slow lane (misrouted), as it is
// sent there and after what delay: at once when a slot m may take looked
// free, else as its first deferral (deferred). The worker moves a
// misrouted message by it, and the fan-outs (an event's, a replay's) send
// the deliveries of subscriptions marked slow by it.
func (d Deliverer) slowLane(m Message, look Look, now time.Time) (Message, time.Duration) {
	slow := m
	slow.Lane = LaneSlow
	if look.mayTake(m.Attempt > 1) {
		return slow, 0
	}
	later, delay, _ := d.deferred(slow, look, now)
	return later, delay
}

// send queues m in its lane after delay, in hops of at most
// queue.MaxDelay.
func (d Deliverer) send(ctx context.Context, m Message, delay time.Duration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return d.Queue.Send(ctx, queueOf(m), b, min(max(delay, 0), queue.MaxDelay))
}

// Handle makes one attempt of a delivery. It returns an error only when
// the attempt could not be made or recorded for reasons of our own (the
// store), so that the queue tries again; a receiver's failure is recorded
// and retried with a new message.
func (d Deliverer) Handle(ctx context.Context, qm queue.Message) error {
	var m Message
	if err := json.Unmarshal(qm.Body, &m); err != nil || m.EventID == "" || m.SubscriptionID == "" {
		// A message we cannot read goes to the dead-letter queue.
		return fmt.Errorf("webhook: unreadable delivery message %s: %v", qm.ID, err)
	}
	now := d.Clock.Now()
	if m.NotBefore.After(now) {
		return d.send(ctx, m, m.NotBefore.Sub(now))
	}
	log := d.log().With("vendor_id", m.VendorID, "delivery_id", m.DeliveryID, "event_id", m.EventID, "subscription_id", m.SubscriptionID, "attempt", m.Attempt)
	look, err := d.look(ctx, m)
	if err != nil {
		return err
	}
	if misrouted(m, qm.Receives, look, now) {
		// At once when a slot looked free; else the move is the attempt's
		// first deferral, not a message that comes back at once only to be
		// deferred (slowLane, the fan-out's rule too).
		slow, delay := d.slowLane(m, look, now)
		log.DebugContext(ctx, "webhook attempt moved to the slow lane", "deferrals", slow.Deferrals, "delay", delay.String())
		return d.send(ctx, slow, delay)
	}
	pre := d.prepare(ctx, m, qm, look, newAttemptID(now))
	if pre.holdErr != nil {
		return errors.Join(pre.holdErr, d.unclaim(ctx, m, qm, pre))
	}
	if !pre.ok {
		if err := d.unclaim(ctx, m, qm, pre); err != nil {
			return err
		}
		return d.deferral(ctx, log, m, look, now)
	}
	// The slot is given back once: beside the attempt's record when the
	// request is over, or when Handle returns.
	release := sync.OnceValue(func() error { return pre.release(ctx) })
	defer func() {
		if err := release(); err != nil {
			log.WarnContext(ctx, "webhook delivery slot not given back; its lease frees it", "error", err)
		}
	}()
	ev, sub := pre.ev, pre.sub
	if err := pre.evErr; err != nil {
		if errs.As(err).Kind == errs.NotFound {
			log.WarnContext(ctx, "webhook delivery dropped: the event has expired")
			return errors.Join(d.unclaim(ctx, m, qm, pre), d.countOutcome(ctx, m, replayFailed))
		}
		return errors.Join(err, d.unclaim(ctx, m, qm, pre))
	}
	if err := pre.subErr; err != nil {
		if errs.As(err).Kind == errs.NotFound {
			log.InfoContext(ctx, "webhook delivery dropped: the subscription was deleted")
			return errors.Join(d.unclaim(ctx, m, qm, pre), d.countOutcome(ctx, m, replaySkipped))
		}
		return errors.Join(err, d.unclaim(ctx, m, qm, pre))
	}
	if sub.Status != StatusEnabled || (m.ReplayID == "" && !sub.Matches(ev.Type)) {
		log.InfoContext(ctx, "webhook delivery dropped: the subscription is disabled or no longer receives this type")
		return errors.Join(d.unclaim(ctx, m, qm, pre), d.countOutcome(ctx, m, replaySkipped))
	}
	if err := sub.Open(ctx, d.Secrets); err != nil {
		return errors.Join(err, d.unclaim(ctx, m, qm, pre))
	}

	c, made, err := pre.c, pre.made, pre.claimErr
	if !pre.claimed {
		c, made, err = d.claim(ctx, m, qm.ID, pre.attemptID)
	}
	switch {
	case err != nil:
		return err
	case c.Owner != qm.ID:
		// A duplicate (a re-routed fan-out, a message sent twice): the
		// owner makes the attempt and what follows it. Finishing here too
		// would fork the retry chain, two hops where one is due.
		log.InfoContext(ctx, "webhook delivery dropped: another message makes this attempt", "message_id", qm.ID, "owner", c.Owner)
		return nil
	case c.Outcome != "":
		// An older build made and recorded the attempt before a crash,
		// and put its outcome on the claim.
		log.InfoContext(ctx, "webhook attempt already made; finishing what follows it", "outcome", c.Outcome)
		return d.finish(ctx, m, Attempt{Outcome: c.Outcome, NextAttemptAt: c.Next})
	}
	if !made && c.AttemptID != "" {
		// This message claimed the attempt on an earlier receive (a queue
		// keeps a message's id when it delivers it again): if its record
		// is there, the attempt was made and counted before a crash, and
		// only what follows the record is done again.
		prior, found, err := d.recorded(ctx, m, c.AttemptID)
		if err != nil {
			return err
		}
		if found {
			log.InfoContext(ctx, "webhook attempt already made; finishing what follows it", "outcome", prior.Outcome)
			return d.finish(ctx, m, prior)
		}
	}
	if c.AttemptID == "" {
		// The claim of an older build, whose attempt was never recorded:
		// it names the record now, so that a crash after it is found.
		c.AttemptID = pre.attemptID
		if err := d.putClaim(ctx, m, c, store.Cond{}); err != nil {
			return err
		}
	}
	attemptID := c.AttemptID

	ans, duration, postErr := d.deliver(ctx, sub, ev, m)
	// The request is over, and with it what the slot bounds: it is given
	// back while the attempt is recorded, one wait instead of two.
	var freeing sync.WaitGroup
	freeing.Go(func() { _ = release() })
	defer freeing.Wait()
	status := ans.status
	d.noteSpeed(ctx, log, m, look, duration)
	at := now
	rec := Attempt{ID: attemptID, SubscriptionID: sub.ID, DeliveryID: m.DeliveryID, EventID: ev.ID, EventType: ev.Type,
		Attempt: m.Attempt, AttemptedAt: at, DurationMS: duration.Milliseconds(), Response: Excerpt(ans.excerpt, ans.answered)}
	if m.ReplayID != "" {
		rec.ReplayID = &m.ReplayID
	}
	if m.RecoveryID != "" {
		rec.RecoveryID = &m.RecoveryID
	}
	if status != 0 {
		rec.StatusCode = &status
	}
	if postErr != nil {
		msg := describe(postErr)
		rec.Error = &msg
	}
	var next *time.Time
	switch n, again := m.next(d.Clock.Now(), d.jitter()); {
	case postErr == nil && ans.ok:
		rec.Outcome = OutcomeSucceeded
	case again:
		rec.Outcome, rec.NextAttemptAt, next = OutcomeFailed, &n, &n
	default:
		rec.Outcome = OutcomeDead
	}
	recorded, mine, err := d.record(ctx, m, rec, sub)
	if err != nil {
		return err
	}
	if !mine {
		// Another receive of this message made the attempt too and
		// recorded it first: its record stands, and what follows it.
		log.InfoContext(ctx, "webhook attempt recorded by another receive of its message", "outcome", recorded.Outcome)
		return d.after(ctx, m, recorded)
	}
	if d.MetricsNamespace != "" {
		log = log.With(d.metrics(m, rec, now)...)
	}
	switch rec.Outcome {
	case OutcomeSucceeded:
		log.InfoContext(ctx, "webhook delivered", "status", status, "duration_ms", rec.DurationMS)
	case OutcomeFailed:
		log.InfoContext(ctx, "webhook attempt failed; retry scheduled", "status", status, "error", rec.Error, "next_attempt_at", next)
	default:
		log.ErrorContext(ctx, "webhook delivery dead: retries exhausted", "status", status, "error", rec.Error, "since", m.CreatedAt)
	}
	return d.after(ctx, m, rec)
}

// deferral puts m's attempt off without making it, its vendor having its
// share in flight (it keeps its number), in the slow lane, so that this
// message holds no capacity another vendor's delivery could use; how long
// follows what look saw of the slots' holders (DeferDelay).
func (d Deliverer) deferral(ctx context.Context, log *slog.Logger, m Message, look Look, now time.Time) error {
	later, delay, expect := d.deferred(m, look, now)
	log.DebugContext(ctx, "webhook attempt deferred: the vendor's delivery slots are held", "deferrals", later.Deferrals, "delay", delay.String(), "held_slow", expect.Slow)
	return d.send(ctx, later, delay)
}

// deferred is m put off for lack of a slot: in the slow lane, its
// Deferrals counted, with the delay DeferDelay gives it as look saw the
// slots it could take (expect).
func (d Deliverer) deferred(m Message, look Look, now time.Time) (later Message, delay time.Duration, expect Expect) {
	later = m
	later.Lane = LaneSlow
	later.Deferrals++
	expect = look.expect(now, m.Attempt > 1)
	return later, DeferDelay(later.Deferrals, expect, d.jitter()), expect
}

// finish does again what follows an attempt recorded before a crash: the
// event's delivered mark for a success (written beside the record, so it
// may be missing), then after.
func (d Deliverer) finish(ctx context.Context, m Message, rec Attempt) error {
	if rec.Outcome == OutcomeSucceeded {
		if err := d.markDelivered(ctx, m, rec); err != nil {
			return err
		}
	}
	return d.after(ctx, m, rec)
}

// after does what follows a recorded attempt: a success or a death
// settles a replay's destination, a failure queues the next attempt, a
// death disables a subscription that failed throughout. Each step is
// idempotent (a replay's destination is counted once, the next attempt is
// claimed once), so it is done again when the message is.
func (d Deliverer) after(ctx context.Context, m Message, rec Attempt) error {
	first := m.firstAttempt(rec)
	switch rec.Outcome {
	case OutcomeSucceeded:
		return d.countOutcome(ctx, m, replayDelivered)
	case OutcomeFailed:
		next := rec.NextAttemptAt
		if next == nil {
			return fmt.Errorf("webhook: failed attempt %s/%d has no next attempt", m.DeliveryID, m.Attempt)
		}
		retry := m
		retry.Attempt, retry.NotBefore, retry.Lane, retry.FirstAttemptAt = m.Attempt+1, *next, LaneSlow, first
		return d.send(ctx, retry, next.Sub(d.Clock.Now()))
	}
	if m.ReplayID != "" || m.RecoveryID != "" {
		return d.countOutcome(ctx, m, replayFailed)
	}
	since := m.CreatedAt
	if first != nil {
		since = *first
	}
	return d.disableIfFailing(ctx, m, since)
}

// firstAttempt is when m's delivery made its first attempt, rec being the
// record of m's own attempt; nil when no message or record says (an older
// build's).
func (m Message) firstAttempt(rec Attempt) *time.Time {
	switch {
	case m.FirstAttemptAt != nil:
		return m.FirstAttemptAt
	case m.Attempt == 1 && !rec.AttemptedAt.IsZero():
		at := rec.AttemptedAt
		return &at
	}
	return nil
}

// hold takes one of the vendor's delivery slots for m's attempt, or
// reports that none is free. A message received again (Receives > 1) that
// already holds the attempt's claim goes on without a slot: it may have
// made the attempt, or claimed it, before it was interrupted, and only it
// can finish that attempt; a deferral would send a message with another
// id, which the claim would take for a duplicate.
func (d Deliverer) hold(ctx context.Context, m Message, qm queue.Message, look Look) (func(context.Context) error, bool, error) {
	none := func(context.Context) error { return nil }
	if d.Slots == nil {
		return none, true, nil
	}
	release, ok, err := d.Slots.Take(ctx, look, Holder{Owner: qm.ID, SubscriptionID: m.SubscriptionID, Retry: m.Attempt > 1})
	if err != nil || ok || qm.Receives <= 1 {
		return release, ok, err
	}
	c, found, err := d.heldClaim(ctx, m)
	if err != nil || !found {
		return nil, false, err
	}
	return none, c.Owner == qm.ID, nil
}

// prepared is what an attempt needs before its request: its vendor's
// slot (ok, and release to give it back), the event and the subscription,
// and the attempt's claim when prepare made it (claimed).
type prepared struct {
	release  func(context.Context) error
	ok       bool
	holdErr  error
	ev       event.Event
	evErr    error
	sub      Subscription
	subErr   error
	claimed  bool
	c        claim
	made     bool
	claimErr error
	// attemptID is the id the attempt's record takes when this message
	// claims it.
	attemptID string
}

// prepare takes m's slot and reads what its attempt needs. A fresh
// delivery received for the first time, whose vendor had a slot free when
// looked, does it all at once: the slot, the event, the subscription and
// the attempt's claim, four round trips side by side instead of one after
// another (the two writes are most of a delivery's wait before its
// request when the store is busy). Anything else takes its slot first,
// and reads and claims only with one: a deferral costs no more than the
// look and, when a slot looked free, a lost put. A claim made beside a
// slot that was not won is given back (unclaim) before the deferral, so
// that a deferred message has claimed nothing.
func (d Deliverer) prepare(ctx context.Context, m Message, qm queue.Message, look Look, attemptID string) prepared {
	p := prepared{attemptID: attemptID}
	var wg sync.WaitGroup
	read := func() {
		wg.Go(func() { p.ev, p.evErr = event.Read(ctx, d.Store, m.VendorID, m.EventID) })
		wg.Go(func() { p.sub, p.subErr = get(ctx, d.Store, m.VendorID, m.SubscriptionID) })
	}
	if m.Lane == LaneSlow || qm.Receives > 1 || !look.mayTake(m.Attempt > 1) {
		p.release, p.ok, p.holdErr = d.hold(ctx, m, qm, look)
		if p.holdErr == nil && p.ok {
			read()
			wg.Wait()
		}
		return p
	}
	p.claimed = true
	wg.Go(func() { p.release, p.ok, p.holdErr = d.hold(ctx, m, qm, look) })
	wg.Go(func() { p.c, p.made, p.claimErr = d.claim(ctx, m, qm.ID, attemptID) })
	read()
	wg.Wait()
	return p
}

// unclaim gives back the claim prepare made for an attempt that is not
// made now (no slot, a dropped delivery, an error before the request):
// its deferred copy or a later message claims it as the owner. Only a
// claim this handling wrote is given back: one found from an earlier
// receive may name a recorded attempt.
func (d Deliverer) unclaim(ctx context.Context, m Message, qm queue.Message, p prepared) error {
	if !p.claimed || p.claimErr != nil || !p.made || p.c.Owner != qm.ID {
		return nil
	}
	if err := d.Store.Transact(context.WithoutCancel(ctx), store.Delete(claimKey(m), store.Cond{})); err != nil {
		return fmt.Errorf("webhook: give back the claim of %s/%d: %w", m.DeliveryID, m.Attempt, err)
	}
	return nil
}

func newAttemptID(t time.Time) string { return ids.Sortable("whatt", t) }

// record stores an attempt, kept AttemptRetention, under the id its claim
// named, with the subscription's counters when they change (healthOps: the
// failure streak, and the end of one), in one write: a lone conditional
// put when no counter moves (a success on a healthy subscription), else a
// transaction. A message handled again finds the attempt made and counted
// by the claim's id. A success's delivered mark (what a recovery skips) is
// put beside it, not in it: it is only ever added, and a message handled
// again puts it again (finish). sub is the subscription as read before the
// attempt. The record is put only if absent: when another receive of the
// same message recorded the attempt first, that record is returned and
// nothing is counted twice.
// mine is false when the record returned is the other receive's.
func (d Deliverer) record(ctx context.Context, m Message, rec Attempt, sub Subscription) (got Attempt, mine bool, err error) {
	var wg sync.WaitGroup
	var markErr error
	if rec.Outcome == OutcomeSucceeded {
		wg.Go(func() { markErr = d.markDelivered(ctx, m, rec) })
	}
	got, mine, err = d.commit(ctx, m, rec, sub)
	wg.Wait()
	return got, mine, errors.Join(err, markErr)
}

func (d Deliverer) commit(ctx context.Context, m Message, rec Attempt, sub Subscription) (Attempt, bool, error) {
	k := datamodel.AttemptKey(m.VendorID, m.SubscriptionID, rec.ID)
	tries, err := healthOps(d.Clock.Now(), m, rec, sub)
	if err != nil {
		return Attempt{}, false, err
	}
	expires := rec.AttemptedAt.Add(AttemptRetention).Unix()
	for _, t := range tries {
		rec.Notice = t.notice
		b, err := json.Marshal(rec)
		if err != nil {
			return Attempt{}, false, err
		}
		ops := append([]store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: b, ExpiresAt: expires}, store.IfAbsent())}, t.ops...)
		err = d.Store.Transact(ctx, ops...)
		if !store.IsCondition(err) {
			return rec, err == nil, err
		}
		// The record is there already, or the counters moved meanwhile
		// (or the subscription was deleted): the next, humbler try.
		prior, found, err := d.recorded(ctx, m, rec.ID)
		if err != nil || found {
			return prior, false, err
		}
	}
	return Attempt{}, false, fmt.Errorf("webhook: record attempt %s/%d: every try was refused", m.DeliveryID, m.Attempt)
}

// recorded reads the record of m's attempt id; found is false when there
// is none.
func (d Deliverer) recorded(ctx context.Context, m Message, id string) (a Attempt, found bool, err error) {
	it, err := d.Store.Get(ctx, datamodel.AttemptKey(m.VendorID, m.SubscriptionID, id))
	if errors.Is(err, store.ErrNotFound) {
		return Attempt{}, false, nil
	}
	if err != nil {
		return Attempt{}, false, err
	}
	if err := json.Unmarshal(it.Data, &a); err != nil {
		return Attempt{}, false, fmt.Errorf("webhook: decode attempt %s: %w", it.SK, err)
	}
	return a, true, nil
}

// markDelivered puts the mark that m's event reached its subscription
// (recover.go: delivered), kept as long as the attempt that succeeded.
func (d Deliverer) markDelivered(ctx context.Context, m Message, rec Attempt) error {
	at := rec.AttemptedAt
	if at.IsZero() {
		at = d.Clock.Now()
	}
	k := datamodel.DeliveredKey(m.VendorID, m.SubscriptionID, m.EventID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{}`), ExpiresAt: at.Add(AttemptRetention).Unix()}
	if err := d.Store.Transact(ctx, store.Put(it, store.Cond{})); err != nil {
		return fmt.Errorf("webhook: mark event %s delivered: %w", m.EventID, err)
	}
	return nil
}

// disableIfFailing disables the subscription of a dead delivery unless a
// delivery to it succeeded since that one's first attempt, since (the
// endpoint recovered: a success that ended the failure streak, or one an
// older build counted), and records the webhook_subscription.disabled
// event with it. A success on a subscription without a streak writes
// nothing, and none is needed: from the dead delivery's first failure on
// the streak is at least one until a success ends it.
func (d Deliverer) disableIfFailing(ctx context.Context, m Message, since time.Time) error {
	for range 3 {
		it, err := d.Store.Get(ctx, datamodel.SubscriptionKey(m.VendorID, m.SubscriptionID))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		sub, err := Decode(it)
		if err != nil {
			return err
		}
		if sub.Status != StatusEnabled || sub.Successes > m.Successes || sub.RecoveredAt >= since.UnixMilli() {
			return nil
		}
		now := d.Clock.Now()
		reason := DisabledByFailures
		prev := sub.Version
		sub.Status, sub.DisabledReason, sub.DisabledAt = StatusDisabled, &reason, &now
		sub.Version++
		sub.UpdatedAt = now
		doc, err := encode(ctx, d.Secrets, sub)
		if err != nil {
			return err
		}
		ev, err := subscriptionEvent(now, m.VendorID, event.WebhookSubscriptionDisabled, sub.ID, map[string]any{
			"version": sub.Version, "reason": reason, "event_id": m.EventID, "delivery_id": m.DeliveryID})
		if err != nil {
			return err
		}
		cond := store.IfVersion(prev)
		cond.Bounds = []store.Bound{{Attr: datamodel.SuccessesAttr, Cmp: store.LE, Value: m.Successes},
			{Attr: datamodel.RecoveredAttr, Cmp: store.LT, Value: since.UnixMilli()}}
		err = d.Store.Transact(ctx, store.Update(it.Key(), doc, sub.Version, nil, cond), ev)
		if store.IsCondition(err) {
			continue // changed meanwhile: look again
		}
		if err == nil {
			d.log().WarnContext(ctx, "webhook subscription disabled: deliveries kept failing",
				"vendor_id", m.VendorID, "subscription_id", sub.ID, "since", m.CreatedAt)
		}
		return err
	}
	return nil
}
