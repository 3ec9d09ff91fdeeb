package webhook

// Two lanes of deliveries. Fresh deliveries travel in one queue
// (queue.WebhookDeliveries); whatever may wait on a slow receiver travels
// in the slow lane (queue.WebhookSlowLane), whose workers are apart: the
// retries (a failed receiver), the deferrals (a vendor with all its slots
// held) and every delivery to a subscription whose receiver took
// SlowReceiver or longer lately (its lane mark, kept with the vendor's
// slots). So where workers take messages in batches and a batch lasts as
// long as its slowest attempt (a worker Lambda), no fresh delivery to a
// prompt receiver waits behind another vendor's slow one; only the first
// slow attempts to a receiver, before its mark, are made in the fresh
// lane, at most VendorSlots of its vendor at once. An event that fans out
// to more deliveries than VendorSlots has its vendor's slots read once by
// the fan-out (Deliverer.Rule), which sends the deliveries to marked
// subscriptions to the slow lane itself, as the worker would have moved
// them, instead of through a fresh-lane handling each.

import (
	"context"
	"log/slog"
	"time"

	"github.com/moku/sellerapi/shared/queue"
)

// LaneSlow is Message.Lane for the slow lane; the fresh lane's is empty.
const LaneSlow = "slow"

const (
	// SlowReceiver is how long an attempt may take before its receiver is
	// counted slow.
	SlowReceiver = 2 * time.Second
	// SlowMark is how long a slow attempt keeps its subscription in the
	// slow lane; a prompt attempt there takes the mark away sooner.
	SlowMark = 10 * time.Minute
)

// queueOf is the queue of m's lane.
func queueOf(m Message) string {
	if m.Lane == LaneSlow {
		return queue.WebhookSlowLane
	}
	return queue.WebhookDeliveries
}

// look reads m's vendor's slots and lane marks; without Slots, nothing.
func (d Deliverer) look(ctx context.Context, m Message) (Look, error) {
	if d.Slots == nil {
		return Look{VendorID: m.VendorID}, nil
	}
	return d.Slots.Look(ctx, m.VendorID)
}

// misrouted reports whether m, received in the fresh lane, belongs in the
// slow one: a retry, or a delivery to a receiver marked slow. A message
// received again is never moved: it may hold its attempt's claim, which
// a message with another id would take for a duplicate's.
func misrouted(m Message, receives int, look Look, now time.Time) bool {
	if m.Lane == LaneSlow || receives > 1 {
		return false
	}
	return m.Attempt > 1 || look.SlowUntil(m.SubscriptionID).After(now)
}

// noteSpeed keeps the subscription's lane mark in step with how long its
// receiver took: a slow attempt marks it (again when the mark is half
// spent), a prompt one takes the mark away. Only a change is written, and
// a failure to write is logged, not retried: the mark is a hint.
func (d Deliverer) noteSpeed(ctx context.Context, log *slog.Logger, m Message, look Look, took time.Duration) {
	if d.Slots == nil {
		return
	}
	slow := d.SlowAfter
	if slow <= 0 {
		slow = SlowReceiver
	}
	now := d.Clock.Now()
	until := look.SlowUntil(m.SubscriptionID)
	var err error
	switch {
	case took >= slow && until.Before(now.Add(SlowMark/2)):
		err = d.Slots.MarkSlow(ctx, m.VendorID, m.SubscriptionID, now.Add(SlowMark))
	case took < slow && until.After(now):
		err = d.Slots.MarkSlow(ctx, m.VendorID, m.SubscriptionID, time.Time{})
	}
	if err != nil {
		log.WarnContext(ctx, "webhook lane mark not written", "error", err)
	}
}
