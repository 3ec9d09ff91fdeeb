// Package reservation holds stock for a checkout: a reservation moves
// quantity of one inventory item from available to reserved, and is then
// committed (the stock leaves on_hand), released, or expires, when the
// system releases it exactly as a manual release would.
//
// Every transition moves the item's buckets, the owning connection's
// active-reservation counter and the vendor's count of service-owned
// reservations in one transaction with the reservation itself, so the
// counters are exact by construction. Reservations made here belong to the
// service's own checkout, which exists only while the service masters the
// Stock Pool.
package reservation

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/store"
)

// Statuses of a reservation; only active holds stock.
const (
	StatusActive    = "active"
	StatusCommitted = "committed"
	StatusReleased  = "released"
	StatusExpired   = "expired"
)

// Hold durations.
const (
	DefaultHold = 15 * time.Minute
	MinHold     = time.Minute
	MaxHold     = 24 * time.Hour
)

// Reservation is the stored record: what the API shows of it, and where
// its stock is.
type Reservation struct {
	Shown
	// Seq is the item's bucket number on its product.
	Seq int `json:"seq"`
}

// Shown is the part of the record the API shows.
type Shown = View

// View is a reservation as the API shows it.
type View struct {
	ID              string     `json:"id"`
	VendorID        string     `json:"vendor_id"`
	ConnectionID    string     `json:"connection_id"`
	InventoryItemID string     `json:"inventory_item_id"`
	ProductID       string     `json:"product_id"`
	Quantity        int64      `json:"quantity"`
	Status          string     `json:"status"`
	Owner           string     `json:"owner"`
	Reference       *string    `json:"reference"`
	Version         int64      `json:"version"`
	ExpiresAt       time.Time  `json:"expires_at"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	CommittedAt     *time.Time `json:"committed_at"`
	ReleasedAt      *time.Time `json:"released_at"`
	ExpiredAt       *time.Time `json:"expired_at"`
}

// View returns the API representation.
func (r Reservation) View() View { return r.Shown }

// expiryPartitions lists every partition the expirer walks.
func expiryPartitions() []string {
	out := make([]string, 0, datamodel.ExpiryShards+1)
	for i := 0; i < datamodel.ExpiryShards; i++ {
		out = append(out, datamodel.ExpiryShard(i))
	}
	return append(out, datamodel.LegacyExpiryPartition)
}

func expiryKey(r Reservation) store.Key {
	return store.Key{PK: datamodel.ExpiryPartition(r.VendorID), SK: expirySK(r)}
}

func expirySK(r Reservation) string {
	return datamodel.ExpirySK(r.ExpiresAt, r.VendorID, r.ID)
}

// expiryDue reads the expiry time leading an index entry's sort key.
func expiryDue(sk string) (time.Time, bool) {
	if len(sk) < 12 {
		return time.Time{}, false
	}
	secs, err := strconv.ParseInt(sk[:12], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(secs, 0), true
}

type expiryEntry struct {
	VendorID      string `json:"vendor_id"`
	ReservationID string `json:"reservation_id"`
}

func expiryOp(r Reservation) store.Op {
	k := expiryKey(r)
	data, _ := json.Marshal(expiryEntry{VendorID: r.VendorID, ReservationID: r.ID})
	return store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.Cond{})
}

// Decode reads a reservation item.
func Decode(it store.Item) (Reservation, error) {
	return store.Unmarshal(it, "reservation", func(r *Reservation) *int64 { return &r.Version })
}

func (r Reservation) item() (store.Item, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return store.Item{}, fmt.Errorf("reservation: encode: %w", err)
	}
	k := datamodel.ReservationKey(r.VendorID, r.ID)
	return store.Item{PK: k.PK, SK: k.SK, Version: r.Version, Data: data}, nil
}

// CreateInput is a parsed create body.
type CreateInput struct {
	ConnectionID    string
	InventoryItemID string
	Quantity        int64
	Hold            time.Duration
	Reference       *string
}

var connIDRule = fields.ConnectionIDRule

// ParseCreate reads a reservation create body.
func ParseCreate(body []byte) (CreateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return CreateInput{}, err
	}
	var in CreateInput
	in.ConnectionID = o.String("connection_id", fields.Required, connIDRule)
	in.InventoryItemID = o.String("inventory_item_id", fields.Required, fields.StringRule{Min: 1, Max: 1000})
	in.Quantity = o.Int("quantity", fields.Required, 1, catalog.MaxPrice)
	in.Hold = holdOf(o)
	in.Reference, _ = o.StringPtr("reference", fields.OptionalNullable, fields.StringRule{Min: 1, Max: 200, SingleLine: true})
	return in, o.Err()
}

func holdOf(o *fields.Object) time.Duration {
	secs, _ := o.IntPtr("expires_in_seconds", fields.Optional, int64(MinHold/time.Second), int64(MaxHold/time.Second))
	if secs == nil {
		return DefaultHold
	}
	return time.Duration(*secs) * time.Second
}

// VersionInput is a commit or release body.
type VersionInput struct{ ExpectedVersion int64 }

// ParseVersion reads {"expected_version": n}.
func ParseVersion(body []byte) (VersionInput, error) {
	v, err := fields.ParseVersion(body)
	return VersionInput{ExpectedVersion: v}, err
}

// RenewInput is a renew body.
type RenewInput struct {
	ExpectedVersion int64
	Hold            time.Duration
}

// ParseRenew reads {"expected_version": n, "expires_in_seconds": s}.
func ParseRenew(body []byte) (RenewInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return RenewInput{}, err
	}
	var in RenewInput
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	in.Hold = holdOf(o)
	return in, o.Err()
}

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reservation: decode: %w", err)
	}
	return nil
}
