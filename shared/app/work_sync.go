package app

import (
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/syncjob"
)

// syncWork decides sync jobs: the insert of a job starts it, and its worker
// compares each reported item with the source of truth, in order.
func (a *App) syncWork(q queue.Sender) Work {
	w := syncjob.NewWorker(a.Services.Sync, a.Store, a.Clock, q, a.Log)
	return Work{Queue: queue.SyncJobs, Rule: syncjob.Rule, Handle: w.Handle}
}
