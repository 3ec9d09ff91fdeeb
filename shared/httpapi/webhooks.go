package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// Webhooks is the Webhooks group: subscriptions, their delivery attempts,
// their recoveries, and replays of events (replays.go).
var Webhooks = Group{Name: "webhooks", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.WebhooksRead}, []auth.Scope{auth.WebhooksWrite}
	base := "/vendors/{vendor_id}/webhook-subscriptions"
	one := base + "/{subscription_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listWebhookSubscriptions", Scopes: read, PageAhead: pageAhead(datamodel.SubscriptionPrefix, false), Handle: s.listWebhookSubscriptions},
		{Method: http.MethodPost, Path: base, Operation: "createWebhookSubscription", Scopes: write, Handle: s.createWebhookSubscription},
		{Method: http.MethodGet, Path: one, Operation: "getWebhookSubscription", Scopes: read, Handle: s.getWebhookSubscription},
		{Method: http.MethodPatch, Path: one, Operation: "updateWebhookSubscription", Scopes: write, Handle: s.updateWebhookSubscription},
		{Method: http.MethodDelete, Path: one, Operation: "deleteWebhookSubscription", Scopes: write, Handle: s.deleteWebhookSubscription},
		{Method: http.MethodPost, Path: one + "/rotate-secret", Operation: "rotateWebhookSubscriptionSecret", Scopes: write, Handle: s.rotateWebhookSecret},
		{Method: http.MethodPost, Path: one + "/test", Operation: "testWebhookSubscription", Scopes: write, ReadAhead: aheadOf(aheadSubscription), Handle: s.testWebhookSubscription},
		{Method: http.MethodPost, Path: one + "/recover", Operation: "recoverWebhookSubscription", Scopes: write, Handle: s.recoverWebhookSubscription},
		{Method: http.MethodGet, Path: one + "/recoveries/{recovery_id}", Operation: "getWebhookRecovery", Scopes: read, Handle: s.getWebhookRecovery},
		{Method: http.MethodGet, Path: one + "/deliveries", Operation: "listWebhookDeliveries", Scopes: read, ReadAhead: aheadOf(aheadSubscription), PageAhead: pageDeliveries, Handle: s.listWebhookDeliveries},
		{Method: http.MethodPost, Path: "/vendors/{vendor_id}/events/{event_id}/replay", Operation: "replayEvent", Scopes: write, Handle: s.replayEvent},
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/events/{event_id}/replays/{replay_id}", Operation: "getEventReplay", Scopes: read, Handle: s.getEventReplay},
	}
}}

func (s *Server) listWebhookSubscriptions(ctx context.Context, c *Call) error {
	return listed(ctx, c, "webhook-subscriptions", "", c.webhooks().List)
}

func (s *Server) createWebhookSubscription(ctx context.Context, c *Call) error {
	body, err := c.Body(0)
	if err != nil {
		return err
	}
	svc := c.webhooks()
	in, err := webhook.ParseCreate(body, svc.Policy)
	if err != nil {
		return err
	}
	return c.Mutate(ctx, "webhook_subscriptions.create", idempotency.ConnectionKeyPattern, body, secret(answer(http.StatusCreated, func(ctx context.Context) (store.Prepared[webhook.WithSecret], error) {
		return svc.PrepareCreate(ctx, c.Principal.Vendor.ID, in)
	})))
}

func (s *Server) getWebhookSubscription(ctx context.Context, c *Call) error {
	sub, err := c.webhooks().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, sub.View())
}

func (s *Server) updateWebhookSubscription(ctx context.Context, c *Call) error {
	body, err := c.Body(0)
	if err != nil {
		return err
	}
	svc := c.webhooks()
	in, err := webhook.ParseUpdate(body, svc.Policy)
	if err != nil {
		return err
	}
	v, err := svc.Update(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"), in)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

// deleted is the body of a successful delete.
type deleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

func (s *Server) deleteWebhookSubscription(ctx context.Context, c *Call) error {
	id := c.R.PathValue("subscription_id")
	if err := c.webhooks().Delete(ctx, c.Principal.Vendor.ID, id); err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, deleted{ID: id, Deleted: true})
}

func (s *Server) rotateWebhookSecret(ctx context.Context, c *Call) error {
	if err := optionalEmptyBody(ctx, c); err != nil {
		return err
	}
	v, err := c.webhooks().Rotate(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

// testWebhookSubscription sends the subscription one signed test delivery
// now and answers with what the receiver answered. It sends only once the
// request's rate decision is in (a refused request sends nothing), and
// gives the delivery its own deadline, not the store work's.
func (s *Server) testWebhookSubscription(ctx context.Context, c *Call) error {
	if err := optionalEmptyBody(ctx, c); err != nil {
		return err
	}
	svc := c.webhooks()
	sub, err := svc.Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("subscription_id"))
	if err != nil {
		return err
	}
	if g := c.view.gate; g != nil {
		if err := g.wait(); err != nil {
			return err
		}
	}
	res, err := s.svc.Tester.Test(context.WithoutCancel(ctx), sub)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, res)
}

func (s *Server) listWebhookDeliveries(ctx context.Context, c *Call) error {
	id := c.R.PathValue("subscription_id")
	q := c.R.URL.Query()
	f := webhook.AttemptFilter{EventID: q.Get("event_id"), Outcome: q.Get("outcome")}
	// Without filters the binding is what it was before they existed, so
	// cursors issued then still work.
	binding := id
	if f != (webhook.AttemptFilter{}) {
		binding += "&event_id=" + f.EventID + "&outcome=" + f.Outcome
	}
	pr, err := c.PageParams(ctx, "webhook-deliveries", binding)
	if err != nil {
		return err
	}
	attempts, err := c.webhooks().Attempts(ctx, c.Principal.Vendor.ID, id, pr.After, pr.Limit, f)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, attempts)
}
