// Command bulk-worker is an SQS-triggered Lambda that applies bulk
// operations: each message of the bulk-operations queue is one stored job,
// whose records it applies in order, paced by the vendor's write allowance.
// The work itself is registered in shared/app (app.Work); this main only
// names the queue. Failed messages are reported in the partial batch
// response and retried by SQS, then dead-lettered by the queue's redrive
// policy.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.BulkOperations

func main() { lambdaapi.WorkerMain("bulk-worker", work) }
