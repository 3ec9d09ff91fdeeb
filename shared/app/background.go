package app

import (
	"context"
	"time"

	"github.com/moku/sellerapi/shared/reservation"
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
// workers, the scheduled functions and the store's TTL do in AWS. On the
// embedded store every kind of work runs in its own loop with bounded
// concurrency (loops.go): routing changes to the durable queues, each
// queue's work, reservation expiry every interval and the sweep of expired
// items every minute. On DynamoDB with SQS queues configured, the stream
// pipeline runs beside the expiry loop (queues.go). It returns when ctx
// ends.
func (a *App) RunBackground(ctx context.Context, interval time.Duration) {
	if s, q, err := a.EmbeddedQueue(); err == nil {
		a.runEmbedded(ctx, s, q, interval)
		return
	}
	if len(a.Config.QueueURLs) > 0 {
		go a.runStreamPipeline(ctx, interval)
	}
	a.repeat(ctx, "expire reservations", interval, a.expirePass)
}

// expirePass is one pass of reservation expiry for a background loop.
func (a *App) expirePass(ctx context.Context) (bool, error) {
	run, err := a.ExpireReservations(ctx)
	if run.Expired > 0 {
		a.Log.InfoContext(ctx, "expired reservations", "count", run.Expired)
	}
	return false, err
}
