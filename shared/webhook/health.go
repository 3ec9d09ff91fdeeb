package webhook

import (
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/store"
)

// FailingStreak is the failure streak at which a subscription announces
// that it is failing (webhook_subscription.failing, and a notice on the
// attempt in its delivery log), once per streak. One delivery reaches it
// about eight hours into its three days of retries, so the warning comes
// well before the disable; a burst of events to a dead endpoint reaches
// it sooner.
const FailingStreak = 10

// NoticeFailing marks the attempt that announced a failure streak.
const NoticeFailing = "subscription_failing"

// healthTry is one way to record an attempt: the subscription's counter
// operations to commit with it and the notice the attempt then carries.
type healthTry struct {
	ops    []store.Op
	notice *string
}

// healthOps lists the ways to record rec, most complete first; each holds
// only if the subscription's counters are still as sub read them (or the
// subscription exists), and the last (no counter at all) always holds.
//
// A success writes the subscription only when it ends a streak: it takes
// back the failures and the announcement it read (bounded by them; failures
// counted since stay) and sets RecoveredAttr to now, bounded by the value
// it read, so that it only moves forward. A success on a healthy
// subscription (no streak as read) writes nothing there: the success count
// of older builds is no longer kept (docs/decisions.md, "A delivery's
// writes (issue 26)"). A failure extends the streak; the one that brings it
// to FailingStreak while unannounced also announces it, in the same
// transaction, so two racing failures cannot both announce.
func healthOps(now time.Time, m Message, rec Attempt, sub Subscription) ([]healthTry, error) {
	k := datamodel.SubscriptionKey(m.VendorID, m.SubscriptionID)
	if rec.Outcome == OutcomeSucceeded {
		f, n := sub.FailureStreak, sub.Failing
		if f <= 0 && n <= 0 {
			return []healthTry{{}}, nil
		}
		reset := map[string]int64{datamodel.FailuresAttr: -f, datamodel.FailingAttr: -n, datamodel.RecoveredAttr: now.UnixMilli() - sub.RecoveredAt}
		return []healthTry{{ops: []store.Op{store.Add(k, reset, 0, store.Cond{Bounds: []store.Bound{
			{Attr: datamodel.FailuresAttr, Cmp: store.GE, Value: f}, {Attr: datamodel.FailingAttr, Cmp: store.GE, Value: n},
			{Attr: datamodel.RecoveredAttr, Cmp: store.EQ, Value: sub.RecoveredAt}}})}}, {}}, nil
	}
	var tries []healthTry
	if streak := sub.FailureStreak + 1; streak >= FailingStreak && sub.Failing == 0 {
		ev, err := subscriptionEvent(now, m.VendorID, event.WebhookSubscriptionFailing, sub.ID, map[string]any{
			"version": sub.Version, "failure_streak": streak, "event_id": m.EventID, "delivery_id": m.DeliveryID})
		if err != nil {
			return nil, err
		}
		notice := NoticeFailing
		announce := store.Add(k, map[string]int64{datamodel.FailuresAttr: 1, datamodel.FailingAttr: 1}, 0, store.Cond{Bounds: []store.Bound{
			{Attr: datamodel.FailingAttr, Cmp: store.LE, Value: 0}, {Attr: datamodel.FailuresAttr, Cmp: store.GE, Value: FailingStreak - 1}}})
		tries = append(tries, healthTry{ops: []store.Op{announce, ev}, notice: &notice})
	}
	return append(tries, healthTry{ops: []store.Op{store.Add(k, map[string]int64{datamodel.FailuresAttr: 1}, 0, store.Cond{Exists: true})}}, healthTry{}), nil
}
