package bulk

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/jobrun"
	"github.com/moku/sellerapi/shared/jobstart"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
)

// MaxAttempts is how many tries a record gets when the service cannot
// complete it (its store or credential state cannot be read or written).
// The record is then given up as unknown and the batch stops.
const MaxAttempts = 5

// kind is how bulk operations are named, stored, queued, started and
// given up.
var kind = jobrun.Kind{Name: "bulk operation", IDPrefix: IDPrefix, Key: datamodel.BulkKey, Retention: Retention,
	Start:       jobstart.Start{Prefix: datamodel.BulkPrefix, Queue: queue.BulkOperations, IDField: "bulk_operation_id"},
	MaxAttempts: MaxAttempts,
	Exhausted:   "the adjustment could not be confirmed after %d attempts; reconcile the item's current inventory before adjusting it again"}

// Rule starts a job: the insert of a job item makes one message.
func Rule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) { return kind.Rule(c) }

// Worker applies the records of bulk operations.
type Worker struct {
	Limiter   ratelimit.Limiter
	Inventory inventory.Service
	jobs      jobrun.Runner[Job, *Job]
}

// Services are the services a worker calls, built by the process's root
// (app.NewServices).
type Services struct {
	// Limiter spends each record from the vendor's allowance of writes
	// per one-minute window (its Writes).
	Limiter   ratelimit.Limiter
	Inventory inventory.Service
	// Tokens rechecks the job's credential before each record.
	Tokens auth.Service
}

// NewWorker builds a worker calling svc, keeping its jobs in st and
// sending continuations to q (may be nil).
func NewWorker(svc Services, st store.Store, c clock.Clock, q queue.Sender, log *slog.Logger) Worker {
	tokens := svc.Tokens
	return Worker{
		Limiter:   svc.Limiter,
		Inventory: svc.Inventory,
		jobs: jobrun.Runner[Job, *Job]{Kind: kind, Store: st, Clock: c, Log: log, Queue: q,
			// The job's original credential: valid, unexpired, unrevoked,
			// with both scopes, and still owned by the vendor's owner.
			Recheck: func(ctx context.Context, j Job) error {
				return tokens.RecheckFor(ctx, j.VendorID, j.TokenID, auth.JobsWrite, auth.InventoryWrite)
			}},
	}
}

// state is a job as the worker last read or wrote it.
type state = jobrun.State[Job]

// Handle is the queue handler. It applies the job's pending records in
// order until the job ends (nil: the message is done) or cannot go on now:
// the vendor's write window is spent (pacing: go on when it resets), or a
// record met a failure of the service (go on after a backoff); see
// jobrun.Runner.Handle for how a pause continues.
func (w Worker) Handle(ctx context.Context, m queue.Message) error {
	return w.jobs.Handle(ctx, m, w.step)
}

// step settles record i once the runner rechecked the credential: spend a
// write of the vendor's window, apply the adjustment with all the checks
// of a single one, and store the result with the effect.
func (w Worker) step(ctx context.Context, s *state, i int) error {
	j := &s.Job
	r := j.Records[i]
	if _, err := w.Limiter.Take(ctx, j.VendorID, ratelimit.Write); err != nil {
		if e := errs.As(err); e.Kind == errs.RateLimited {
			// Pacing, not failure: resume when the window resets.
			return jobrun.Later(time.Duration(e.RetryAfter)*time.Second, err)
		}
		return w.jobs.Retry(ctx, s, i, err)
	}
	adj := r.Body.adjustment()
	jobID, recordKey := j.ID, r.Key
	adj.Cause = &stockeffect.Cause{Type: stockeffect.CauseBulkOperation, ID: &jobID, Action: stockeffect.ActionAdjusted, RecordKey: &recordKey}
	adjusted, err := w.Inventory.PrepareAdjust(ctx, j.VendorID, r.InventoryItemID, adj)
	if err != nil {
		if jobrun.Transient(err) {
			return w.jobs.Retry(ctx, s, i, err)
		}
		return w.reject(ctx, s, i, err)
	}
	err = w.jobs.Write(ctx, s, func(n *Job) {
		n.Records[i].Status, n.Records[i].Data = RecordSucceeded, &adjusted.View
	}, adjusted.Ops)
	if err == nil || errors.Is(err, jobrun.ErrReload) {
		return err
	}
	if ce, ok := store.AsCondition(err); ok {
		// The job did not change (write checked that), so the adjustment's
		// own condition failed: a concurrent change won the item.
		cerr := adjusted.Explain(ce)
		if jobrun.Transient(cerr) || errors.Is(cerr, idempotency.ErrRetry) {
			// A fault, or the Stock Pool changed hands: decide it again.
			return w.jobs.Retry(ctx, s, i, cerr)
		}
		return w.reject(ctx, s, i, cerr)
	}
	// The transaction failed without a verdict. It either committed or not,
	// effect and result together: the conditioned write of the attempt
	// count tells which (a committed one moved the job's version).
	return w.jobs.Retry(ctx, s, i, err)
}

// reject stores record i as failed, with the verdict's code and detail.
// A record that claimed a connection which does not master the Stock Pool
// is recorded as that connection's conflict, as a single adjustment's
// refusal is (inventory.Service.Fence), and its detail names it.
func (w Worker) reject(ctx context.Context, s *state, i int, cause error) error {
	r := s.Job.Records[i]
	cause = w.Inventory.Fence(ctx, s.Job.VendorID, r.InventoryItemID, r.Body.adjustment(),
		conflict.Source{Type: conflict.SourceBulkOperation, ID: s.Job.ID}, cause)
	e := errs.As(cause)
	return w.jobs.Write(ctx, s, func(n *Job) {
		n.Records[i].Status, n.Records[i].Code, n.Records[i].Detail = RecordFailed, new(string(e.Code)), new(e.Detail)
	}, nil)
}
