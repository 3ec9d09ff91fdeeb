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

// webhookWorks deliver events, in two lanes (webhook/lanes.go): the rule
// fans each new event out to one message per matching subscription in
// the fresh lane (in the slow lane for a subscription marked slow, when
// the event fans out beyond webhook.VendorSlots: the rule reads the same
// slots as the handler, one MemorySlots locally, where the router runs
// beside the pools and is built from these works, the table in AWS); one
// handler makes the attempts of both lanes (on one client, so that
// connections to receivers are reused across deliveries) and sends retries and deferrals to the slow lane on q. Each vendor
// holds at most webhook.VendorSlots attempts in flight across both lanes:
// counted in memory by the local server, whose pools are the only ones,
// and in the store by the worker Lambdas, whose environments share
// nothing else. A batch's deliveries are made at once (Parallel): they
// wait on different receivers.
func (a *App) webhookWorks(d webhook.Deliverer) []Work {
	return []Work{
		{Queue: queue.WebhookDeliveries, Rule: d.Rule, Handle: d.Handle, Parallel: true},
		{Queue: queue.WebhookSlowLane, Handle: d.Handle, Parallel: true},
	}
}

// deliverer makes the attempts and routes the deliveries, sending on q.
// Its slots count each vendor's attempts in flight: in memory for the
// local server, whose pools are the only ones, in the store for the
// worker Lambdas. Works makes one and hands it to every work that reads
// the slots (the deliveries and the replays' fan-out).
func (a *App) deliverer(q queue.Sender) webhook.Deliverer {
	policy := a.webhookPolicy()
	var slots webhook.Slots = webhook.StoreSlots{Store: a.Store, Clock: a.Clock}
	if a.local != nil {
		slots = webhook.NewMemorySlots(a.Clock)
	}
	return webhook.Deliverer{Store: a.Store, Clock: a.Clock, Queue: q, Policy: policy, Client: webhook.NewClient(policy), Log: a.Log, Slots: slots, Secrets: a.Secrets,
		MetricsNamespace: a.Config.MetricsNamespace, AWS: a.WebhookAWS}
}

// replayWork runs event replays: the rule starts each new replay, the
// handler selects its destinations and queues their deliveries on q,
// those to subscriptions marked slow on the slow lane (d's slots).
func (a *App) replayWork(q queue.Sender, d webhook.Deliverer) Work {
	r := webhook.Replayer{Store: a.Store, Clock: a.Clock, Queue: q, Log: a.Log, Lanes: d}
	return Work{Queue: queue.EventReplays, Rule: r.Rule, Handle: r.Handle}
}
