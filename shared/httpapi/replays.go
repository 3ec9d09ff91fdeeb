package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// replayEvent stores a new replay of an event and answers 202 at once;
// the pipeline runs it. The body is optional: {} or none replays to every
// subscription that receives the event's type, and subscription_ids
// limits the destinations.
func (s *Server) replayEvent(ctx context.Context, c *Call) error {
	var body []byte
	if c.R.ContentLength != 0 {
		b, err := c.Body(0)
		if err != nil {
			return err
		}
		body = b
	}
	in, err := webhook.ParseReplay(body)
	if err != nil {
		return err
	}
	v, err := c.webhooks().CreateReplay(ctx, c.Principal.Vendor.ID, c.R.PathValue("event_id"), in)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusAccepted, v)
}

func (s *Server) getEventReplay(ctx context.Context, c *Call) error {
	v, err := c.webhooks().GetReplay(ctx, c.Principal.Vendor.ID, c.R.PathValue("event_id"), c.R.PathValue("replay_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

// recoverWebhookSubscription stores a queued recovery of the subscription
// under the request's Idempotency-Key and answers 202 at once; the
// pipeline runs it on the replay worker (webhook/recover.go).
func (s *Server) recoverWebhookSubscription(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, webhook.ParseRecover)
	if err != nil {
		return err
	}
	svc := c.webhooks()
	return c.Mutate(ctx, "webhook_subscriptions.recover", idempotency.ConnectionKeyPattern, body, answer(http.StatusAccepted, func(ctx context.Context) (store.Prepared[webhook.RecoveryView], error) {
		return svc.PrepareRecover(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"), in)
	}))
}

func (s *Server) getWebhookRecovery(ctx context.Context, c *Call) error {
	v, err := c.webhooks().GetRecovery(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"), c.R.PathValue("recovery_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

// optionalEmptyBody accepts no body, or a JSON object without properties.
func optionalEmptyBody(ctx context.Context, c *Call) error {
	if c.R.ContentLength == 0 {
		return nil
	}
	b, err := c.Body(0)
	if err != nil {
		return err
	}
	o, err := fields.Parse(b, "")
	if err != nil {
		return err
	}
	if err := o.Err(); err != nil {
		return err
	}
	return nil
}
