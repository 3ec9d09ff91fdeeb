// Package jobrun runs the service's record-by-record jobs (bulk operations,
// sync jobs) from a queue. A job is one store item that holds every
// record's result; each result is written with its effects in one
// transaction conditioned on the job's version, so the job item alone says
// which effects are confirmed: a worker that dies between records resumes
// at the first pending one and never repeats one.
//
// The package holds what every such worker shares: the run loop, the
// versioned write that also starts and completes the job, the bounded
// attempts with backoff, and the continuation of a paused job by a fresh
// message. What a record means (its checks, its effects, its verdict)
// stays in the job's own package, in the step it passes to Handle.
package jobrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Job is a pointer to a job record of type J. Job types embed a Header
// and their Rows, which give most of it; each kind says how its job ends.
type Job[J any] interface {
	*J
	// Head is the job's header (from the embedded Header).
	Head() *Header
	// Len, Next and Attempts read the records (from the embedded Rows).
	Len() int
	Next() int
	Attempts(i int) *int
	// Clone copies the job deeply enough to change its records.
	Clone() J
	// Complete gives a job without pending records its final status at
	// now and returns the event that says so.
	Complete(now time.Time) event.Event
	// Stop ends the job at record i for cause: the records left are given
	// a result that says so. Earlier results stay.
	Stop(i int, cause *errs.Error)
}

// State is a job as last read or written, with its stored version.
type State[J any] struct {
	Job     J
	Version int64
}

// Step settles record i of the job in s (a verdict written with Write, a
// retry, or a stop), or returns an error the run ends with.
type Step[J any] func(ctx context.Context, s *State[J], i int) error

// Runner runs the jobs of one kind.
type Runner[J any, P Job[J]] struct {
	Kind  Kind
	Store store.Store
	Clock clock.Clock
	// Log takes the runner's lines; nil discards them.
	Log *slog.Logger
	// Queue, when set, takes the job's continuation after a pause (see
	// Handle); without it a pause is a retry of the message itself.
	Queue queue.Sender
	// Recheck, when set, verifies the job's original credential again
	// before each record: a verdict on it stops the job, a failure of the
	// service costs an attempt.
	Recheck func(ctx context.Context, j J) error
}

func (r Runner[J, P]) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Load reads a job of the runner's kind and its version; a missing job is
// errs.CodeNotFound.
func (r Runner[J, P]) Load(ctx context.Context, vendorID, id string) (J, int64, error) {
	return Load[J](ctx, r.Store, r.Kind, vendorID, id)
}

// ErrReload says the job changed under the worker (another delivery of the
// same message, or a write whose outcome was not reported); Write has
// already read it again, and the run goes on from there.
var ErrReload = errors.New("jobrun: the job changed; reload it")

// later is a pause with progress kept: the job goes on after the delay.
type later struct {
	after time.Duration
	err   error
}

func (l *later) Error() string { return fmt.Sprintf("continue after %s: %v", l.after, l.err) }
func (l *later) Unwrap() error { return l.err }

// Later is the error a step returns to pause the job (pacing, or a failed
// attempt already counted on the job): it goes on after the delay.
func Later(after time.Duration, err error) error { return &later{after: after, err: err} }

// Transient tells failures of the service, worth another attempt, from
// verdicts about a record or a credential.
func Transient(err error) bool {
	switch errs.As(err).Kind {
	case errs.Unavailable, errs.Internal:
		return true
	}
	return false
}

// Backoff is the wait before attempt n+1: 2^n seconds, at most a minute.
func Backoff(n int) time.Duration {
	return min(time.Duration(1<<min(n, 6))*time.Second, time.Minute)
}

// Handle runs the job the message names until it ends
// (nil: the message is done) or pauses. A pause sends a fresh message with
// the same body, delayed, and completes this one: pauses are normal (a
// batch larger than the rate window, a counted attempt), and a retry of the
// same message would count towards the queue's maximum receives and could
// dead-letter a healthy job; attempts are bounded on the job instead. When
// the continuation cannot be sent, the message is retried after the delay.
func (r Runner[J, P]) Handle(ctx context.Context, m queue.Message, step Step[J]) error {
	vendorID, id, err := r.Kind.Parse(m)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Kind.Name, err)
	}
	err = r.run(ctx, vendorID, id, step)
	var l *later
	if !errors.As(err, &l) {
		return err
	}
	if r.Queue != nil {
		serr := r.Queue.Send(ctx, r.Kind.Queue, m.Body, l.after)
		if serr == nil {
			return nil
		}
		r.log().ErrorContext(ctx, "job continuation not sent; retrying the message", "queue", r.Kind.Queue, "job_id", id, "error", serr)
	}
	return queue.RetryAfter(l.after, l.err)
}

// run works one job, as Handle does.
func (r Runner[J, P]) run(ctx context.Context, vendorID, id string, step Step[J]) error {
	j, ver, err := r.Load(ctx, vendorID, id)
	if errs.Is(err, errs.CodeNotFound) {
		r.log().WarnContext(ctx, "job gone", "queue", r.Kind.Queue, "vendor_id", vendorID, "job_id", id)
		return nil
	}
	if err != nil {
		return err
	}
	s := &State[J]{Job: j, Version: ver}
	// Each step settles a record or stops; a reload is rare (a concurrent
	// delivery), so the bound only guards against a loop.
	for steps := 0; steps < 4*P(&s.Job).Len()+8; steps++ {
		if P(&s.Job).Head().Finished() {
			return nil
		}
		i := P(&s.Job).Next()
		if i < 0 {
			// Unreachable in practice: the last result is written with the
			// final status. Finish a job left otherwise.
			err = r.Write(ctx, s, func(P) {}, nil)
		} else {
			err = r.settle(ctx, s, i, step)
		}
		if errors.Is(err, ErrReload) {
			continue // Write left the current job in s
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("jobrun: job %s did not settle", id)
}

// settle runs step on record i, unless the record spent its attempts or
// the job's credential no longer holds.
func (r Runner[J, P]) settle(ctx context.Context, s *State[J], i int, step Step[J]) error {
	if n := *P(&s.Job).Attempts(i); r.Kind.MaxAttempts > 0 && n >= r.Kind.MaxAttempts {
		return r.Stop(ctx, s, i, errs.Ef(errs.CodeServiceUnavailable, r.Kind.Exhausted, n))
	}
	if r.Recheck != nil {
		if err := r.Recheck(ctx, s.Job); err != nil {
			if Transient(err) {
				return r.Retry(ctx, s, i, err)
			}
			return r.Stop(ctx, s, i, err)
		}
	}
	return step(ctx, s, i)
}

// Write applies change to a copy of the job and stores it with ops in one
// transaction conditioned on the job's version; on success s holds the
// stored job. The first write starts the job; a write that leaves no record
// pending completes it, with its event, in the same transaction. A job that
// moved meanwhile is ErrReload (s then holds it as it is now); any other
// failure is returned as is, for the caller to tell a lost race on its own
// conditions from a failure of the store.
func (r Runner[J, P]) Write(ctx context.Context, s *State[J], change func(P), ops []store.Op) error {
	n := P(&s.Job).Clone()
	change(P(&n))
	now := r.Clock.Now()
	P(&n).Head().Start(now)
	if P(&n).Next() < 0 {
		ev, err := event.Op(P(&n).Complete(now))
		if err != nil {
			return err
		}
		ops = append(ops, ev)
	}
	it, err := r.Kind.Item(*P(&n).Head(), n, s.Version+1)
	if err != nil {
		return err
	}
	jobAt := len(ops)
	err = r.Store.Transact(ctx, append(ops, store.Put(it, store.IfVersion(s.Version)))...)
	if ce, ok := store.AsCondition(err); ok && (ce.Has(jobAt) || len(ops) == 0) {
		// Which condition failed is not always reported: read the job to
		// tell a moved job from a lost race on the caller's conditions.
		vendorID, id := P(&s.Job).Head().Ref()
		cur, curVer, lerr := r.Load(ctx, vendorID, id)
		if lerr != nil {
			return lerr
		}
		if curVer != s.Version {
			s.Job, s.Version = cur, curVer
			return ErrReload
		}
	}
	if err != nil {
		return err
	}
	s.Job, s.Version = n, s.Version+1
	return nil
}

// Retry counts a failed attempt of record i and pauses the job for a
// backoff. Counting is a write conditioned on the job's version: when it
// loses, the job moved (possibly by the very transaction that reported
// failure), so the run reads it again at once. When it cannot be counted,
// the message is retried and the queue's receive limit bounds it.
func (r Runner[J, P]) Retry(ctx context.Context, s *State[J], i int, cause error) error {
	vendorID, id := P(&s.Job).Head().Ref()
	n := *P(&s.Job).Attempts(i)
	r.log().ErrorContext(ctx, "job record attempt failed", "queue", r.Kind.Queue, "vendor_id", vendorID, "job_id", id,
		"record", i, "attempt", n+1, "error", cause)
	err := r.Write(ctx, s, func(j P) { *j.Attempts(i)++ }, nil)
	switch {
	case errors.Is(err, ErrReload):
		return err
	case err != nil:
		return queue.RetryAfter(Backoff(n+1), cause)
	}
	return Later(Backoff(n+1), cause)
}

// Stop ends the job at record i for cause (see Job.Stop) and writes it.
func (r Runner[J, P]) Stop(ctx context.Context, s *State[J], i int, cause error) error {
	vendorID, id := P(&s.Job).Head().Ref()
	e := errs.As(cause)
	r.log().WarnContext(ctx, r.Kind.Name+" stopped", "queue", r.Kind.Queue, "vendor_id", vendorID, "job_id", id,
		"record", i, "code", e.Code, "error", cause)
	return r.Write(ctx, s, func(j P) { j.Stop(i, e) }, nil)
}
