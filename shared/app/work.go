package app

import (
	"fmt"

	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
)

// Work is one kind of background work: the rule that starts it from
// committed changes, and the handler of its queue. In AWS the rule runs in
// the stream-router Lambda and the handler in the queue's worker Lambda;
// locally both run in the server process.
type Work struct {
	Queue string
	// Rule starts the work from changes; nil when only other work sends to
	// this queue.
	Rule   pipeline.Rule
	Handle queue.Handler
	// Parallel says the messages of one batch may be handled at once (the
	// worker Lambda's batch; the local pool handles each message on its
	// own anyway).
	Parallel bool
}

// Works builds the service's background work, each worker once; q is
// where work sends follow-up messages (retries, fan-out). A Lambda builds
// them once at init, the local background once in New.
func (a *App) Works(q queue.Sender) []Work {
	d := a.deliverer(q)
	return append(a.webhookWorks(d),
		a.replayWork(q, d),
		a.bulkWork(q),
		a.sellerOrderWork(),
		a.syncWork(q),
	)
}

// Router is the stream router over the works' rules.
func (a *App) Router(q queue.Sender) pipeline.Router {
	r := router(a.Works(q), q)
	r.Pending = a.pending()
	return r
}

// Work finds the work of a queue.
func (a *App) Work(q queue.Sender, name string) (Work, error) {
	for _, w := range a.Works(q) {
		if w.Queue == name {
			return w, nil
		}
	}
	return Work{}, fmt.Errorf("app: no work for queue %q", name)
}
