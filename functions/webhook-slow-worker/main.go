// Command webhook-slow-worker is an SQS-triggered Lambda that makes the
// webhook attempts of the slow lane: retries, deferrals and deliveries to
// receivers that were slow lately (shared/webhook/lanes.go). It runs the
// webhook-worker's handler on a queue and a concurrency of its own, so
// that no fresh delivery waits behind them.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.WebhookSlowLane

func main() { lambdaapi.WorkerMain("webhook-slow-worker", work) }
