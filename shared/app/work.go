package app

import (
	"context"
	"fmt"

	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store/sqlite"
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
}

// Works lists the service's background work; q is where work sends
// follow-up messages (retries, fan-out).
func (a *App) Works(q queue.Sender) []Work {
	return []Work{
		// One entry per kind of work, e.g. a.webhookWork(q).
		a.webhookWork(q),
		a.replayWork(q),
		a.bulkWork(q),
		a.sellerOrderWork(),
		a.syncWork(q),
	}
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

// embeddedWork runs one pass of the pipeline on the embedded store: route
// new changes, then handle what is visible on every queue. It reports
// whether it did anything, so the caller can loop until idle.
func (a *App) embeddedWork(ctx context.Context, s *sqlite.Store, q *sqlitequeue.Queue) (bool, error) {
	routed, err := pipeline.Tail(ctx, s, a.Router(q), 500)
	if err != nil {
		return routed > 0, err
	}
	busy := routed > 0
	for _, w := range a.Works(q) {
		n, err := q.Work(ctx, w.Queue, 20, w.Handle)
		if err != nil {
			return true, err
		}
		busy = busy || n > 0
	}
	return busy, nil
}

// EmbeddedQueue opens the embedded work queue on the embedded store.
func (a *App) EmbeddedQueue() (*sqlite.Store, *sqlitequeue.Queue, error) {
	s, ok := a.Store.(*sqlite.Store)
	if !ok {
		return nil, nil, fmt.Errorf("app: the embedded queue needs the embedded store")
	}
	q, err := sqlitequeue.New(s.DB(), a.Clock.Now)
	if err != nil {
		return nil, nil, err
	}
	return s, q, nil
}

// Drain runs the embedded pipeline until nothing is left to do now; tests
// call it to let background work finish.
func (a *App) Drain(ctx context.Context) error {
	s, q, err := a.EmbeddedQueue()
	if err != nil {
		return err
	}
	for i := 0; i < 1000; i++ {
		busy, err := a.embeddedWork(ctx, s, q)
		if err != nil {
			return err
		}
		if !busy {
			return nil
		}
	}
	return fmt.Errorf("app: background work did not settle")
}
