package conflict

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Draft is a conflict about to be opened.
type Draft struct {
	Type         string
	ConnectionID *string
	Resource     Resource
	// ServiceValue and ChannelValue are what each side holds, encoded as
	// JSON objects.
	ServiceValue any
	ChannelValue any
	Detail       string
	Source       Source
}

// Opened is a conflict being opened and the operations that store it.
type Opened struct {
	Conflict Conflict
	// Ops store the conflict, its open-index item and its event. They do
	// not count it on the connection: a caller that writes the connection
	// in the same transaction adds CountDelta to that write (one item, one
	// action), any other caller appends Count.
	Ops []store.Op
}

// CountDelta is what opening (+1) or closing (-1) a conflict adds to its
// connection's counter.
func CountDelta(n int64) map[string]int64 { return map[string]int64{datamodel.OpenConflictsAttr: n} }

// Count is the write that counts an opened conflict on its connection.
func Count(vendorID, connectionID string) store.Op {
	return store.Add(datamodel.ConnectionKey(vendorID, connectionID), CountDelta(1), 0, store.Cond{Exists: true})
}

// PrepareOpen builds a new open conflict. The open-index item is created
// only if absent, so a transaction that would open a second conflict of
// the same (type, connection, resource) fails its condition; callers look
// for the open one first with FindOpen.
func PrepareOpen(now time.Time, vendorID string, d Draft) (Opened, error) {
	sv, err := json.Marshal(d.ServiceValue)
	if err != nil {
		return Opened{}, fmt.Errorf("conflict: encode service value: %w", err)
	}
	cv, err := json.Marshal(d.ChannelValue)
	if err != nil {
		return Opened{}, fmt.Errorf("conflict: encode channel value: %w", err)
	}
	c := Conflict{ID: ids.Sortable(IDPrefix, now), VendorID: vendorID, Type: d.Type, ConnectionID: d.ConnectionID,
		Resource: d.Resource, ServiceValue: sv, ChannelValue: cv, Detail: d.Detail, Source: d.Source,
		Status: StatusOpen, Version: 1, CreatedAt: now, UpdatedAt: now}
	it, err := c.item()
	if err != nil {
		return Opened{}, err
	}
	entry, err := json.Marshal(openEntry{ConflictID: c.ID})
	if err != nil {
		return Opened{}, fmt.Errorf("conflict: encode open index: %w", err)
	}
	index := OpenKey(vendorID, c.Type, c.ConnectionID, c.Resource)
	ev, err := event.Op(event.New(now, vendorID, event.ConflictOpened, "conflict", c.ID, map[string]any{
		"version": c.Version, "type": c.Type, "connection_id": c.ConnectionID, "resource": c.Resource}))
	if err != nil {
		return Opened{}, err
	}
	return Opened{Conflict: c, Ops: []store.Op{
		store.Put(it, store.IfAbsent()),
		store.Put(store.Item{PK: index.PK, SK: index.SK, Version: 1, Data: entry}, store.IfAbsent()),
		ev,
	}}, nil
}

// Service reads, resolves and dismisses conflicts.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// conflictErrors is how the package's errors name its records.
var conflictErrors = errs.Record{Name: "conflict", Unreadable: "conflicts could not be read"}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeConflictVersion, "conflict", current)
}

// FindOpen returns the id of the open conflict of (type, connection,
// resource), if there is one.
func (s Service) FindOpen(ctx context.Context, vendorID, typ string, connectionID *string, r Resource) (string, bool, error) {
	it, err := s.Store.Get(ctx, OpenKey(vendorID, typ, connectionID, r))
	if errors.Is(err, store.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, conflictErrors.Unavailable(err)
	}
	id, err := DecodeOpen(it)
	if err != nil {
		return "", false, conflictErrors.Unavailable(err)
	}
	return id, true, nil
}

// DecodeOpen reads the conflict id of an open-index item (see OpenKey), for
// callers that read it with other items.
func DecodeOpen(it store.Item) (string, error) {
	var e openEntry
	if err := json.Unmarshal(it.Data, &e); err != nil {
		return "", fmt.Errorf("conflict: decode open index: %w", err)
	}
	return e.ConflictID, nil
}

// Record opens a conflict in a transaction of its own, for work that
// records a disagreement but changes nothing else (a refused write): the
// open conflict of the same (type, connection, resource) if there is one,
// else a new one counted on its connection, which must exist. It returns
// the conflict's id.
func (s Service) Record(ctx context.Context, vendorID string, d Draft) (string, error) {
	for attempt := 0; attempt < 3; attempt++ {
		id, open, err := s.FindOpen(ctx, vendorID, d.Type, d.ConnectionID, d.Resource)
		if err != nil || open {
			return id, err
		}
		o, err := PrepareOpen(s.Clock.Now(), vendorID, d)
		if err != nil {
			return "", err
		}
		ops := o.Ops
		if d.ConnectionID != nil {
			ops = append(ops, Count(vendorID, *d.ConnectionID))
		}
		err = s.Store.Transact(ctx, ops...)
		if err == nil {
			return o.Conflict.ID, nil
		}
		if !store.IsCondition(err) {
			return "", errs.Unavailablef(err, "the conflict could not be recorded")
		}
		// Another request opened it first (or the connection is gone): look again.
	}
	return "", errs.E(errs.CodeConflict, "the conflict could not be recorded; retry")
}

// Get reads a conflict.
func (s Service) Get(ctx context.Context, vendorID, id string) (Conflict, error) {
	if !ids.Issued(IDPrefix, id) {
		return Conflict{}, conflictErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.ConflictKey(vendorID, id), Decode, conflictErrors.NotFound(), conflictErrors.Unavailable)
}

// Filter narrows a list; empty fields match everything.
type Filter struct{ Status, Type, ConnectionID, ResourceID string }

func (f Filter) keep(c Conflict) bool {
	return (f.Status == "" || c.Status == f.Status) && (f.Type == "" || c.Type == f.Type) &&
		(f.ConnectionID == "" || c.ConnectionID != nil && *c.ConnectionID == f.ConnectionID) &&
		(f.ResourceID == "" || c.Resource.ID == f.ResourceID)
}

// List reads a page of conflicts, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.ConflictPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ConflictKey(vendorID, "").PK, Prefix: datamodel.ConflictPrefix, After: after}, limit, Decode, f.keep)
	if err != nil {
		return store.PageOf[View]{}, conflictErrors.Unavailable(err)
	}
	return page, nil
}

// Closing is the request to resolve or dismiss a conflict.
type Closing struct {
	ExpectedVersion int64
	Reason          string
}

// MaxReason bounds a closing reason, in characters.
const MaxReason = 1000

// ParseClosing reads a resolve or dismiss body: expected_version and a
// reason (1..1000 characters), both required.
func ParseClosing(body []byte) (Closing, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Closing{}, err
	}
	in := Closing{
		ExpectedVersion: o.Int("expected_version", fields.Required, 0, 1<<53),
		Reason:          o.String("reason", fields.Required, fields.StringRule{Min: 1, Max: MaxReason, Trim: true}),
	}
	return in, o.Err()
}

// closedBy says what closes conflict c on its own, if anything: such a
// conflict is closed by moving its resource, not by hand.
func closedBy(c Conflict) (string, bool) {
	if c.Type == TypeUnreservableOrder {
		return fmt.Sprintf("the conflict closes when external order %s is reserved, rejected or cancelled", c.Resource.ID), true
	}
	return "", false
}

// Uncount is the write that takes a closed conflict off its connection's
// counter. Like Count, a caller that writes the connection in the same
// transaction adds CountDelta(-1) and this bound to that write instead.
func Uncount(vendorID, connectionID string) store.Op {
	return store.Add(datamodel.ConnectionKey(vendorID, connectionID), CountDelta(-1), 0, store.Cond{Bounds: []store.Bound{CountedBound()}})
}

// CountedBound is the condition that a conflict is still counted.
func CountedBound() store.Bound {
	return store.Bound{Attr: datamodel.OpenConflictsAttr, Cmp: store.GE, Value: 1}
}

// Close builds the closing of an open conflict c with status (resolved or
// dismissed): the conflict's new version, the removal of its open-index
// item and the event; not the connection's counter (see Uncount). The
// caller has checked c's version.
func Close(now time.Time, c Conflict, status, reason string, by Actor) (Conflict, []store.Op, error) {
	prev := c.Version
	c.Status, c.Version, c.UpdatedAt = status, c.Version+1, now
	c.Resolution = &Resolution{Status: status, Reason: reason, By: by, At: now}
	it, err := c.item()
	if err != nil {
		return Conflict{}, nil, err
	}
	typ := event.ConflictResolved
	if status == StatusDismissed {
		typ = event.ConflictDismissed
	}
	ev, err := event.Op(event.New(now, c.VendorID, typ, "conflict", c.ID, map[string]any{
		"version": c.Version, "type": c.Type, "connection_id": c.ConnectionID, "resource": c.Resource}))
	if err != nil {
		return Conflict{}, nil, err
	}
	return c, []store.Op{
		store.Put(it, store.IfVersion(prev)),
		store.Delete(OpenKey(c.VendorID, c.Type, c.ConnectionID, c.Resource), store.Cond{}),
		ev,
	}, nil
}

// PrepareClose checks and builds a resolve or dismiss by a token.
func (s Service) PrepareClose(ctx context.Context, vendorID, id, status string, in Closing, tokenID string) (store.Prepared[View], error) {
	c, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if c.Version != in.ExpectedVersion {
		return store.Prepared[View]{}, versionConflict(c.Version)
	}
	if c.Status != StatusOpen {
		return store.Prepared[View]{}, errs.Ef(errs.CodeConflictState, "the conflict is already %s", c.Status)
	}
	if why, ok := closedBy(c); ok {
		return store.Prepared[View]{}, errs.E(errs.CodeConflictState, why)
	}
	closed, ops, err := Close(s.Clock.Now(), c, status, in.Reason, Actor{Type: ActorToken, ID: &tokenID})
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if c.ConnectionID != nil {
		ops = append(ops, Uncount(vendorID, *c.ConnectionID))
	}
	return store.Prepared[View]{View: closed, Ops: ops}, nil
}

// Explain turns a failed close of conflict id into a reason.
func (s Service) Explain(ctx context.Context, vendorID, id string, expected int64, err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if !store.IsCondition(err) {
		return errs.Unavailablef(err, "the conflict could not be stored")
	}
	read := func() (Conflict, int64, error) {
		cur, err := s.Get(ctx, vendorID, id)
		return cur, cur.Version, err
	}
	return errs.Raced(read, expected, versionConflict, func(Conflict) error {
		return errs.E(errs.CodeConflict, "the conflict's connection changed concurrently; read it and retry")
	})
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
