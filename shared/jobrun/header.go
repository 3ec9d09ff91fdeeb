package jobrun

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

// Job statuses every kind shares: queued on acceptance, running from its
// first result on.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
)

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

// Head is the header itself, for the runner to read and to move.
func (h *Header) Head() *Header { return h }

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

// Decode reads a job record of type J.
func Decode[J any](it store.Item) (J, error) {
	var j J
	if err := json.Unmarshal(it.Data, &j); err != nil {
		return j, fmt.Errorf("jobrun: decode %s: %w", it.SK, err)
	}
	return j, nil
}
