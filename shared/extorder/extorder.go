// Package extorder holds external orders: orders a connector imports from a
// connection with order_ingress enabled. An order's lines hold their stock
// themselves (no reservation records): while an order is reserved, its
// quantities are in the items' reserved buckets, and every transition moves
// the buckets, the stock effects, the order and the connection's counters
// in one transaction, each product write conditioned on the item versions
// it read.
package extorder

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/store"
)

// Statuses. An import stores reserved or unreservable; reserved →
// committed → (channel fulfillment only) fulfilled; reserved and
// unreservable → cancelled; unreservable → rejected.
const (
	StatusReserved     = "reserved"
	StatusUnreservable = "unreservable"
	StatusCommitted    = "committed"
	StatusFulfilled    = "fulfilled"
	StatusCancelled    = "cancelled"
	StatusRejected     = "rejected"
)

// Actions.
const (
	Reserve = "reserve"
	Commit  = "commit"
	Cancel  = "cancel"
	Reject  = "reject"
	Fulfill = "fulfill"
)

// Limits. At most MaxItems distinct inventory items keep the import's
// transaction (per product one Add, per item one effect, plus the order,
// its key, the connection, the events, the receipt and, for an order that
// cannot be held, its conflict) under 100 actions.
const (
	MaxLines     = 50
	MaxItems     = 45
	MaxQuantity  = 1_000_000_000
	MaxUnitPrice = 1_000_000_000
)

// Unresolved reports whether an order counts in the connection's
// unresolved_external_order_count: it still needs a decision (reserved,
// unreservable) or, for channel fulfillment, a committed order the channel
// has not yet fulfilled.
func Unresolved(status, fulfillment string) bool {
	return status == StatusReserved || status == StatusUnreservable || (status == StatusCommitted && fulfillment == connection.Channel)
}

// ChannelFulfilling reports whether an order counts in the connection's
// active_channel_fulfillment_count.
func ChannelFulfilling(status, fulfillment string) bool {
	return status == StatusCommitted && fulfillment == connection.Channel
}

// Line is one order line.
type Line struct {
	LineID          string  `json:"line_id"`
	InventoryItemID string  `json:"inventory_item_id"`
	Quantity        int64   `json:"quantity"`
	UnitPrice       int64   `json:"unit_price"`
	Problem         *string `json:"problem"`
}

// Order is the stored record.
type Order struct {
	ID              string `json:"id"`
	VendorID        string `json:"vendor_id"`
	ConnectionID    string `json:"connection_id"`
	ExternalOrderID string `json:"external_order_id"`
	Fulfillment     string `json:"fulfillment"`
	Status          string `json:"status"`
	Lines           []Line `json:"lines"`
	// ConflictID is the conflict opened when the order could not be held;
	// the order's next transition closes it.
	ConflictID  *string    `json:"conflict_id"`
	Version     int64      `json:"version"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CommittedAt *time.Time `json:"committed_at"`
	FulfilledAt *time.Time `json:"fulfilled_at"`
}

// View is the order as the API shows it (the stored record is the view).
type View = Order

// keyEntry is the data of the unique key item.
type keyEntry struct {
	OrderID     string `json:"order_id"`
	Fingerprint string `json:"fingerprint"`
}

// Decode reads an order item.
func Decode(it store.Item) (Order, error) {
	return store.Unmarshal(it, "extorder", func(o *Order) *int64 { return &o.Version })
}

func (o Order) item() (store.Item, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return store.Item{}, fmt.Errorf("extorder: encode: %w", err)
	}
	k := datamodel.ExternalOrderKey(o.VendorID, o.ID)
	return store.Item{PK: k.PK, SK: k.SK, Version: o.Version, Data: data}, nil
}

// ImportInput is a parsed import body.
type ImportInput struct {
	ConnectionID, ExternalOrderID string
	Lines                         []Line
}

// Fingerprint identifies the content of an import: a repeat with the same
// content returns the first order, a different one is a duplicate.
func (in ImportInput) Fingerprint() string {
	b, _ := json.Marshal(in.Lines)
	h := sha256.Sum256(append([]byte(in.ConnectionID+"\x00"+in.ExternalOrderID+"\x00"), b...))
	return hex.EncodeToString(h[:])
}

var (
	connIDRule     = fields.ConnectionIDRule
	externalIDRule = fields.StringRule{Min: 1, Max: 200, SingleLine: true}
	lineIDRule     = fields.StringRule{Min: 1, Max: 200, SingleLine: true}
	itemIDRule     = fields.StringRule{Min: 1, Max: 300}
)

// ParseImport reads an import body.
func ParseImport(body []byte) (ImportInput, error) { return parseImport(body, "") }

// ParsePluginImport reads an import posted by a store plugin for its own
// connection: the body has no connection_id (the pairing names it).
func ParsePluginImport(body []byte, connectionID string) (ImportInput, error) {
	return parseImport(body, connectionID)
}

// parseImport reads an import; connectionID, when set, stands for the
// body's connection_id, which must then be absent.
func parseImport(body []byte, connectionID string) (ImportInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return ImportInput{}, err
	}
	in := ImportInput{ConnectionID: connectionID}
	if connectionID == "" {
		in.ConnectionID = o.String("connection_id", fields.Required, connIDRule)
	}
	in.ExternalOrderID = o.String("external_order_id", fields.Required, externalIDRule)
	lines := o.Objects("lines", fields.Required, MaxLines)
	if o.Err() == nil && len(lines) == 0 {
		o.Fail("lines", "must have at least 1 item")
	}
	seen := map[string]bool{}
	items := map[string]bool{}
	for _, lo := range lines {
		l := Line{
			LineID:          lo.String("line_id", fields.Required, lineIDRule),
			InventoryItemID: lo.String("inventory_item_id", fields.Required, itemIDRule),
			Quantity:        lo.Int("quantity", fields.Required, 1, MaxQuantity),
			UnitPrice:       lo.Int("unit_price", fields.Required, 0, MaxUnitPrice),
		}
		o.Child(lo)
		if o.Err() != nil {
			break
		}
		if seen[l.LineID] {
			o.Fail("lines", "line_id %q appears twice", l.LineID)
			break
		}
		seen[l.LineID] = true
		items[l.InventoryItemID] = true
		in.Lines = append(in.Lines, l)
	}
	if o.Err() == nil && len(items) > MaxItems {
		o.Fail("lines", "must reference at most %d distinct inventory items", MaxItems)
	}
	return in, o.Err()
}

// itemQty is the merged quantity of one inventory item in an order.
type itemQty struct {
	ItemID    string
	ProductID string
	Seq       int
	Quantity  int64
}

// merged sums an order's lines per inventory item, in a stable order;
// lines whose item id is malformed are left out (ok false).
func merged(lines []Line) (out []itemQty, ok bool) {
	ok = true
	idx := map[string]int{}
	for _, l := range lines {
		pid, seq, valid := catalog.ParseInventoryItemID(l.InventoryItemID)
		if !valid {
			ok = false
			continue
		}
		if i, found := idx[l.InventoryItemID]; found {
			out[i].Quantity += l.Quantity
			continue
		}
		idx[l.InventoryItemID] = len(out)
		out = append(out, itemQty{ItemID: l.InventoryItemID, ProductID: pid, Seq: seq, Quantity: l.Quantity})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ItemID < out[j].ItemID })
	return out, ok
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
