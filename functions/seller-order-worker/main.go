// Command seller-order-worker is an SQS-triggered Lambda that projects
// committed external orders whose fulfillment is moku into seller orders:
// each message of the seller-orders queue is one external_order.committed
// or .cancelled event, applied idempotently. The work itself is registered
// in shared/app (app.Work); this main only names the queue.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.SellerOrders

func main() { lambdaapi.WorkerMain("seller-order-worker", work) }
