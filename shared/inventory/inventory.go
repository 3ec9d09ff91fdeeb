// Package inventory holds the inventory items of the vendor's single
// location and Stock Pool: their views, the listing across the vendor, and
// adjustments of on_hand. The buckets themselves are numeric attributes of
// each product's store item (see package catalog), so reading an item is
// reading its product.
package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
)

// The one location and pool every vendor has.
const (
	DefaultLocation  = "default"
	DefaultStockPool = "default"
)

// Statuses and the threshold between them: out of stock at zero available,
// low stock up to LowStockThreshold, in stock above.
const (
	InStock           = "in_stock"
	LowStock          = "low_stock"
	OutOfStock        = "out_of_stock"
	LowStockThreshold = 5
	MaxOnHand         = 1_000_000_000
)

// Status classifies an available quantity.
func Status(available int64) string {
	switch {
	case available <= 0:
		return OutOfStock
	case available <= LowStockThreshold:
		return LowStock
	}
	return InStock
}

// Item is an inventory item as the API shows it.
type Item struct {
	ID               string            `json:"id"`
	VendorID         string            `json:"vendor_id"`
	LocationID       string            `json:"location_id"`
	StockPoolID      string            `json:"stock_pool_id"`
	ProductID        string            `json:"product_id"`
	ProductName      string            `json:"product_name"`
	ProductImageURL  *string           `json:"product_image_url"`
	VariationID      *string           `json:"variation_id"`
	VariationOptions map[string]string `json:"variation_options"`
	SKU              *string           `json:"sku"`
	OnHand           int64             `json:"on_hand"`
	Reserved         int64             `json:"reserved"`
	Available        int64             `json:"available"`
	Version          int64             `json:"version"`
	Status           string            `json:"status"`
}

// Buckets are an item's counters.
type Buckets struct {
	OnHand, Reserved, Available, Version int64
}

// BucketsOf reads item seq's counters; ok is false when any is missing,
// which must fail reads closed rather than show a guess.
func BucketsOf(nums map[string]int64, seq int) (Buckets, bool) {
	oh, rs, av, v, ok := datamodel.ItemCounters(nums, seq)
	return Buckets{OnHand: oh, Reserved: rs, Available: av, Version: v}, ok
}

// view builds item seq of product p with buckets b.
func view(p catalog.Product, seq int, b Buckets) Item {
	it := Item{
		ID: catalog.InventoryItemID(p.ID, seq), VendorID: p.VendorID, LocationID: DefaultLocation, StockPoolID: DefaultStockPool,
		ProductID: p.ID, ProductName: p.Name, VariationOptions: map[string]string{}, SKU: p.SKU,
		OnHand: b.OnHand, Reserved: b.Reserved, Available: b.Available, Version: b.Version, Status: Status(b.Available),
	}
	if len(p.ImageURLs) > 0 {
		img := p.ImageURLs[0]
		it.ProductImageURL = &img
	}
	if v, ok := p.VariationBySeq(seq); ok {
		id := v.ID
		it.VariationID, it.SKU = &id, v.SKU
		for k, val := range v.Options {
			it.VariationOptions[k] = val
		}
	}
	return it
}

// Service reads and adjusts inventory items.
type Service struct {
	Store     store.Store
	Clock     clock.Clock
	Authority catalog.Authority
	// Connections and Conflicts record a refused claim of authority
	// (Fence); a service that applies no connection's claim needs neither.
	Connections connection.Service
	Conflicts   conflict.Service
	// Catalog reads the items' products; its Decoded, when set, keeps
	// them decoded between list pages (decoded.Cache).
	Catalog catalog.Service
}

// With is s, and the services it calls, reading and writing through st, a
// request's view of the store: the root builds the service once, a
// request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store, s.Catalog = st, s.Catalog.With(st)
	s.Connections, s.Conflicts = s.Connections.With(st), s.Conflicts.With(st)
	if a, ok := s.Authority.(interface {
		With(store.Store) catalog.Authority
	}); ok {
		s.Authority = a.With(st)
	}
	return s
}

// itemErrors is how the package's errors name its records.
var itemErrors = errs.Record{Name: "inventory item", Unreadable: "inventory state could not be read safely"}

func missingBucket(id string) error {
	return itemErrors.Unavailable(fmt.Errorf("inventory: buckets of %s are missing", id))
}

// load reads the product holding an item.
func (s Service) load(ctx context.Context, vendorID, itemID string) (catalog.Product, store.Item, int, error) {
	if len(itemID) > 1000 {
		return catalog.Product{}, store.Item{}, 0, itemErrors.NotFound()
	}
	productID, seq, ok := catalog.ParseInventoryItemID(itemID)
	if !ok {
		return catalog.Product{}, store.Item{}, 0, itemErrors.NotFound()
	}
	// Shared: the product is only read here and by every caller of load.
	p, it, err := s.Catalog.GetShared(ctx, vendorID, productID)
	if errs.Is(err, errs.CodeNotFound) {
		return catalog.Product{}, store.Item{}, 0, itemErrors.NotFound()
	}
	if err != nil {
		return catalog.Product{}, store.Item{}, 0, err
	}
	if p.Kind == catalog.KindSimple && seq != 0 {
		return catalog.Product{}, store.Item{}, 0, itemErrors.NotFound()
	}
	if _, ok := p.VariationBySeq(seq); p.Kind == catalog.KindVariable && !ok {
		return catalog.Product{}, store.Item{}, 0, itemErrors.NotFound()
	}
	return p, it, seq, nil
}

// Get reads one inventory item.
func (s Service) Get(ctx context.Context, vendorID, itemID string) (Item, error) {
	p, it, seq, err := s.load(ctx, vendorID, itemID)
	if err != nil {
		return Item{}, err
	}
	b, ok := BucketsOf(it.Nums, seq)
	if !ok {
		return Item{}, missingBucket(itemID)
	}
	return view(p, seq, b), nil
}

// cursorKey is the position after item seq of the product stored at sk.
func cursorKey(sk string, seq int) string { return fmt.Sprintf("%s|%03d", sk, seq) }

func parseCursorKey(k string) (sk string, seq int, ok bool) {
	i := strings.LastIndexByte(k, '|')
	if i < 0 || !strings.HasPrefix(k, datamodel.ProductPrefix) {
		return "", 0, false
	}
	if _, err := fmt.Sscanf(k[i+1:], "%03d", &seq); err != nil {
		return "", 0, false
	}
	return k[:i], seq, true
}

// ListStart is the sort key of the product that a page continuing after
// the position after (a List page's Last) starts in.
func ListStart(after string) (sk string, ok bool) {
	sk, _, ok = parseCursorKey(after)
	return sk, ok
}

// List reads up to limit items across the vendor, ordered by product and
// then by item, continuing after the position after. A product whose
// buckets are missing fails the whole page closed (503).
func (s Service) List(ctx context.Context, vendorID, after string, limit int) (store.PageOf[Item], error) {
	return page(ctx, s, vendorID, after, limit, func(_ store.Item, p catalog.Product, seq int, b Buckets) (Item, error) {
		return view(p, seq, b), nil
	})
}

// ListEncoded is List answering each item's JSON view, kept encoded in
// s.Catalog.Decoded beside its product (decoded.Cache.View: an encoding answers
// only for the product's very bytes and the item's counters), so a page
// of unchanged items is neither built nor encoded again. The bytes are
// shared and must not be modified.
func (s Service) ListEncoded(ctx context.Context, vendorID, after string, limit int) (store.PageOf[json.RawMessage], error) {
	return page(ctx, s, vendorID, after, limit, func(it store.Item, p catalog.Product, seq int, b Buckets) (json.RawMessage, error) {
		return s.Catalog.Decoded.View(it, catalog.Decode, itemView{seq, b}, func(p catalog.Product) ([]byte, error) {
			return json.Marshal(view(p, seq, b))
		})
	})
}

// itemView names an item's view of its product: everything besides the
// product's document that view reads.
type itemView struct {
	seq int
	b   Buckets
}

// page reads a page of List, each item made by mk.
func page[V any](ctx context.Context, s Service, vendorID, after string, limit int, mk func(it store.Item, p catalog.Product, seq int, b Buckets) (V, error)) (store.PageOf[V], error) {
	startSK, startSeq := "", -1
	if after != "" {
		var ok bool
		if startSK, startSeq, ok = parseCursorKey(after); !ok {
			return store.PageOf[V]{}, errs.E(errs.CodeInvalidCursor, "page_after: the cursor is not for this list")
		}
	}
	pk := datamodel.ProductKey(vendorID, "").PK
	items := make([]V, 0, limit)
	lastSK, lastSeq := "", 0
	// done is the page so far, with the position after its last item.
	done := func(full bool, err error) (store.PageOf[V], error) {
		if err != nil {
			return store.PageOf[V]{}, err
		}
		p := store.PageOf[V]{Items: items, More: full}
		if lastSK != "" {
			p.Last = cursorKey(lastSK, lastSeq)
		}
		return p, nil
	}
	// emit adds the items of one product after the start position; it
	// reports whether the page is full.
	emit := func(it store.Item) (full bool, err error) {
		p, err := s.Catalog.Decoded.Decode(it, catalog.Decode)
		if err != nil {
			return false, errs.Unavailablef(err, "inventory could not be read")
		}
		for _, seq := range p.Seqs() {
			if it.SK == startSK && seq <= startSeq {
				continue
			}
			if len(items) == limit {
				return true, nil
			}
			b, ok := BucketsOf(it.Nums, seq)
			if !ok {
				return false, missingBucket(catalog.InventoryItemID(p.ID, seq))
			}
			v, err := mk(it, p, seq, b)
			if err != nil {
				return false, errs.Unavailablef(err, "inventory could not be read")
			}
			items = append(items, v)
			lastSK, lastSeq = it.SK, seq
		}
		return false, nil
	}
	if startSK != "" {
		// The page resumes inside the product it stopped in.
		it, err := s.Store.Get(ctx, store.Key{PK: pk, SK: startSK})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.PageOf[V]{}, errs.Unavailablef(err, "inventory could not be read")
		}
		if err == nil {
			if full, err := emit(it); err != nil || full {
				return done(full, err)
			}
		}
	}
	queryAfter := startSK
	for {
		// Most products hold at least one item, so limit+1 products usually
		// fill the page and tell whether more follow; a variable product
		// without variations holds none, hence the loop.
		batch, err := s.Store.Query(ctx, store.Query{PK: pk, Prefix: datamodel.ProductPrefix, After: queryAfter, Limit: limit + 1})
		if err != nil {
			return store.PageOf[V]{}, errs.Unavailablef(err, "inventory could not be read")
		}
		for _, it := range batch {
			if full, err := emit(it); err != nil || full {
				return done(full, err)
			}
		}
		if len(batch) < limit+1 {
			return done(false, nil)
		}
		queryAfter = batch[len(batch)-1].SK
	}
}

// Adjustment is a parsed adjustment body.
type Adjustment struct {
	TargetOnHand    int64
	ExpectedVersion int64
	// Authority is the connection asserting Stock Pool authority; nil is the service.
	Authority *string
	// Cause is what the stock effect names as the cause; nil is a plain
	// adjustment. The bulk worker names its operation and record.
	Cause *stockeffect.Cause
}

// ParseAdjustment reads an adjustment body.
func ParseAdjustment(body []byte) (Adjustment, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Adjustment{}, err
	}
	a := ReadAdjustment(o)
	return a, o.Err()
}

// ReadAdjustment reads the fields of an adjustment body from o, which may
// be nested in a larger body (a bulk record's), so that errors name the
// field by its full path; the caller checks o.Err.
func ReadAdjustment(o *fields.Object) Adjustment {
	var a Adjustment
	a.TargetOnHand = o.Int("target_on_hand", fields.Required, 0, MaxOnHand)
	a.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	a.Authority, _ = o.StringPtr("authority_connection_id", fields.OptionalNullable,
		fields.ConnectionIDRule)
	return a
}

// VersionConflict is the 409 of a stale expected_version.
func VersionConflict(current int64) error {
	return errs.Ef(errs.CodeInventoryVersion, "expected_version: the item is at version %d; retrieve it and retry with a new Idempotency-Key", current)
}

// PrepareAdjust checks an adjustment against the item as it is now and
// returns the item as it will be, with the operations that make it so: an
// atomic add conditioned on the version and the reservation floor, and the
// event; its Explain explains a lost race.
func (s Service) PrepareAdjust(ctx context.Context, vendorID, itemID string, a Adjustment) (store.Prepared[Item], error) {
	masters := catalog.MastersLater(ctx, s.Authority, vendorID)
	p, it, seq, err := s.load(ctx, vendorID, itemID)
	if err != nil {
		return store.Prepared[Item]{}, err
	}
	b, ok := BucketsOf(it.Nums, seq)
	if !ok {
		return store.Prepared[Item]{}, missingBucket(itemID)
	}
	if v, ok := p.VariationBySeq(seq); ok && v.Status == catalog.VariationRetired {
		return store.Prepared[Item]{}, errs.E(errs.CodeInventoryItemRetired, "the item's variation is retired; its stock stays at zero")
	}
	if b.Version != a.ExpectedVersion {
		return store.Prepared[Item]{}, VersionConflict(b.Version)
	}
	m, err := masters()
	if err != nil {
		return store.Prepared[Item]{}, err
	}
	if err := catalog.CheckInventoryBinding(m, a.Authority); err != nil {
		return store.Prepared[Item]{}, err
	}
	if a.TargetOnHand < b.Reserved {
		return store.Prepared[Item]{}, errs.Ef(errs.CodeBelowReserved, "target_on_hand: %d is below the %d units reserved; release reservations first", a.TargetOnHand, b.Reserved)
	}
	delta := a.TargetOnHand - b.OnHand
	next := Buckets{OnHand: a.TargetOnHand, Reserved: b.Reserved, Available: b.Available + delta, Version: b.Version + 1}
	cond := store.Cond{Bounds: []store.Bound{
		{Attr: datamodel.ItemVersionAttr(seq), Cmp: store.EQ, Value: b.Version},
		{Attr: datamodel.ReservedAttr(seq), Cmp: store.LE, Value: a.TargetOnHand},
	}}
	now := s.Clock.Now()
	ev, err := event.Op(event.New(now, vendorID, event.InventoryItemAdjusted, "inventory_item", itemID,
		map[string]any{"version": next.Version, "product_id": p.ID}))
	if err != nil {
		return store.Prepared[Item]{}, err
	}
	cause := stockeffect.Cause{Type: stockeffect.CauseAdjustment, Action: stockeffect.ActionAdjusted}
	if a.Cause != nil {
		cause = *a.Cause
	}
	_, effect, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: vendorID, ProductID: p.ID, InventoryItemID: itemID,
		Before: stockeffect.Buckets{OnHand: b.OnHand, Reserved: b.Reserved}, OnHandDelta: delta, Version: next.Version, Cause: cause})
	if err != nil {
		return store.Prepared[Item]{}, err
	}
	ops := []store.Op{
		store.Add(datamodel.ProductKey(vendorID, p.ID), map[string]int64{
			datamodel.OnHandAttr(seq): delta, datamodel.AvailableAttr(seq): delta, datamodel.ItemVersionAttr(seq): 1,
		}, 0, cond),
		ev,
		effect,
	}
	// The add must not commit once the Stock Pool changed hands.
	ops = m.Fenced(ops)
	explain := func(*store.ConditionError) error {
		if err := catalog.Moved(ctx, s.Authority, vendorID, m); err != nil {
			return err
		}
		read := func() (Item, int64, error) {
			cur, err := s.Get(ctx, vendorID, itemID)
			return cur, cur.Version, err
		}
		return errs.Raced(read, a.ExpectedVersion, VersionConflict, func(cur Item) error {
			return errs.Ef(errs.CodeBelowReserved, "target_on_hand: %d is below the %d units reserved; release reservations first", a.TargetOnHand, cur.Reserved)
		})
	}
	return store.Prepared[Item]{View: view(p, seq, next), Ops: ops, Explain: explain}, nil
}
