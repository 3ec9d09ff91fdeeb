// Package stockeffect is the append-only ledger of stock movements: one
// effect per movement of an inventory item's buckets, written in the same
// transaction as the movement and keyed by (item, version after), so one
// movement has exactly one effect and a replayed or raced write cannot add
// a second. Packages that move stock (inventory, reservation) build the
// effect's operation here; this package only records and reads.
package stockeffect

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Cause types and actions.
const (
	CauseAdjustment    = "adjustment"
	CauseReservation   = "reservation"
	CauseBulkOperation = "bulk_operation"
	CauseExternalOrder = "external_order"
	// CauseSyncJob is a sync job that set on_hand to what the connection
	// mastering the Stock Pool reported (action reconciled, record key the
	// inventory item).
	CauseSyncJob = "sync_job"

	ActionAdjusted   = "adjusted"
	ActionReserved   = "reserved"
	ActionCommitted  = "committed"
	ActionReleased   = "released"
	ActionExpired    = "expired"
	ActionReconciled = "reconciled"
)

// Cause names what moved the stock: a resource type, its id (null for a
// plain adjustment, which is no resource of its own) and the action. A bulk
// operation's effect also names the record by its key.
type Cause struct {
	Type      string  `json:"type"`
	ID        *string `json:"id"`
	Action    string  `json:"action"`
	RecordKey *string `json:"record_key"`
}

// Buckets are the two stored counters of an item; available is derived.
type Buckets struct {
	OnHand   int64 `json:"on_hand"`
	Reserved int64 `json:"reserved"`
}

// Effect is one stock movement.
type Effect struct {
	ID              string    `json:"id"`
	VendorID        string    `json:"vendor_id"`
	InventoryItemID string    `json:"inventory_item_id"`
	ProductID       string    `json:"product_id"`
	OnHandDelta     int64     `json:"on_hand_delta"`
	ReservedDelta   int64     `json:"reserved_delta"`
	Before          Buckets   `json:"before"`
	After           Buckets   `json:"after"`
	Version         int64     `json:"version"`
	Cause           Cause     `json:"cause"`
	RequestID       *string   `json:"request_id"`
	CreatedAt       time.Time `json:"created_at"`
}

// ID is the public id of an effect: it maps one to one to its key.
func ID(itemID string, version int64) string {
	return fmt.Sprintf("eff_%s_%012d", strings.TrimPrefix(itemID, "inv_"), version)
}

// parseID finds the item and version an effect id names.
func parseID(id string) (itemID string, version int64, ok bool) {
	rest, ok := strings.CutPrefix(id, "eff_")
	i := strings.LastIndexByte(rest, '_')
	if !ok || i <= 0 || len(rest)-i-1 != 12 {
		return "", 0, false
	}
	v, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || v < 0 {
		return "", 0, false
	}
	return "inv_" + rest[:i], v, true
}

// Movement describes one movement of an item from before by the deltas,
// bringing it to version.
type Movement struct {
	VendorID, ProductID, InventoryItemID string
	Before                               Buckets
	OnHandDelta, ReservedDelta           int64
	Version                              int64
	Cause                                Cause
}

// Op builds the effect of m and the operation that records it; the
// request id comes from ctx (nil for system work).
func Op(ctx context.Context, now time.Time, m Movement) (Effect, store.Op, error) {
	e := Effect{
		ID: ID(m.InventoryItemID, m.Version), VendorID: m.VendorID, InventoryItemID: m.InventoryItemID, ProductID: m.ProductID,
		OnHandDelta: m.OnHandDelta, ReservedDelta: m.ReservedDelta, Before: m.Before,
		After:   Buckets{OnHand: m.Before.OnHand + m.OnHandDelta, Reserved: m.Before.Reserved + m.ReservedDelta},
		Version: m.Version, Cause: m.Cause, RequestID: ids.RequestID(ctx), CreatedAt: now,
	}
	data, err := json.Marshal(e)
	if err != nil {
		return Effect{}, store.Op{}, fmt.Errorf("stockeffect: encode: %w", err)
	}
	k := datamodel.StockEffectKey(m.VendorID, m.InventoryItemID, m.Version)
	return e, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent()), nil
}

// Service reads effects.
type Service struct {
	Store store.Store
}

// effectErrors is how the package's errors name its records.
var effectErrors = errs.Record{Name: "stock effect", Unreadable: "stock effects could not be read"}

func decode(it store.Item) (Effect, error) {
	var e Effect
	if err := json.Unmarshal(it.Data, &e); err != nil {
		return Effect{}, fmt.Errorf("stockeffect: decode %s: %w", it.SK, err)
	}
	return e, nil
}

// Get reads one effect.
func (s Service) Get(ctx context.Context, vendorID, id string) (Effect, error) {
	itemID, v, ok := parseID(id)
	if !ok || len(id) > 1100 {
		return Effect{}, effectErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.StockEffectKey(vendorID, itemID, v), decode, effectErrors.NotFound(), effectErrors.Unavailable)
}

// ListPrefix is the sort-key prefix of the effects List reads: the
// item's when itemID is set, every item's otherwise.
func ListPrefix(itemID string) string {
	if itemID == "" {
		return datamodel.StockEffectPrefix
	}
	return datamodel.StockEffectPrefix + itemID + "#"
}

// List reads a page of effects, by item and oldest first within an item;
// itemID, when set, narrows the list to that item.
func (s Service) List(ctx context.Context, vendorID, itemID, after string, limit int) (store.PageOf[Effect], error) {
	prefix := ListPrefix(itemID)
	if err := errs.ForeignCursor(after, prefix); err != nil {
		return store.PageOf[Effect]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: prefix, After: after}, limit, decode, nil)
	if err != nil {
		return store.PageOf[Effect]{}, effectErrors.Unavailable(err)
	}
	return page, nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
