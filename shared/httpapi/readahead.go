package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// Read-ahead declarations of routes (Route.ReadAhead): each names, from the
// path and headers alone, items its handler reads, so that the admission
// batch reads them beside the token and the vendor.

// aheadOf combines read-ahead declarations.
func aheadOf(fns ...func(*Call) []store.Key) func(*Call) []store.Key {
	return func(c *Call) []store.Key {
		var keys []store.Key
		for _, f := range fns {
			for _, k := range f(c) {
				if aheadable(k) {
					keys = append(keys, k)
				}
			}
		}
		return keys
	}
}

// aheadable keeps keys a store accepts in a batch read: a key no store can
// hold would fail the whole batch, and with it the credentials' check.
func aheadable(k store.Key) bool {
	const max = 512
	return k.PK != "" && k.SK != "" && len(k.PK) <= max && len(k.SK) <= max && utf8.ValidString(k.PK) && utf8.ValidString(k.SK)
}

// aheadProduct is the product the path names.
func aheadProduct(c *Call) []store.Key {
	return []store.Key{datamodel.ProductKey(c.R.PathValue("vendor_id"), c.R.PathValue("product_id"))}
}

// aheadItem is the product that holds the inventory item the path names.
func aheadItem(c *Call) []store.Key {
	p, _, ok := catalog.ParseInventoryItemID(c.R.PathValue("inventory_item_id"))
	if !ok {
		return nil
	}
	return []store.Key{datamodel.ProductKey(c.R.PathValue("vendor_id"), p)}
}

// aheadListStart is the product an inventory page continuing after a
// cursor starts in (inventory.Service.List reads it before its query).
func aheadListStart(c *Call) []store.Key {
	q, ok := c.pageQuery(datamodel.ProductPrefix, false, inventory.ListStart)
	if !ok || q.After == "" {
		return nil
	}
	return []store.Key{{PK: q.PK, SK: q.After}}
}

// pageInventory is an inventory page's first query: products after the
// one its cursor stopped in.
func pageInventory(c *Call) []store.Query {
	return pageOr(c.pageQuery(datamodel.ProductPrefix, false, inventory.ListStart))
}

// pageConnections is a connection page's first query, then the range of
// health records its handler reads by the ids the page holds: one per
// connection (connections are never deleted), after the same position,
// so limit+1 of them cover the page's.
func pageConnections(c *Call) []store.Query {
	q, ok := c.pageQuery(datamodel.ConnectionPrefix, false, nil)
	if !ok {
		return nil
	}
	h := q
	h.Prefix = datamodel.ConnectionHealthKey("", "").SK
	if q.After != "" {
		h.After = h.Prefix + strings.TrimPrefix(q.After, datamodel.ConnectionPrefix)
	}
	return []store.Query{q, h}
}

// pageEffects is a stock-effect page's first query, narrowed to the
// item the inventory_item_id filter names.
func pageEffects(c *Call) []store.Query {
	item := c.R.URL.Query().Get("inventory_item_id")
	if !validEffectsItem(item) {
		return nil
	}
	return pageOr(c.pageQuery(stockeffect.ListPrefix(item), false, nil))
}

// validEffectsItem reports whether the stock-effect list can be narrowed
// to item (empty: not narrowed).
func validEffectsItem(item string) bool { return len(item) <= 1000 && !strings.Contains(item, "#") }

// aheadSubscription is the webhook subscription the path names.
func aheadSubscription(c *Call) []store.Key {
	return []store.Key{datamodel.SubscriptionKey(c.R.PathValue("vendor_id"), c.R.PathValue("subscription_id"))}
}

// pageDeliveries is a delivery page's first query: the attempts of the
// subscription the path names, newest first.
func pageDeliveries(c *Call) []store.Query {
	return pageOr(c.pageQuery(webhook.AttemptsPrefix(c.R.PathValue("subscription_id")), true, nil))
}

// aheadReservation is the reservation the path names.
func aheadReservation(c *Call) []store.Key {
	return []store.Key{datamodel.ReservationKey(c.R.PathValue("vendor_id"), c.R.PathValue("reservation_id"))}
}

// aheadBulk is the bulk operation the path names.
func aheadBulk(c *Call) []store.Key {
	return []store.Key{datamodel.BulkKey(c.R.PathValue("vendor_id"), c.R.PathValue("bulk_operation_id"))}
}

// maxPeek bounds the body a read-ahead declaration may look into before
// the request is admitted: a reservation's body is far smaller.
const maxPeek = 16 << 10

// peekBody returns the request's body when it is JSON of a declared length
// of at most maxPeek, and puts the bytes back for the handler; nil
// otherwise (the handler then reads and judges the body itself).
func peekBody(c *Call) []byte {
	n := c.R.ContentLength
	if n <= 0 || n > maxPeek || c.R.Body == nil {
		return nil
	}
	b := make([]byte, n)
	read, err := io.ReadFull(c.R.Body, b)
	rest := c.R.Body
	c.R.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b[:read]), rest), rest}
	if err != nil {
		return nil
	}
	return b
}

// aheadReservationBody is the connection and the product a reservation's
// body names.
func aheadReservationBody(c *Call) []store.Key {
	var in struct {
		ConnectionID    string `json:"connection_id"`
		InventoryItemID string `json:"inventory_item_id"`
	}
	b := peekBody(c)
	if b == nil || json.Unmarshal(b, &in) != nil {
		return nil
	}
	vendorID := c.R.PathValue("vendor_id")
	keys := []store.Key{datamodel.ConnectionKey(vendorID, in.ConnectionID)}
	if p, _, ok := catalog.ParseInventoryItemID(in.InventoryItemID); ok {
		keys = append(keys, datamodel.ProductKey(vendorID, p))
	}
	return keys
}

// aheadAuthority is the vendor's authority record.
func aheadAuthority(c *Call) []store.Key {
	return []store.Key{datamodel.AuthorityKey(c.R.PathValue("vendor_id"))}
}

// aheadReceipt is the idempotency receipt the request's mutation would
// answer a replay from (see Call.Mutate), when its key is well formed.
func aheadReceipt(operation string, pattern *regexp.Regexp) func(*Call) []store.Key {
	return func(c *Call) []store.Key {
		key, err := idempotency.HeaderKey(c.R.Header.Values("Idempotency-Key"), pattern)
		if err != nil || c.tokenID == "" {
			return nil
		}
		return []store.Key{idempotency.ReceiptKey(idempotency.Scope{VendorID: c.R.PathValue("vendor_id"), TokenID: c.tokenID, Operation: operation, Key: key})}
	}
}
