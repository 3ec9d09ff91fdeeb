package app

import (
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/webhook"
)

// webhookPolicy is where this deployment lets webhooks go: public HTTPS
// on 443, and loopback too under --allow-private-webhooks.
func (a *App) webhookPolicy() webhook.Policy {
	return webhook.Policy{AllowLoopback: a.Config.AllowPrivateWebhooks, Resolver: a.WebhookResolver}
}

// webhookWork delivers events: the rule fans each new event out to one
// message per matching subscription, the handler makes each attempt (on
// one client, so that connections to receivers are reused across
// deliveries) and schedules retries on q.
func (a *App) webhookWork(q queue.Sender) Work {
	policy := a.webhookPolicy()
	d := webhook.Deliverer{Store: a.Store, Clock: a.Clock, Queue: q, Policy: policy, Client: webhook.NewClient(policy), Log: a.Log}
	return Work{Queue: queue.WebhookDeliveries, Rule: d.Rule, Handle: d.Handle}
}

// replayWork runs event replays: the rule starts each new replay, the
// handler selects its destinations and queues their deliveries on q.
func (a *App) replayWork(q queue.Sender) Work {
	r := webhook.Replayer{Store: a.Store, Clock: a.Clock, Queue: q, Log: a.Log}
	return Work{Queue: queue.EventReplays, Rule: r.Rule, Handle: r.Handle}
}
