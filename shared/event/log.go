package event

import (
	"context"
	"errors"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/vendor"
)

// Log reads a vendor's event log.
type Log struct{ Store store.Store }

// Get reads one event.
func (l Log) Get(ctx context.Context, vendorID, id string) (Event, error) {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, "#/") {
		return Event{}, errs.E(errs.CodeNotFound, "event not found")
	}
	it, err := l.Store.Get(ctx, Key(vendorID, id))
	if errors.Is(err, store.ErrNotFound) {
		return Event{}, errs.E(errs.CodeNotFound, "event not found")
	}
	if err != nil {
		return Event{}, errs.Unavailablef(err, "the event log could not be read")
	}
	return Decode(it)
}

// List reads up to limit events, newest first, before the sort key after,
// keeping only those of type typ when it is set.
func (l Log) List(ctx context.Context, vendorID, typ, after string, limit int) (events []Event, lastKey string, more bool, err error) {
	if after != "" && !strings.HasPrefix(after, Prefix) {
		return nil, "", false, errs.E(errs.CodeInvalidCursor, "page_after: the cursor is not for this list")
	}
	events = []Event{}
	pk := vendor.Partition(vendorID)
	for {
		items, err := l.Store.Query(ctx, store.Query{PK: pk, Prefix: Prefix, After: after, Limit: limit + 1, Desc: true})
		if err != nil {
			return nil, "", false, errs.Unavailablef(err, "the event log could not be read")
		}
		for _, it := range items {
			e, err := Decode(it)
			if err != nil {
				return nil, "", false, errs.Unavailablef(err, "the event log could not be read")
			}
			if typ != "" && e.Type != typ {
				continue
			}
			if len(events) == limit {
				return events, lastKey, true, nil
			}
			events = append(events, e)
			lastKey = it.SK
		}
		if len(items) < limit+1 {
			return events, lastKey, false, nil
		}
		after = items[len(items)-1].SK
	}
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
