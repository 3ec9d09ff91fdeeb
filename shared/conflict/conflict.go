// Package conflict holds conflict records: disagreements the service will
// not settle alone, such as a stock count a source reports below what the
// service holds reserved, or an imported order whose lines cannot be held.
//
// A conflict is opened in the same transaction as the work that found it,
// and stays open until someone resolves or dismisses it (with who and why)
// or, for an order's conflict, until the order itself moves on. While a
// conflict of a connection is open, the connection's item counts it
// (connection.ConflictsAttr), so a role change or a disconnect can refuse
// with one condition. At most one conflict is open per (type, connection,
// resource): an open-index item keyed by that triple makes a second one
// impossible, and finders return the open one instead.
package conflict

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// Types of conflict.
const (
	// TypeStockMismatch: the connection masters the stock and reports an
	// on-hand count below what the service holds reserved; moving on_hand
	// there would break the reservation floor.
	TypeStockMismatch = "stock_mismatch"
	// TypePriceMismatch: the connection masters the base price and reports
	// one the service's product does not have.
	TypePriceMismatch = "price_mismatch"
	// TypeCatalogMismatch: the connection masters the catalog and reports a
	// title or catalog status the service's product does not have.
	TypeCatalogMismatch = "catalog_mismatch"
	// TypeUnreservableOrder: an imported order whose lines cannot be held.
	TypeUnreservableOrder = "unreservable_external_order"
	// TypeDuplicateExternalID: a connection imported an external order id a
	// second time with different content.
	TypeDuplicateExternalID = "duplicate_external_id"
	// TypeAuthorityFence: a write claimed a connection as the master of a
	// domain that connection does not master (a connector writing stock as
	// if it were the source).
	TypeAuthorityFence = "authority_fence"
)

// Types lists every conflict type.
func Types() []string {
	return []string{TypeStockMismatch, TypePriceMismatch, TypeCatalogMismatch, TypeUnreservableOrder, TypeDuplicateExternalID, TypeAuthorityFence}
}

// Statuses of a conflict: open, then resolved or dismissed (both final).
const (
	StatusOpen      = "open"
	StatusResolved  = "resolved"
	StatusDismissed = "dismissed"
)

// Resource is what a conflict is about.
type Resource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Resource types.
const (
	ResourceInventoryItem = "inventory_item"
	ResourceProduct       = "product"
	ResourceExternalOrder = "external_order"
)

// Source is the work that found the conflict.
type Source struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Source types.
const (
	SourceSyncJob       = "sync_job"
	SourceExternalOrder = "external_order"
	// SourceRequest is a refused request; the id is its request id.
	SourceRequest = "request"
	// SourceBulkOperation is a bulk operation's refused record; the id is
	// the bulk operation's.
	SourceBulkOperation = "bulk_operation"
)

// Actor is who closed a conflict: a token, or the service itself when the
// resource moved on (an order reserved, rejected or cancelled).
type Actor struct {
	Type string  `json:"type"`
	ID   *string `json:"id"`
}

// Actor types.
const (
	ActorToken  = "token"
	ActorSystem = "system"
)

// Resolution is how a conflict was closed.
type Resolution struct {
	Status string    `json:"status"`
	Reason string    `json:"reason"`
	By     Actor     `json:"by"`
	At     time.Time `json:"at"`
}

// Conflict is the stored record, shown as is.
type Conflict struct {
	ID           string          `json:"id"`
	VendorID     string          `json:"vendor_id"`
	Type         string          `json:"type"`
	ConnectionID *string         `json:"connection_id"`
	Resource     Resource        `json:"resource"`
	ServiceValue json.RawMessage `json:"service_value"`
	ChannelValue json.RawMessage `json:"channel_value"`
	Detail       string          `json:"detail"`
	Source       Source          `json:"source"`
	Status       string          `json:"status"`
	Resolution   *Resolution     `json:"resolution"`
	Version      int64           `json:"version"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
}

// View is a conflict as the API shows it.
type View = Conflict

// Retention is how long a closed conflict is kept.
const Retention = 90 * 24 * time.Hour

// IDPrefix starts every conflict id (cfl_ and 26 characters, see ids.Issued).
const IDPrefix = "cfl"

// OpenKey is the open-index item of (type, connection, resource): it exists
// while a conflict of that triple is open and holds its id.
func OpenKey(vendorID, typ string, connectionID *string, r Resource) store.Key {
	conn := ""
	if connectionID != nil {
		conn = *connectionID
	}
	return datamodel.ConflictOpenKey(vendorID, typ, conn, r.Type, r.ID)
}

func (c Conflict) item() (store.Item, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return store.Item{}, fmt.Errorf("conflict: encode %s: %w", c.ID, err)
	}
	k := datamodel.ConflictKey(c.VendorID, c.ID)
	it := store.Item{PK: k.PK, SK: k.SK, Version: c.Version, Data: b}
	if c.Status != StatusOpen {
		it.ExpiresAt = c.UpdatedAt.Add(Retention).Unix()
	}
	return it, nil
}

// Decode reads a conflict item.
func Decode(it store.Item) (Conflict, error) {
	return store.Unmarshal(it, "conflict", func(c *Conflict) *int64 { return &c.Version })
}

// openEntry is the document of an open-index item.
type openEntry struct {
	ConflictID string `json:"conflict_id"`
}
