// Package bulk holds bulk operations: a batch of up to 25 inventory
// adjustments that the API accepts at once (202) and a worker applies
// afterwards, record by record, in submitted order. It holds the job
// record, the submission's rules, the view the API shows, the pipeline rule
// that starts the work and the worker that does it. It speaks neither HTTP
// nor a queue transport.
//
// The job is one store item. Each record's effect (the adjustment's atomic
// add and its event) and the record's result are written in one
// transaction conditioned on the job's version, so the job item alone says
// which effects are confirmed: a worker that dies between records resumes
// at the first pending record and never repeats one.
package bulk

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/jobrun"
	"github.com/moku/sellerapi/shared/store"
)

// KindInventoryAdjustment is the only kind of bulk operation.
const KindInventoryAdjustment = "inventory_adjustment"

// Job statuses. A job is queued on acceptance, running once the worker
// wrote its first result, and ends completed (every record succeeded),
// completed_with_errors (every record has a definitive result, some
// succeeded and some failed) or failed (nothing succeeded, or the run
// stopped or exhausted its attempts before every record had one).
const (
	StatusQueued              = jobrun.StatusQueued
	StatusRunning             = jobrun.StatusRunning
	StatusCompleted           = "completed"
	StatusCompletedWithErrors = "completed_with_errors"
	StatusFailed              = "failed"
)

// Record statuses.
const (
	RecordPending      = jobrun.Pending
	RecordSucceeded    = "succeeded"
	RecordFailed       = "failed"
	RecordUnknown      = "unknown"
	RecordNotAttempted = "not_attempted"
)

// Limits of a submission.
const (
	MinRecords = 1
	MaxRecords = 25
	// MaxBody is the largest request body, in bytes (64 KiB).
	MaxBody = 64 << 10
	// MaxKeyLength bounds a record's key, in characters.
	MaxKeyLength = 128
	// MaxItemIDLength is the longest inventory item id (the path rule).
	MaxItemIDLength = 1000
)

// Retention is how long a finished job is kept: the contract's 30 days
// after completion, plus a day of margin.
const Retention = 31 * 24 * time.Hour

// IDPrefix starts every bulk operation id (bop_ and 26 characters, see ids.Issued).
const IDPrefix = "bop"

// Body is a record's adjustment, as submitted.
type Body struct {
	TargetOnHand          int64   `json:"target_on_hand"`
	ExpectedVersion       int64   `json:"expected_version"`
	AuthorityConnectionID *string `json:"authority_connection_id"`
}

func (b Body) adjustment() inventory.Adjustment {
	return inventory.Adjustment{TargetOnHand: b.TargetOnHand, ExpectedVersion: b.ExpectedVersion, Authority: b.AuthorityConnectionID}
}

// Record is one submitted adjustment and its result.
type Record struct {
	Result
	Body Body `json:"body"`
	// Attempts counts tries of this record that failed for reasons of the
	// service (store or credential state that could not be read); after
	// MaxAttempts the record is given up as unknown.
	Attempts int `json:"attempts"`
}

// Progress is the record's status and count of attempts.
func (r *Record) Progress() (*string, *int) { return &r.Status, &r.Attempts }

// Records are a job's records.
type Records = jobrun.Rows[Record, *Record]

// Job is the stored record of a bulk operation.
type Job struct {
	jobrun.Header
	Kind string `json:"kind"`
	// TokenID is the credential that submitted the batch; every record is
	// applied on its behalf and only while it stays valid.
	TokenID string `json:"token_id"`
	Records `json:"records"`
}

// Counts are the records per status.
type Counts struct {
	Total        int `json:"total"`
	Succeeded    int `json:"succeeded"`
	Failed       int `json:"failed"`
	Pending      int `json:"pending"`
	Unknown      int `json:"unknown"`
	NotAttempted int `json:"not_attempted"`
}

// Result is a record as the API shows it.
type Result struct {
	Key             string          `json:"key"`
	InventoryItemID string          `json:"inventory_item_id"`
	Status          string          `json:"status"`
	Data            *inventory.Item `json:"data"`
	Code            *string         `json:"code"`
	Detail          *string         `json:"detail"`
}

// View is a bulk operation as the API shows it.
type View struct {
	ID          string     `json:"id"`
	VendorID    string     `json:"vendor_id"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Counts      Counts     `json:"counts"`
	Results     []Result   `json:"results"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// Counts tallies the records.
func (j Job) Counts() Counts {
	n := j.Tally()
	return Counts{Total: len(j.Records), Succeeded: n[RecordSucceeded], Failed: n[RecordFailed], Pending: n[RecordPending],
		Unknown: n[RecordUnknown], NotAttempted: n[RecordNotAttempted]}
}

// View returns the API representation.
func (j Job) View() View {
	v := View{ID: j.ID, VendorID: j.VendorID, Kind: j.Kind, Status: j.Status, Counts: j.Counts(),
		Results: make([]Result, len(j.Records)), CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, CompletedAt: j.CompletedAt}
	for i, r := range j.Records {
		v.Results[i] = r.Result
	}
	return v
}

// Complete gives the job its final status at now and returns the
// bulk_operation.completed event.
func (j *Job) Complete(now time.Time) event.Event {
	j.Status, j.CompletedAt = j.outcome(), &now
	return event.New(now, j.VendorID, event.BulkOperationCompleted, "bulk_operation", j.ID, map[string]any{"status": j.Status})
}

// outcome is the final status of a job whose records all have a result.
func (j Job) outcome() string {
	c := j.Counts()
	switch {
	case c.Unknown > 0 || c.NotAttempted > 0 || c.Succeeded == 0:
		return StatusFailed
	case c.Failed > 0:
		return StatusCompletedWithErrors
	}
	return StatusCompleted
}

// Stop ends the batch at record i: it becomes unknown with the cause's
// code, and every later record not_attempted.
func (j *Job) Stop(i int, e *errs.Error) {
	stopped := fmt.Sprintf("The batch stopped at record %q (%s) before this record; fix the cause and re-read versions before a new batch.", j.Records[i].Key, e.Code)
	j.Records[i].Status, j.Records[i].Code, j.Records[i].Detail = RecordUnknown, new(string(e.Code)), new(e.Detail)
	for k := i + 1; k < len(j.Records); k++ {
		j.Records[k].Status, j.Records[k].Code, j.Records[k].Detail = RecordNotAttempted, new(string(errs.CodeBulkStopped)), new(stopped)
	}
}

// Clone copies the job deeply enough to change its records.
func (j Job) Clone() Job {
	j.Records = j.Records.Clone()
	return j
}

// Submission is a parsed, structurally valid batch.
type Submission struct {
	Records []Record
}

var kindRule = fields.StringRule{OneOf: []string{KindInventoryAdjustment}}

// Parse reads a submission body. Any structural error rejects the whole
// batch and names the field, e.g. "items[3].body.target_on_hand: must be
// from 0 to 1000000000".
func Parse(body []byte) (Submission, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Submission{}, err
	}
	o.String("kind", fields.Required, kindRule)
	items := o.Objects("items", fields.Required, MaxRecords)
	if o.Err() == nil && len(items) < MinRecords {
		o.Fail("items", "must have at least %d item", MinRecords)
	}
	var sub Submission
	seen := map[string]int{}
	for i, it := range items {
		r := Record{Result: Result{Status: RecordPending}}
		r.Key = it.String("key", fields.Required, fields.StringRule{Min: 1, Max: MaxKeyLength})
		r.InventoryItemID = it.String("inventory_item_id", fields.Required, fields.StringRule{Min: 1, Max: MaxItemIDLength})
		if raw := it.Raw("body"); raw == nil {
			it.Fail("body", "is required")
		} else if b, err := fields.Parse(raw, it.Name("body")); err != nil {
			it.Fail("body", "must be an object")
		} else {
			a := inventory.ReadAdjustment(b)
			it.Child(b)
			r.Body = Body{TargetOnHand: a.TargetOnHand, ExpectedVersion: a.ExpectedVersion, AuthorityConnectionID: a.Authority}
		}
		o.Child(it)
		if first, dup := seen[r.Key]; dup && o.Err() == nil {
			o.Fail(fmt.Sprintf("items[%d].key", i), "repeats the key of items[%d]; keys must be unique within a batch", first)
		}
		if o.Err() != nil {
			break
		}
		seen[r.Key] = i
		sub.Records = append(sub.Records, r)
	}
	if err := o.Err(); err != nil {
		return Submission{}, err
	}
	return sub, nil
}

// Service stores and reads bulk operations.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// PrepareCreate builds the job of a submission made with token tokenID and
// the operation that stores it; the caller commits it with its receipt.
func (s Service) PrepareCreate(vendorID, tokenID string, sub Submission) (store.Prepared[View], error) {
	j := Job{Header: kind.Header(vendorID, s.Clock.Now()), Kind: KindInventoryAdjustment, TokenID: tokenID, Records: slices.Clone(sub.Records)}
	put, err := kind.Insert(j.Header, j)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	return store.Prepared[View]{View: j.View(), Ops: []store.Op{put}}, nil
}

// Get reads a bulk operation.
func (s Service) Get(ctx context.Context, vendorID, id string) (View, error) {
	j, _, err := jobrun.Load[Job](ctx, s.Store, kind, vendorID, id)
	if err != nil {
		return View{}, err
	}
	return j.View(), nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
