// Package syncjob holds sync jobs: a connector reports what one
// connection's channel holds (stock counts, prices, titles) and the service
// compares each report with its source of truth, the vendor authority. It
// holds the job record, the submission's rules, the view the API shows, the
// pipeline rule that starts the work and the worker that does it. It speaks
// neither HTTP nor a queue transport.
//
// A report of a domain the connection masters moves the service (stock
// only: on_hand follows the channel with a stock effect) or opens a
// conflict; a report of a domain the connection does not master is the
// channel's staleness, answered with the service's value. Each item's
// verdict is written in one transaction with the job, conditioned on the
// job's version and on the state it was decided on, so a worker that dies
// resumes at the first pending item and never repeats an effect.
package syncjob

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/idempotency"

	"github.com/moku/sellerapi/shared/jobrun"
	"github.com/moku/sellerapi/shared/store"
)

// Kinds of sync job: the domain the connector reports on.
const (
	KindInventory = "inventory"
	KindPrice     = "price"
	KindCatalog   = "catalog"
)

// Kinds lists every kind.
func Kinds() []string { return []string{KindInventory, KindPrice, KindCatalog} }

// DomainScope is the scope of the domain a job of kind may write, which a
// token needs to start it: inventory.write for stock, products.write for
// prices and the catalog.
func DomainScope(kind string) auth.Scope {
	if kind == KindInventory {
		return auth.InventoryWrite
	}
	return auth.ProductsWrite
}

// Job statuses: queued on acceptance, running once the worker wrote its
// first verdict, then completed (every item has a verdict) or failed (the
// job stopped before some items).
const (
	StatusQueued    = jobrun.StatusQueued
	StatusRunning   = jobrun.StatusRunning
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Statuses lists the job statuses.
func Statuses() []string {
	return []string{StatusQueued, StatusRunning, StatusCompleted, StatusFailed}
}

// Item statuses.
const (
	ItemPending      = jobrun.Pending
	ItemInSync       = "in_sync"
	ItemUpdated      = "updated"
	ItemChannelStale = "channel_stale"
	ItemConflict     = "conflict"
	ItemFailed       = "failed"
	ItemNotAttempted = "not_attempted"
)

// Who started a job.
const (
	StartedByToken   = "token"
	StartedByPairing = "store_pairing"
)

// Limits of a submission.
const (
	MinItems = 1
	MaxItems = 100
	// MaxBody is the largest request body, in bytes (128 KiB: 100 catalog
	// items with 120-character names fit).
	MaxBody = 128 << 10
	// MaxIDLength bounds a resource id, as the path rules do.
	MaxIDLength = 1000
	// MaxName is the longest product name, as the catalog's rule.
	MaxName = 120
)

// Retention is how long a finished job is kept: 30 days after completion,
// plus a day of margin, like bulk operations.
const Retention = 31 * 24 * time.Hour

// IDPrefix starts every sync job id (syn_ and 26 characters, see ids.Issued).
const IDPrefix = "syn"

// Resource is what an item reports on: an inventory item or a product.
type Resource = conflict.Resource

// Value holds compared fields; only those of the item's kind are set.
type Value struct {
	OnHand        *int64  `json:"on_hand,omitempty"`
	Reserved      *int64  `json:"reserved,omitempty"`
	Available     *int64  `json:"available,omitempty"`
	Price         *int64  `json:"price,omitempty"`
	Name          *string `json:"name,omitempty"`
	CatalogStatus *string `json:"catalog_status,omitempty"`
}

// Item is one reported resource and its verdict.
type Item struct {
	ItemView
	// Attempts counts tries of this item that failed for reasons of the
	// service; after MaxAttempts the job stops.
	Attempts int `json:"attempts"`
}

// Progress is the item's status and count of attempts.
func (it *Item) Progress() (*string, *int) { return &it.Status, &it.Attempts }

// Items are a job's items.
type Items = jobrun.Rows[Item, *Item]

// StartedBy is the credential that started a job: a token, or a store
// plugin's pairing.
type StartedBy struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Job is the stored record of a sync job.
type Job struct {
	jobrun.Header
	ConnectionID string    `json:"connection_id"`
	Kind         string    `json:"kind"`
	StartedBy    StartedBy `json:"started_by"`
	Items        `json:"items"`
}

// Counts are the items per status.
type Counts struct {
	Total        int `json:"total"`
	InSync       int `json:"in_sync"`
	Updated      int `json:"updated"`
	ChannelStale int `json:"channel_stale"`
	Conflicts    int `json:"conflicts"`
	Failed       int `json:"failed"`
	Pending      int `json:"pending"`
	NotAttempted int `json:"not_attempted"`
}

// ItemView is an item as the API shows it.
type ItemView struct {
	Resource      Resource `json:"resource"`
	VariationID   *string  `json:"variation_id"`
	Status        string   `json:"status"`
	ChannelValue  Value    `json:"channel_value"`
	ServiceValue  *Value   `json:"service_value"`
	ConflictID    *string  `json:"conflict_id"`
	StockEffectID *string  `json:"stock_effect_id"`
	Code          *string  `json:"code"`
	Detail        *string  `json:"detail"`
}

// View is a sync job as the API shows it.
type View struct {
	ID           string     `json:"id"`
	VendorID     string     `json:"vendor_id"`
	ConnectionID string     `json:"connection_id"`
	Kind         string     `json:"kind"`
	Status       string     `json:"status"`
	Counts       Counts     `json:"counts"`
	Items        []ItemView `json:"items"`
	StartedBy    StartedBy  `json:"started_by"`
	CreatedAt    time.Time  `json:"created_at"`
	StartedAt    *time.Time `json:"started_at"`
	CompletedAt  *time.Time `json:"completed_at"`
}

// Counts tallies the items.
func (j Job) Counts() Counts {
	n := j.Tally()
	return Counts{Total: len(j.Items), InSync: n[ItemInSync], Updated: n[ItemUpdated], ChannelStale: n[ItemChannelStale],
		Conflicts: n[ItemConflict], Failed: n[ItemFailed], Pending: n[ItemPending], NotAttempted: n[ItemNotAttempted]}
}

// View returns the API representation.
func (j Job) View() View {
	v := View{ID: j.ID, VendorID: j.VendorID, ConnectionID: j.ConnectionID, Kind: j.Kind, Status: j.Status, Counts: j.Counts(),
		Items: make([]ItemView, len(j.Items)), StartedBy: j.StartedBy, CreatedAt: j.CreatedAt, StartedAt: j.StartedAt, CompletedAt: j.CompletedAt}
	for i, it := range j.Items {
		v.Items[i] = it.ItemView
	}
	return v
}

// Complete gives the job its final status at now and returns the
// sync_job.completed event.
func (j *Job) Complete(now time.Time) event.Event {
	j.Status, j.CompletedAt = j.outcome(), &now
	return event.New(now, j.VendorID, event.SyncJobCompleted, "sync_job", j.ID,
		map[string]any{"connection_id": j.ConnectionID, "kind": j.Kind, "status": j.Status, "counts": j.Counts()})
}

// outcome is the final status of a job whose items all have a result: a
// stop leaves items not attempted and fails the job; failed items do not.
func (j Job) outcome() string {
	if j.Counts().NotAttempted > 0 {
		return StatusFailed
	}
	return StatusCompleted
}

// Stop ends the job at item i: it and every later pending item become
// not_attempted, naming the cause.
func (j *Job) Stop(i int, e *errs.Error) {
	detail := fmt.Sprintf("The job stopped at items[%d] (%s: %s); start a new job once the cause is fixed.", i, e.Code, e.Detail)
	for k := i; k < len(j.Items); k++ {
		if j.Items[k].Status == ItemPending {
			j.Items[k].Status, j.Items[k].Code, j.Items[k].Detail = ItemNotAttempted, new(string(errs.CodeSyncStopped)), new(detail)
		}
	}
}

// Clone copies the job deeply enough to change its items.
func (j Job) Clone() Job {
	j.Items = j.Items.Clone()
	return j
}

var (
	kindRule    = fields.StringRule{OneOf: Kinds()}
	idRule      = fields.StringRule{Min: 1, Max: MaxIDLength}
	connIDRule  = fields.ConnectionIDRule
	nameRule    = fields.StringRule{Min: 1, Max: MaxName, SingleLine: true}
	catalogRule = fields.StringRule{OneOf: []string{catalog.CatalogActive, catalog.CatalogArchived}}
)

// RoleOf is the connection's role for the domain a kind reports on.
func RoleOf(r connection.Roles, kind string) string {
	switch kind {
	case KindInventory:
		return r.Inventory
	case KindPrice:
		return r.BasePrice
	}
	return r.Catalog
}

// masterOf is the domain's master in the authority; nil is the service.
func masterOf(a connection.Authority, kind string) *string {
	switch kind {
	case KindInventory:
		return a.Inventory
	case KindPrice:
		return a.BasePrice
	}
	return a.Catalog
}

// domainName names a kind's domain in messages.
func domainName(kind string) string {
	if kind == KindPrice {
		return "base_price"
	}
	return kind
}

// Service stores and reads sync jobs.
type Service struct {
	Store store.Store
	Clock clock.Clock
	// Connections reads the connection a job is for.
	Connections connection.Service
}

// With is s, and the connection service it calls, reading and writing
// through st, a request's view of the store: the root builds the service
// once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store, s.Connections = st, s.Connections.With(st)
	return s
}

// syncJobErrors is how the package's errors name its records.
var syncJobErrors = errs.Record{Name: "sync job", Unreadable: "sync jobs could not be read"}

// PrepareCreate checks a submission against its connection and builds the
// job and the operations that store it, conditioned on the connection as
// read; the caller commits them with its receipt. Its Explain explains a lost
// race on the connection as worth another run.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, by StartedBy, sub Submission) (store.Prepared[View], error) {
	c, _, _, err := s.Connections.Get(ctx, vendorID, sub.ConnectionID)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if err := Admissible(c, sub.Kind); err != nil {
		return store.Prepared[View]{}, err
	}
	j := Job{Header: kind.Header(vendorID, s.Clock.Now()), ConnectionID: c.ID, Kind: sub.Kind, StartedBy: by, Items: slices.Clone(sub.Items)}
	put, err := kind.Insert(j.Header, j)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{put, store.Check(datamodel.ConnectionKey(vendorID, c.ID), store.IfVersion(c.Version))}
	lost := func(*store.ConditionError) error {
		return idempotency.Retry(errs.E(errs.CodeConflict, "the connection changed while the sync job was stored; retry"))
	}
	return store.Prepared[View]{View: j.View(), Ops: ops, Explain: lost}, nil
}

// Admissible tells whether connection c may sync kind: it is not
// disconnected and its role for the kind's domain is not disabled. Active
// and paused connections both sync (a paused one is reconciling).
func Admissible(c connection.Connection, kind string) error {
	if c.Status == connection.StatusDisconnected {
		return errs.E(errs.CodeConnectionState, "connection_id: a disconnected connection does not sync")
	}
	if RoleOf(c.Roles, kind) == connection.Disabled {
		return errs.Ef(errs.CodeSyncRoleDisabled, "the connection's %s role is disabled; it has nothing to sync for %s", domainName(kind), kind)
	}
	return nil
}

// Get reads a sync job; a non-empty connectionID hides the jobs of other
// connections (the plugin sees its own only).
func (s Service) Get(ctx context.Context, vendorID, connectionID, id string) (View, error) {
	j, _, err := jobrun.Load[Job](ctx, s.Store, kind, vendorID, id)
	if err != nil {
		return View{}, err
	}
	if connectionID != "" && j.ConnectionID != connectionID {
		return View{}, kind.NotFound()
	}
	return j.View(), nil
}

// Filter narrows a list; empty fields match everything.
type Filter struct{ ConnectionID, Kind, Status string }

func (f Filter) keep(j Job) bool {
	return (f.ConnectionID == "" || j.ConnectionID == f.ConnectionID) && (f.Kind == "" || j.Kind == f.Kind) &&
		(f.Status == "" || j.Status == f.Status)
}

// List reads a page of sync jobs, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.SyncJobPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	jobs, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.SyncJobKey(vendorID, "").PK, Prefix: datamodel.SyncJobPrefix, After: after}, limit, jobrun.Decode[Job], f.keep)
	if err != nil {
		return store.PageOf[View]{}, syncJobErrors.Unavailable(err)
	}
	return store.MapPage(jobs, Job.View), nil
}
