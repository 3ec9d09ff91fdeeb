package event

import (
	"context"
	"strings"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Log reads a vendor's event log.
type Log struct{ Store store.Store }

// Get reads one event.
func (l Log) Get(ctx context.Context, vendorID, id string) (Event, error) {
	notFound := errs.E(errs.CodeNotFound, "event not found")
	if !ids.Issued("evt", id) {
		return Event{}, notFound
	}
	return store.Read(ctx, l.Store, datamodel.EventKey(vendorID, id), Decode, notFound, func(err error) error {
		return errs.Unavailablef(err, "the event log could not be read")
	})
}

// List reads up to limit events, newest first, before the sort key after,
// keeping only those of type typ when it is set.
func (l Log) List(ctx context.Context, vendorID, typ, after string, limit int) (events []Event, lastKey string, more bool, err error) {
	if after != "" && !strings.HasPrefix(after, datamodel.EventPrefix) {
		return nil, "", false, errs.E(errs.CodeInvalidCursor, "page_after: the cursor is not for this list")
	}
	keep := func(e Event) bool { return typ == "" || e.Type == typ }
	q := store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.EventPrefix, After: after, Desc: true}
	events, lastKey, more, err = store.Page(ctx, l.Store, q, limit, Decode, keep)
	if err != nil {
		return nil, "", false, errs.Unavailablef(err, "the event log could not be read")
	}
	return events, lastKey, more, nil
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
