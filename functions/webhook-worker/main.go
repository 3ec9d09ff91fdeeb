// Command webhook-worker is an SQS-triggered Lambda that delivers webhooks:
// each message of the webhook-deliveries queue is one (event, subscription)
// delivery attempt, signed and sent to the subscriber's HTTPS endpoint,
// recorded, and retried with backoff. The work itself is registered in
// shared/app (app.Work); this main only names the queue. Failed messages are
// reported in the partial batch response and retried by SQS, then
// dead-lettered by the queue's redrive policy.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.WebhookDeliveries

func main() { lambdaapi.WorkerMain("webhook-worker", work) }
