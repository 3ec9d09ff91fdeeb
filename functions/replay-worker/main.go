// Command replay-worker is an SQS-triggered Lambda that runs event replays:
// each message of the event-replays queue is one stored replay, which it
// fans out into webhook deliveries to the chosen subscriptions. The work
// itself is registered in shared/app (app.Work); this main only names the
// queue. Failed messages are reported in the partial batch response and
// retried by SQS, then dead-lettered by the queue's redrive policy.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.EventReplays

func main() { lambdaapi.WorkerMain("replay-worker", work) }
