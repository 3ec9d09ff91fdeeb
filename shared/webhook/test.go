package webhook

import (
	"context"

	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
)

// TestResult is what a test delivery got: the answer of one signed
// delivery of a webhook_subscription.test event, sent at once.
type TestResult struct {
	EventID    string  `json:"event_id"`
	DeliveryID string  `json:"delivery_id"`
	StatusCode *int    `json:"status_code"`
	DurationMS int64   `json:"duration_ms"`
	Error      *string `json:"error"`
	Response   *string `json:"response"`
	Succeeded  bool    `json:"succeeded"`
}

// Test sends sub one delivery of a webhook_subscription.test event now,
// with the headers and signature of every delivery, whatever its status
// and event types, and reports the answer. The event is not written to
// the log and the attempt is not retried or recorded: the answer is the
// record. ctx names the request (event.Request) when one asked.
func (d Deliverer) Test(ctx context.Context, sub Subscription) (TestResult, error) {
	if err := sub.Open(ctx, d.Secrets); err != nil {
		return TestResult{}, err
	}
	now := d.Clock.Now()
	ev := event.New(now, sub.VendorID, event.WebhookSubscriptionTest, "webhook_subscription", sub.ID, map[string]any{"version": sub.Version})
	if rid := ids.RequestID(ctx); rid != nil {
		ev.Request = &event.Request{ID: *rid, IdempotencyKey: ids.IdempotencyKey(ctx)}
	}
	m := Message{VendorID: sub.VendorID, EventID: ev.ID, SubscriptionID: sub.ID, DeliveryID: DeliveryID(ev.ID, sub.ID, ""), Attempt: 1, CreatedAt: now, NotBefore: now}
	ans, took, err := d.deliver(ctx, sub, ev, m)
	r := TestResult{EventID: ev.ID, DeliveryID: m.DeliveryID, DurationMS: took.Milliseconds(), Response: Excerpt(ans.excerpt, ans.answered)}
	if ans.status != 0 {
		r.StatusCode = &ans.status
	}
	if err != nil {
		msg := describe(err)
		r.Error = &msg
	}
	r.Succeeded = err == nil && ans.ok
	return r, nil
}
