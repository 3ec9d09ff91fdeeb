package app

import (
	"context"
	"time"

	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// ExpireReservations releases every reservation whose hold has ended,
// walking every expiry shard once; entries that fail are logged, counted
// and left for the next pass. The reservation-expirer Lambda runs it on a
// schedule; the local server runs it every second.
func (a *App) ExpireReservations(ctx context.Context) (reservation.Run, error) {
	run, err := reservation.Service{Store: a.Store, Clock: a.Clock}.ExpireDue(ctx, 100)
	for _, e := range run.Errors {
		a.Log.ErrorContext(ctx, "expire reservation", "error", e)
	}
	if run.Failed > 0 {
		a.Log.WarnContext(ctx, "reservation expiry pass had failures", "expired", run.Expired, "failed", run.Failed)
	}
	return run, err
}

// RunBackground does, in one process, what the stream router, the
// workers, the scheduled functions and the store's TTL do in AWS: on the
// embedded store it routes new changes to the durable queues and works
// them, and every interval it expires reservations and (every minute)
// sweeps expired items. It returns when ctx ends.
func (a *App) RunBackground(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	lastSweep := time.Now()
	s, q, qerr := a.EmbeddedQueue()
	// Not embedded, with SQS queues configured: the stream router and the
	// workers run beside this loop, over the table's stream (queues.go).
	if qerr != nil && len(a.Config.QueueURLs) > 0 {
		go a.runStreamPipeline(ctx, interval)
	}
	for {
		if qerr == nil {
			// Work until idle, then wait for the next tick.
			for {
				busy, err := a.embeddedWork(ctx, s, q)
				if err != nil {
					a.Log.ErrorContext(ctx, "background work", "error", err)
				}
				if !busy || err != nil || ctx.Err() != nil {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if run, err := a.ExpireReservations(ctx); err == nil && run.Expired > 0 {
			a.Log.InfoContext(ctx, "expired reservations", "count", run.Expired)
		}
		if s, ok := a.Store.(*sqlite.Store); ok && time.Since(lastSweep) >= time.Minute {
			lastSweep = time.Now()
			if _, err := s.Sweep(ctx); err != nil {
				a.Log.ErrorContext(ctx, "sweep expired items", "error", err)
			}
		}
	}
}
