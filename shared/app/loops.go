package app

import (
	"context"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// Local mode runs each kind of background work in its own loop, so that
// no kind waits for another: the router, every work queue, reservation
// expiry and the TTL sweep. A queue's loop handles up to its limit of
// messages at once, each under its own deadline, so one tenant's slow
// webhook receiver holds one delivery slot for at most MessageTimeout and
// never the expiry, bulk, sync, replay or seller-order loops.

// MessageTimeout bounds the handling of one message in local mode. It is
// below the embedded queue's 30 s visibility, so a message is not received
// again while it is still being handled; a webhook delivery's own limit
// (webhook.RequestTimeout, 20 s) is within it.
const MessageTimeout = 25 * time.Second

// Concurrency is how many messages of a queue local mode handles at once.
func Concurrency(name string) int {
	switch name {
	case queue.WebhookDeliveries:
		// Deliveries wait on receivers, not on the store.
		return 16
	case queue.EventReplays, queue.BulkOperations, queue.SyncJobs:
		return 4
	}
	return 2
}

// runEmbedded is RunBackground on the embedded store: every loop runs
// until ctx ends, and runEmbedded returns once all have.
func (a *App) runEmbedded(ctx context.Context, s *sqlite.Store, q *sqlitequeue.Queue, interval time.Duration) {
	var wg sync.WaitGroup
	loop := func(name string, every time.Duration, pass func(context.Context) (bool, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.repeat(ctx, name, every, pass)
		}()
	}
	loop("route changes", interval, func(ctx context.Context) (bool, error) {
		n, err := pipeline.Tail(ctx, s, a.Router(q), 500)
		return n > 0, err
	})
	for _, w := range a.Works(q) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.workQueue(ctx, q, w, Concurrency(w.Queue), interval)
		}()
	}
	loop("expire reservations", interval, a.expirePass)
	loop("sweep expired items", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := s.Sweep(ctx)
		return false, err
	})
	wg.Wait()
}

// repeat runs pass until it is idle, then waits for the next tick, until
// ctx ends.
func (a *App) repeat(ctx context.Context, name string, every time.Duration, pass func(context.Context) (bool, error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for {
			busy, err := pass(ctx)
			if err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, name, "error", err)
			}
			if !busy || err != nil || ctx.Err() != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// workQueue handles w's queue with up to limit messages in flight: it
// takes a slot, receives one message and handles it in its own goroutine;
// when the queue shows nothing it waits for the next tick.
func (a *App) workQueue(ctx context.Context, q *sqlitequeue.Queue, w Work, limit int, interval time.Duration) {
	slots := make(chan struct{}, limit)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		msgs, err := q.Receive(ctx, w.Queue, 1)
		if err != nil || len(msgs) == 0 {
			<-slots
			if err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, "receive work", "queue", w.Queue, "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			continue
		}
		inflight.Add(1)
		go func(m queue.Message) {
			defer inflight.Done()
			defer func() { <-slots }()
			a.handleMessage(ctx, q, w, m)
		}(msgs[0])
	}
}

// handleMessage handles one message under MessageTimeout and settles it:
// deleted when handled, back on the queue after its delay when not.
func (a *App) handleMessage(ctx context.Context, q *sqlitequeue.Queue, w Work, m queue.Message) {
	hctx, cancel := context.WithTimeout(ctx, MessageTimeout)
	herr := w.Handle(hctx, m)
	cancel()
	if ctx.Err() != nil {
		return // stopping: the message becomes visible again by itself
	}
	if herr == nil {
		if err := q.Delete(ctx, m.ID); err != nil {
			a.Log.ErrorContext(ctx, "settle work", "queue", w.Queue, "message_id", m.ID, "error", err)
		}
		return
	}
	delay, ok := queue.DelayOf(herr)
	if !ok {
		delay = q.Visibility
	}
	a.Log.WarnContext(ctx, "work failed; it will be retried", "queue", w.Queue, "message_id", m.ID, "receives", m.Receives, "error", herr)
	if err := q.Retry(ctx, m.ID, delay, herr); err != nil {
		a.Log.ErrorContext(ctx, "settle work", "queue", w.Queue, "message_id", m.ID, "error", err)
	}
}
