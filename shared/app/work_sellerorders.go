package app

import (
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/sellerorder"
)

// sellerOrderWork projects committed external orders whose fulfillment is
// moku into seller orders: the rule sends external_order.committed and
// .cancelled events, the worker applies each (idempotently).
func (a *App) sellerOrderWork() Work {
	p := sellerorder.Projector{Store: a.Store, Clock: a.Clock}
	return Work{Queue: queue.SellerOrders, Rule: sellerorder.Rule, Handle: p.Handle}
}
