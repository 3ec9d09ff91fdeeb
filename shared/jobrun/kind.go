package jobrun

import (
	"context"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/jobstart"
	"github.com/moku/sellerapi/shared/store"
)

// Kind is what tells one kind of job from another outside its records:
// its name, its ids, where it is stored and for how long, and its queue.
type Kind struct {
	// Name names a job of the kind in messages ("bulk operation").
	Name string
	// IDPrefix starts every id of the kind (see ids.Issued).
	IDPrefix string
	// Key is where a job is stored.
	Key func(vendorID, id string) store.Key
	// Retention is how long a finished job is kept after its completion.
	Retention time.Duration
	// MaxAttempts is how many tries a record gets when the service cannot
	// settle it; the job then stops at the record, with the
	// SERVICE_UNAVAILABLE detail Exhausted formats with the count. Zero is
	// no bound.
	MaxAttempts int
	Exhausted   string
	// Start is how a job of the kind starts: its records' prefix, its
	// queue (Queue) and its message (Parse reads the vendor and the job a
	// message names).
	jobstart.Start
}

// NotFound is the error of a job of the kind that does not exist.
func (k Kind) NotFound() error { return k.errors().NotFound() }

// errors is how errors name the kind's jobs.
func (k Kind) errors() errs.Record {
	return errs.Record{Name: k.Name, Unreadable: "the " + k.Name + " could not be read"}
}

// Header is the header of a new job of the kind: a fresh id, queued at now.
func (k Kind) Header(vendorID string, now time.Time) Header {
	return Header{ID: ids.Sortable(k.IDPrefix, now), VendorID: vendorID, Status: StatusQueued, CreatedAt: now}
}

// Item encodes job (the whole record, whose Header h is) at version; once
// the job is finished it expires Retention after completion.
func (k Kind) Item(h Header, job any, version int64) (store.Item, error) {
	b, err := store.Marshal(job)
	if err != nil {
		return store.Item{}, fmt.Errorf("jobrun: encode %s: %w", h.ID, err)
	}
	key := k.Key(h.VendorID, h.ID)
	it := store.Item{PK: key.PK, SK: key.SK, Version: version, Data: b}
	if h.CompletedAt != nil {
		it.ExpiresAt = h.CompletedAt.Add(k.Retention).Unix()
	}
	return it, nil
}

// Insert is the operation that stores a new job, whose Header h is.
func (k Kind) Insert(h Header, job any) (store.Op, error) {
	it, err := k.Item(h, job, 1)
	if err != nil {
		return store.Op{}, err
	}
	return store.Put(it, store.IfAbsent()), nil
}

// Load reads the job id of kind k and its stored version. An id the kind
// never issues, or a missing job, is not found; a store that cannot answer
// says what could not be read.
func Load[J any](ctx context.Context, st store.Store, k Kind, vendorID, id string) (J, int64, error) {
	type versioned struct {
		job     J
		version int64
	}
	if !ids.Issued(k.IDPrefix, id) {
		var zero J
		return zero, 0, k.NotFound()
	}
	v, err := store.Read(ctx, st, k.Key(vendorID, id), func(it store.Item) (versioned, error) {
		j, err := Decode[J](it)
		return versioned{j, it.Version}, err
	}, k.NotFound(), k.errors().Unavailable)
	return v.job, v.version, err
}
