// Command sync-worker is an SQS-triggered Lambda that decides sync jobs:
// each message of the sync-jobs queue names one job, whose items it
// compares with the source of truth in order, resuming where an earlier
// run stopped. The work itself is registered in shared/app (app.Work);
// this main only names the queue.
package main

import (
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
)

// work is the queue this function drains: main names it and the tests run
// it, so a wrong queue here fails them.
const work = queue.SyncJobs

func main() { lambdaapi.WorkerMain("sync-worker", work) }
