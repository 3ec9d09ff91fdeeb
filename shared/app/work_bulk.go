package app

import (
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/queue"
)

// bulkWork applies bulk operations: the insert of a job starts it, and its
// worker applies the records in order, paced by the vendor's write window.
func (a *App) bulkWork(q queue.Sender) Work {
	w := bulk.NewWorker(a.Services.Bulk, a.Store, a.Clock, q, a.Log)
	return Work{Queue: queue.BulkOperations, Rule: bulk.Rule, Handle: w.Handle}
}
