package syncjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/jobrun"
	"github.com/moku/sellerapi/shared/jobstart"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// MaxAttempts is how many tries an item gets when the service cannot
// decide it (its store or credential state cannot be read or written);
// the job then stops.
const MaxAttempts = 5

// MaxBatch is how many verdicts that write nothing but themselves are
// written together.
const MaxBatch = 25

// MaxRaces is how many times in a row an item is decided again because
// the state it was decided on moved before its write; past it the try
// counts as a failed attempt and the job continues after a backoff.
const MaxRaces = 20

// kind is how sync jobs are named, stored, queued, started and given up.
var kind = jobrun.Kind{Name: "sync job", IDPrefix: IDPrefix, Key: datamodel.SyncJobKey, Retention: Retention,
	Start:       jobstart.Start{Prefix: datamodel.SyncJobPrefix, Queue: queue.SyncJobs, IDField: "sync_job_id"},
	MaxAttempts: MaxAttempts, Exhausted: "the item could not be decided after %d attempts"}

// Rule starts a job: the insert of a job item makes one message.
func Rule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) { return kind.Rule(c) }

// Worker decides the items of sync jobs.
type Worker struct {
	Store     store.Store
	Clock     clock.Clock
	Pairings  pairing.Service
	Inventory inventory.Service
	Conflicts conflict.Service
	jobs      jobrun.Runner[Job, *Job]
}

// Services are the services a worker calls, built by the process's root
// (app.NewServices).
type Services struct {
	Pairings  pairing.Service
	Inventory inventory.Service
	Conflicts conflict.Service
	// Tokens rechecks the job's credential before each item.
	Tokens auth.Service
}

// NewWorker builds a worker calling svc, keeping its jobs in st and
// sending continuations to q (may be nil).
func NewWorker(svc Services, st store.Store, c clock.Clock, q queue.Sender, log *slog.Logger) Worker {
	w := Worker{Store: st, Clock: c, Pairings: svc.Pairings, Inventory: svc.Inventory, Conflicts: svc.Conflicts}
	w.jobs = jobrun.Runner[Job, *Job]{Kind: kind, Store: st, Clock: c, Log: log, Queue: q, Recheck: w.recheck(svc.Tokens)}
	return w
}

// errRace says the state an item was decided on moved before its write:
// decide it again.
var errRace = errors.New("syncjob: the state moved; decide again")

// progress is a job as the worker last read or wrote it.
type progress = jobrun.State[Job]

// Handle is the queue handler. It decides the job's pending items in order
// until the job ends (nil: the message is done) or an item met a failure
// of the service: the attempt is counted on the job and the job goes on
// after a backoff (see jobrun.Runner.Handle).
func (w Worker) Handle(ctx context.Context, m queue.Message) error {
	return w.jobs.Handle(ctx, m, w.step)
}

// step settles item i once the runner rechecked the credential: decide
// the item on the current state and write the verdict with what it
// changes, again while the state moves under it.
func (w Worker) step(ctx context.Context, s *progress, i int) error {
	var err error
	for race := 0; race < MaxRaces; race++ {
		err = w.settle(ctx, s, i)
		if !errors.Is(err, errRace) {
			return err
		}
	}
	return w.jobs.Retry(ctx, s, i, err)
}

// recheck verifies the job's original credential again. A token must be
// valid, unexpired, unrevoked, hold both scopes and still be the vendor
// owner's; a store plugin's pairing must still pass the operational gate
// for the job's connection.
func (w Worker) recheck(tokens auth.Service) func(context.Context, Job) error {
	return func(ctx context.Context, j Job) error {
		if j.StartedBy.Type == StartedByPairing {
			connID, err := w.Pairings.AuthorizeOperationalWrite(ctx, pairing.Principal{PairingID: j.StartedBy.ID, VendorID: j.VendorID})
			if err != nil {
				return err
			}
			if connID != j.ConnectionID {
				return errs.E(errs.CodePairingNotActive, "the pairing no longer acts for the job's connection")
			}
			return nil
		}
		// The scopes the job was admitted with, the domain's included: a
		// token that lost inventory.write (or products.write) meanwhile stops
		// the job.
		return tokens.RecheckFor(ctx, j.VendorID, j.StartedBy.ID, auth.JobsWrite, auth.ConnectionsWrite, DomainScope(j.Kind))
	}
}

// settle decides item i on the state as it is now and writes the verdict.
// A verdict that writes nothing but itself (in sync, stale, failed) is
// batched with the next pending items' verdicts of the same kind, up to
// MaxBatch, and written in one transaction under all their guards: most
// items of a reconciliation agree, and one write for many saves rewriting
// the job item for each.
func (w Worker) settle(ctx context.Context, s *progress, i int) error {
	v, err := w.decide(ctx, s.Job, i)
	if err != nil {
		return w.undecided(ctx, s, i, err)
	}
	batch := []decision{{i, v}}
	if !v.writes() {
		for k := i + 1; k < len(s.Job.Items) && len(batch) < MaxBatch && s.Job.Items[k].Status == ItemPending; k++ {
			vk, err := w.decide(ctx, s.Job, k)
			if err != nil || vk.writes() {
				break // decided again, on its own, by a later step
			}
			batch = append(batch, decision{k, vk})
		}
	}
	return w.decided(ctx, s, batch)
}

// stopping marks an error that ends the job rather than costing an attempt.
type stopping struct{ err error }

func (e stopping) Error() string { return e.err.Error() }
func (e stopping) Unwrap() error { return e.err }

// undecided handles an error met while deciding item i: a stop ends the
// job, a race is decided again by the caller, anything else is a failed
// attempt.
func (w Worker) undecided(ctx context.Context, s *progress, i int, err error) error {
	var stop stopping
	switch {
	case errors.As(err, &stop):
		return w.jobs.Stop(ctx, s, i, stop.err)
	case errors.Is(err, errRace):
		return err
	}
	return w.jobs.Retry(ctx, s, i, err)
}

// decision is an item's verdict, before it is written.
type decision struct {
	i int
	v verdict
}

// decided writes the verdicts of a batch with their operations, in one
// transaction under their guards merged (one condition per item of the
// store). A failed condition that is not the job's own means the state
// moved: the batch is decided again.
func (w Worker) decided(ctx context.Context, s *progress, batch []decision) error {
	var ops []store.Op
	gs := make([]guards, len(batch))
	for k, d := range batch {
		ops, gs[k] = append(ops, d.v.ops...), d.v.guards
	}
	merged, ok := mergeGuards(gs)
	if !ok {
		// The state moved between the batch's reads.
		return errRace
	}
	err := w.jobs.Write(ctx, s, func(n *Job) {
		for _, d := range batch {
			d.v.apply(&n.Items[d.i])
		}
	}, append(merged, ops...))
	if err == nil || errors.Is(err, jobrun.ErrReload) {
		return err
	}
	if store.IsCondition(err) {
		return fmt.Errorf("%w: %v", errRace, err)
	}
	// The transaction failed without a verdict: it either committed or
	// not, effects and verdicts together; the conditioned count of the
	// attempt tells which (a committed one moved the job's version).
	return w.jobs.Retry(ctx, s, batch[0].i, err)
}
