package event

import (
	"context"
	"slices"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Log reads a vendor's event log.
type Log struct{ Store store.Store }

// Get reads one event.
func (l Log) Get(ctx context.Context, vendorID, id string) (Event, error) {
	return Read(ctx, l.Store, vendorID, id)
}

// Read reads one event from st: what a worker reads of the log (the
// event a delivery or a replay carries) without a Log.
func Read(ctx context.Context, st store.Store, vendorID, id string) (Event, error) {
	notFound := errs.Absent("event")
	if !ids.Issued("evt", id) {
		return Event{}, notFound
	}
	return store.Read(ctx, st, datamodel.EventKey(vendorID, id), Decode, notFound, func(err error) error {
		return errs.Unavailablef(err, "the event log could not be read")
	})
}

// List reads up to limit events, newest first, before the sort key after,
// keeping only those of type typ when it is set.
func (l Log) List(ctx context.Context, vendorID, typ, after string, limit int) (store.PageOf[Event], error) {
	var f Filter
	if typ != "" {
		f.Types = []string{typ}
	}
	return l.Page(ctx, vendorID, f, after, limit)
}

// Settle is how old an event must be before the oldest-first list shows
// it. An event's id is stamped when its writer builds it and the event
// becomes readable when the writer's transaction commits, a little later;
// two writers can therefore commit in the other order than their ids. A
// reader following the log forward would step over the earlier id that
// commits second. Every write that appends an event commits within its
// deadline (5 s for a request's store work, 25 s for a local message, a
// few round trips for a worker's step), far inside Settle: an event whose
// id is Settle old has committed, or never will, so nothing can appear
// behind a position the list has shown. docs/events.md explains it.
const Settle = time.Minute

// Filter narrows and orders a page of the log.
type Filter struct {
	// Types keeps the events of these types; none keeps all.
	Types []string
	// Asc lists oldest first and shows only events stamped before
	// Now - Settle; otherwise newest first, everything.
	Asc bool
	Now time.Time
}

// Horizon is the sort key before which an oldest-first list shows events
// at now: the first key of the millisecond Settle before it.
func Horizon(now time.Time) string {
	return datamodel.EventPrefix + ids.SortableFloor("evt", now.Add(-Settle))
}

// Page reads up to limit events after the sort key after in f's order,
// keeping those f's types name.
func (l Log) Page(ctx context.Context, vendorID string, f Filter, after string, limit int) (store.PageOf[Event], error) {
	if err := errs.ForeignCursor(after, datamodel.EventPrefix); err != nil {
		return store.PageOf[Event]{}, err
	}
	keep := func(e Event) bool { return len(f.Types) == 0 || slices.Contains(f.Types, e.Type) }
	q := store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.EventPrefix, After: after, Desc: !f.Asc}
	end := ""
	if f.Asc {
		end = Horizon(f.Now)
	}
	page, err := store.PageUntil(ctx, l.Store, q, limit, Decode, keep, end)
	if err != nil {
		return store.PageOf[Event]{}, errs.Unavailablef(err, "the event log could not be read")
	}
	return page, nil
}

// Known reports whether typ is an event type the service emits.
func Known(typ string) bool {
	for _, t := range Types() {
		if t == typ {
			return true
		}
	}
	return false
}

// With is l reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (l Log) With(st store.Store) Log {
	l.Store = st
	return l
}
