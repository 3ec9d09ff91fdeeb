package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/vendor"
)

// MaxAttempts is how many tries a record gets when the service cannot
// complete it (its store or credential state cannot be read or written).
// The record is then given up as unknown and the batch stops.
const MaxAttempts = 5

// Message is the work item of one bulk operation on queue.BulkOperations.
type Message struct {
	VendorID string `json:"vendor_id"`
	ID       string `json:"bulk_operation_id"`
}

// Rule starts a job: the insert of a job item makes one message. Later
// writes of the job (its results) make none.
func Rule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, Prefix) {
		return nil, nil
	}
	vendorID, ok := strings.CutPrefix(c.Key.PK, vendor.Partition(""))
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(Message{VendorID: vendorID, ID: strings.TrimPrefix(c.Key.SK, Prefix)})
	if err != nil {
		return nil, err
	}
	return []pipeline.Outgoing{{Queue: queue.BulkOperations, Body: b}}, nil
}

// Worker applies the records of bulk operations.
type Worker struct {
	Store     store.Store
	Clock     clock.Clock
	Auth      auth.Service
	Limiter   ratelimit.Limiter
	Inventory inventory.Service
	Log       *slog.Logger
	// Queue, when set, takes the job's continuation after a pause (see
	// Handle); without it a pause is a retry of the message itself.
	Queue queue.Sender
}

// NewWorker builds a worker over st, spending each record from the
// vendor's allowance of writes per one-minute window and sending
// continuations to q (may be nil).
func NewWorker(st store.Store, c clock.Clock, writes int, q queue.Sender, log *slog.Logger) Worker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return Worker{
		Store:     st,
		Clock:     c,
		Auth:      auth.Service{Store: st, Clock: c},
		Limiter:   ratelimit.Limiter{Store: st, Clock: c, Writes: writes},
		Inventory: inventory.Service{Store: st, Clock: c, Authority: connection.Masters{Store: st}},
		Log:       log,
		Queue:     q,
	}
}

// later is a pause with progress kept: the vendor's window is spent, or a
// record's failed attempt was counted on the job. The job goes on after
// the delay.
type later struct {
	after time.Duration
	err   error
}

func (l *later) Error() string { return fmt.Sprintf("continue after %s: %v", l.after, l.err) }
func (l *later) Unwrap() error { return l.err }

// errReload says the job changed under the worker (another delivery of the
// same message, or a write whose outcome was not reported): read it again.
var errReload = errors.New("bulk: the job changed; reload it")

// Handle is the queue handler. It applies the job's pending records in
// order until the job ends (nil: the message is done) or cannot go on now:
// the vendor's write window is spent (pacing: go on when it resets), or a
// record met a failure of the service (go on after a backoff).
//
// A pause sends a fresh message for the rest of the job, delayed, and
// completes this one: pauses are normal for a batch larger than the
// window, and a retry of the same message would count towards the queue's
// maximum receives and could dead-letter a healthy job. Attempts are
// bounded on the job itself instead (MaxAttempts). When the continuation
// cannot be sent, or the failed attempt could not even be counted, the
// message is retried after the delay and does count.
func (w Worker) Handle(ctx context.Context, m queue.Message) error {
	var msg Message
	if err := json.Unmarshal(m.Body, &msg); err != nil || msg.VendorID == "" || msg.ID == "" {
		// Retried until the dead-letter queue, where operators see it.
		return fmt.Errorf("bulk: malformed message %s: %q", m.ID, m.Body)
	}
	err := w.run(ctx, msg.VendorID, msg.ID)
	var l *later
	if !errors.As(err, &l) {
		return err
	}
	if w.Queue != nil {
		serr := w.Queue.Send(ctx, queue.BulkOperations, m.Body, l.after)
		if serr == nil {
			return nil
		}
		w.Log.ErrorContext(ctx, "bulk continuation not sent; retrying the message", "bulk_operation_id", msg.ID, "error", serr)
	}
	return queue.RetryAfter(l.after, l.err)
}

// run works one job, as Handle does.
func (w Worker) run(ctx context.Context, vendorID, id string) error {
	j, ver, err := Load(ctx, w.Store, vendorID, id)
	if errs.Is(err, errs.CodeNotFound) {
		w.Log.WarnContext(ctx, "bulk operation gone", "vendor_id", vendorID, "bulk_operation_id", id)
		return nil
	}
	if err != nil {
		return err
	}
	// Each step settles a record or stops; a reload is rare (a concurrent
	// delivery), so the bound only guards against a loop.
	for steps := 0; steps < 4*len(j.Records)+8; steps++ {
		if j.Finished() {
			return nil
		}
		i := j.next()
		if i < 0 {
			// Unreachable in practice: the last result is written with the
			// final status. Finish a job left otherwise.
			err = w.write(ctx, &j, &ver, func(n *Job) {}, nil)
		} else {
			err = w.step(ctx, &j, &ver, i)
		}
		if errors.Is(err, errReload) {
			continue // write left the current job in j
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("bulk: job %s did not settle", id)
}

// step settles record i: re-verify the credential, spend a write of the
// vendor's window, apply the adjustment with all the checks of a single
// one, and store the result with the effect.
func (w Worker) step(ctx context.Context, j *Job, ver *int64, i int) error {
	r := j.Records[i]
	if r.Attempts >= MaxAttempts {
		return w.stop(ctx, j, ver, i, errs.Ef(errs.CodeServiceUnavailable,
			"the adjustment could not be confirmed after %d attempts; reconcile the item's current inventory before adjusting it again", r.Attempts))
	}
	if err := w.recheck(ctx, *j); err != nil {
		if transient(err) {
			return w.retry(ctx, j, ver, i, err)
		}
		return w.stop(ctx, j, ver, i, err)
	}
	if _, err := w.Limiter.Take(ctx, j.VendorID, ratelimit.Write); err != nil {
		if e := errs.As(err); e.Kind == errs.RateLimited {
			// Pacing, not failure: resume when the window resets.
			return &later{after: time.Duration(e.RetryAfter) * time.Second, err: err}
		}
		return w.retry(ctx, j, ver, i, err)
	}
	adj := r.Body.adjustment()
	jobID, recordKey := j.ID, r.Key
	adj.Cause = &stockeffect.Cause{Type: stockeffect.CauseBulkOperation, ID: &jobID, Action: stockeffect.ActionAdjusted, RecordKey: &recordKey}
	item, ops, conflict, err := w.Inventory.PrepareAdjust(ctx, j.VendorID, r.InventoryItemID, adj)
	if err != nil {
		if transient(err) {
			return w.retry(ctx, j, ver, i, err)
		}
		return w.reject(ctx, j, ver, i, err)
	}
	err = w.write(ctx, j, ver, func(n *Job) {
		n.Records[i].Status, n.Records[i].Data = RecordSucceeded, &item
	}, ops)
	if err == nil || errors.Is(err, errReload) {
		return err
	}
	if ce, ok := store.AsCondition(err); ok {
		// The job did not change (write checked that), so the adjustment's
		// own condition failed: a concurrent change won the item.
		cerr := conflict(ce)
		if transient(cerr) {
			return w.retry(ctx, j, ver, i, cerr)
		}
		return w.reject(ctx, j, ver, i, cerr)
	}
	// The transaction failed without a verdict. It either committed or not,
	// effect and result together: the conditioned write of the attempt
	// count tells which (a committed one moved the job's version).
	return w.retry(ctx, j, ver, i, err)
}

// recheck verifies the job's original credential again: valid, unexpired,
// unrevoked, with both scopes, and still owned by the vendor's owner.
func (w Worker) recheck(ctx context.Context, j Job) error {
	p, err := w.Auth.Recheck(ctx, j.TokenID, auth.JobsWrite, auth.InventoryWrite)
	if err != nil {
		return err
	}
	if p.Vendor.ID != j.VendorID {
		return errs.E(errs.CodeUnauthenticated, "the credential is no longer granted this vendor")
	}
	return nil
}

// transient tells failures of the service (worth another attempt) from
// verdicts about the record or the credential.
func transient(err error) bool {
	switch errs.As(err).Kind {
	case errs.Unavailable, errs.Internal:
		return true
	}
	return false
}

// reject stores record i as failed, with the verdict's code and detail.
func (w Worker) reject(ctx context.Context, j *Job, ver *int64, i int, cause error) error {
	e := errs.As(cause)
	return w.write(ctx, j, ver, func(n *Job) {
		n.Records[i].Status, n.Records[i].Code, n.Records[i].Detail = RecordFailed, ptr(string(e.Code)), ptr(e.Detail)
	}, nil)
}

// stop ends the batch at record i: it becomes unknown with the cause's
// code, and every later record not_attempted. Earlier effects stay.
func (w Worker) stop(ctx context.Context, j *Job, ver *int64, i int, cause error) error {
	e := errs.As(cause)
	w.Log.WarnContext(ctx, "bulk operation stopped", "vendor_id", j.VendorID, "bulk_operation_id", j.ID,
		"record", i, "code", e.Code, "error", cause)
	stopped := fmt.Sprintf("The batch stopped at record %q (%s) before this record; fix the cause and re-read versions before a new batch.", j.Records[i].Key, e.Code)
	return w.write(ctx, j, ver, func(n *Job) {
		n.Records[i].Status, n.Records[i].Code, n.Records[i].Detail = RecordUnknown, ptr(string(e.Code)), ptr(e.Detail)
		for k := i + 1; k < len(n.Records); k++ {
			n.Records[k].Status, n.Records[k].Code, n.Records[k].Detail = RecordNotAttempted, ptr(string(errs.CodeBulkStopped)), ptr(stopped)
		}
	}, nil)
}

// retry counts a failed attempt of record i and asks the queue to try
// again after a backoff. Counting is a write conditioned on the job's
// version: when it loses, the job moved (possibly by the very transaction
// that reported failure), so the worker reads it again at once.
func (w Worker) retry(ctx context.Context, j *Job, ver *int64, i int, cause error) error {
	w.Log.ErrorContext(ctx, "bulk record attempt failed", "vendor_id", j.VendorID, "bulk_operation_id", j.ID,
		"record", i, "attempt", j.Records[i].Attempts+1, "error", cause)
	err := w.write(ctx, j, ver, func(n *Job) { n.Records[i].Attempts++ }, nil)
	switch {
	case errors.Is(err, errReload):
		return err
	case err != nil:
		// Not counted: let the queue's receive limit bound this instead.
		return queue.RetryAfter(backoff(j.Records[i].Attempts+1), cause)
	}
	return &later{after: backoff(j.Records[i].Attempts), err: cause}
}

// backoff is the wait before attempt n+1: 2^n seconds, at most a minute.
func backoff(n int) time.Duration {
	return min(time.Duration(1<<min(n, 6))*time.Second, time.Minute)
}

// write applies change to a copy of the job and stores it with ops in one
// transaction conditioned on the job's version; on success j and ver are
// the stored job. The first write marks the job running; a write that
// leaves no record pending ends it, with its final status, its expiry and
// the bulk_operation.completed event, in the same transaction. A job that
// moved meanwhile is errReload; any other failure is returned as is.
func (w Worker) write(ctx context.Context, j *Job, ver *int64, change func(*Job), ops []store.Op) error {
	n := j.clone()
	change(&n)
	now := w.Clock.Now()
	if n.StartedAt == nil {
		n.StartedAt, n.Status = &now, StatusRunning
	}
	if n.next() < 0 {
		n.Status, n.CompletedAt = n.outcome(), &now
		ev, err := event.Op(event.New(now, n.VendorID, event.BulkOperationCompleted, "bulk_operation", n.ID,
			map[string]any{"status": n.Status}))
		if err != nil {
			return err
		}
		ops = append(ops, ev)
	}
	it, err := n.item(*ver + 1)
	if err != nil {
		return err
	}
	jobAt := len(ops)
	err = w.Store.Transact(ctx, append(ops, store.Put(it, store.IfVersion(*ver)))...)
	if ce, ok := store.AsCondition(err); ok && (ce.Has(jobAt) || len(ops) == 0) {
		// Which condition failed is not always reported: read the job to
		// tell a moved job from a lost race on the item.
		cur, curVer, lerr := Load(ctx, w.Store, j.VendorID, j.ID)
		if lerr != nil {
			return lerr
		}
		if curVer != *ver {
			*j, *ver = cur, curVer
			return errReload
		}
	}
	if err != nil {
		return err
	}
	*j, *ver = n, *ver+1
	return nil
}

func ptr[T any](v T) *T { return &v }
