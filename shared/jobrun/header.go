package jobrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// StatusRunning is a job's status from its first result on.
const StatusRunning = "running"

// Header is what every job record holds besides its records. Job types
// embed it, so that it is stored flat with their own fields.
type Header struct {
	ID          string     `json:"id"`
	VendorID    string     `json:"vendor_id"`
	Status      string     `json:"status"`
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// Ref is the job's vendor and id.
func (h Header) Ref() (vendorID, id string) { return h.VendorID, h.ID }

// Finished reports whether the job reached its final status.
func (h Header) Finished() bool { return h.CompletedAt != nil }

// Start marks the job running at now unless it started before.
func (h *Header) Start(now time.Time) {
	if h.StartedAt == nil {
		h.StartedAt, h.Status = &now, StatusRunning
	}
}

// Encode stores job (the whole record, whose Header h is) at key and
// version; once the job is finished it expires retention after completion.
func (h Header) Encode(job any, key store.Key, version int64, retention time.Duration) (store.Item, error) {
	b, err := store.Marshal(job)
	if err != nil {
		return store.Item{}, fmt.Errorf("jobrun: encode %s: %w", h.ID, err)
	}
	it := store.Item{PK: key.PK, SK: key.SK, Version: version, Data: b}
	if h.CompletedAt != nil {
		it.ExpiresAt = h.CompletedAt.Add(retention).Unix()
	}
	return it, nil
}

// Decode reads a job record of type J.
func Decode[J any](it store.Item) (J, error) {
	var j J
	if err := json.Unmarshal(it.Data, &j); err != nil {
		return j, fmt.Errorf("jobrun: decode %s: %w", it.SK, err)
	}
	return j, nil
}

// Load reads the job at key and its stored version; a missing job is
// notFound, and a store that cannot answer says what could not be read.
func Load[J any](ctx context.Context, st store.Store, key store.Key, notFound error, what string) (J, int64, error) {
	var zero J
	it, err := st.Get(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return zero, 0, notFound
	}
	if err != nil {
		return zero, 0, errs.Unavailablef(err, "the %s could not be read", what)
	}
	j, err := Decode[J](it)
	if err != nil {
		return zero, 0, errs.Unavailablef(err, "the %s could not be read", what)
	}
	return j, it.Version, nil
}
