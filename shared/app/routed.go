package app

import (
	"context"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/store"
)

// Routed are the sort-key prefixes of the items whose insertion starts
// background work: events (webhook fan-out, seller orders), replays,
// webhook recoveries, bulk operations and sync jobs. Every other change (products, stock, rate
// windows, receipts, updates and TTL deletions) routes nothing. The router
// shows its rules only these, locally and in AWS, where the stream-router
// mapping's event filter is built from the same list so that the other
// changes do not invoke it at all.
func Routed() []string {
	return []string{datamodel.EventPrefix, datamodel.ReplayPrefix, datamodel.RecoveryPrefix, datamodel.BulkPrefix, datamodel.SyncJobPrefix}
}

// MarkPending is the deployed DynamoDB store's transaction hook
// (dynamodb.WithTransactHook): every insert the router routes is written
// with its pending marker, in the same transaction, but an event no
// subscription could receive by the counts its request read
// (pipeline.Receivers) and no other rule routes (seller orders project
// theirs: sellerorder.Projected).
func MarkPending(now func() time.Time) func(context.Context, []store.Op) []store.Op {
	return pipeline.Pending{Prefixes: Routed(), Kept: sellerorder.Projected(), Now: now}.Mark
}

// router is the stream router over works' rules.
func router(works []Work, q queue.Sender) pipeline.Router {
	var rules []pipeline.Rule
	for _, w := range works {
		if w.Rule != nil {
			rules = append(rules, w.Rule)
		}
	}
	return pipeline.Router{Rules: rules, Queue: q, Inserted: Routed()}
}

// pending is the store of the router's markers (pipeline.Pending): the
// DynamoDB table, whose stream mapping can give up on a change (the wiring
// says so, WithPending); nil on the embedded store, whose change log keeps
// the router's position.
func (a *App) pending() store.Store {
	if a.pendingOf == nil {
		return nil
	}
	return a.pendingOf(a.Store)
}

// SweepUnrouted routes again what the stream did not route within grace
// (pipeline.SweepGrace but when an operator re-drives): the stream-router
// runs it on its schedule, the local server on DynamoDB every minute.
func (a *App) SweepUnrouted(ctx context.Context, q queue.Sender, grace time.Duration) (pipeline.Swept, error) {
	return a.sweepUnrouted(ctx, a.Router(q), grace)
}

// sweepUnrouted is SweepUnrouted with a router already built.
func (a *App) sweepUnrouted(ctx context.Context, r pipeline.Router, grace time.Duration) (pipeline.Swept, error) {
	run, err := r.Sweep(ctx, a.Clock.Now(), grace, pipeline.SweepLimit)
	if run.Routed+run.Gone > 0 || err != nil {
		a.Log.WarnContext(ctx, "routed changes the stream had not", "routed", run.Routed, "gone", run.Gone, "failed", run.Failed, "error", err)
	}
	return run, err
}
