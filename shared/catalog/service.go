package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/decoded"
)

// Service stores products.
type Service struct {
	Store     store.Store
	Clock     clock.Clock
	Authority Authority
	// Decoded, when set, keeps products decoded between the reads that
	// only answer with them (ViewOf); see decoded.Cache.
	Decoded *decoded.Cache[Product]
}

// productErrors is how the package's errors name its records.
var productErrors = errs.Record{Name: "product", Unreadable: "the catalog could not be read"}

// Get reads a product and its store item.
func (s Service) Get(ctx context.Context, vendorID, productID string) (Product, store.Item, error) {
	return s.get(ctx, vendorID, productID, Decode)
}

// List reads up to limit products after the sort key after, in creation
// order; the page's More tells whether others follow.
func (s Service) List(ctx context.Context, vendorID, after string, limit int) (store.PageOf[Product], error) {
	if err := errs.ForeignCursor(after, datamodel.ProductPrefix); err != nil {
		return store.PageOf[Product]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ProductKey(vendorID, "").PK, Prefix: datamodel.ProductPrefix, After: after}, limit, Decode, nil)
	if err != nil {
		return store.PageOf[Product]{}, productErrors.Unavailable(err)
	}
	return page, nil
}

func (s Service) masters(ctx context.Context, vendorID string) (Masters, error) {
	m, err := s.Authority.Masters(ctx, vendorID)
	if err != nil {
		return Masters{}, errs.Unavailablef(err, "the vendor authority could not be read")
	}
	return m, nil
}

// MastersLater starts reading the vendor's masters and returns a function
// that waits for them, so that the read overlaps the resource's own.
func MastersLater(ctx context.Context, a Authority, vendorID string) func() (Masters, error) {
	type result struct {
		m   Masters
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := a.Masters(ctx, vendorID)
		if err != nil {
			err = errs.Unavailablef(err, "the vendor authority could not be read")
		}
		ch <- result{m, err}
	}()
	return func() (Masters, error) {
		r := <-ch
		return r.m, r.err
	}
}

// PrepareCreate builds a new product from in and the operations that store
// it with its zeroed inventory buckets, its slug reservation and its event.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, in Input) (store.Prepared[Product], error) {
	m, err := s.masters(ctx, vendorID)
	if err != nil {
		return store.Prepared[Product]{}, err
	}
	if err := CheckBindings(m, in.Authority); err != nil {
		return store.Prepared[Product]{}, err
	}
	now := s.Clock.Now()
	p := Product{ID: ids.Sortable("prd", now), VendorID: vendorID, Status: StatusDraft, Revision: 1, Kind: in.Kind,
		CreatedAt: now, UpdatedAt: now, NextSeq: 1}
	p.apply(in)
	nums := map[string]int64{}
	if p.Kind == KindSimple {
		NewBuckets(0, nums)
	}
	for _, v := range in.Variations {
		p.Variations = append(p.Variations, Variation{ID: ids.New("var"), Status: VariationActive, Options: v.Options,
			Price: v.Price, OriginalPrice: v.OriginalPrice, SKU: v.SKU, Seq: p.NextSeq})
		NewBuckets(p.NextSeq, nums)
		p.NextSeq++
	}
	// Deltas of a put are its starting values.
	data, err := Encode(p)
	if err != nil {
		return store.Prepared[Product]{}, err
	}
	k := datamodel.ProductKey(vendorID, p.ID)
	ops := []store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data, Nums: nums}, store.IfAbsent()), s.slugOp(vendorID, p)}
	ev, err := event.Op(event.New(now, vendorID, event.ProductCreated, "product", p.ID,
		map[string]any{"revision": 1, "inventory_item_ids": p.inventoryIDs(p.Seqs())}))
	if err != nil {
		return store.Prepared[Product]{}, err
	}
	ops = m.Fenced(append(ops, ev))
	explain := func(ce *store.ConditionError) error {
		if err := Moved(ctx, s.Authority, vendorID, m); err != nil {
			return err
		}
		if ce.Has(1) {
			return slugTaken(p.Slug)
		}
		return errs.E(errs.CodeConflict, "the product could not be created; retry")
	}
	return store.Prepared[Product]{View: p, Ops: ops, Explain: explain}, nil
}

func slugTaken(slug string) error {
	return errs.Ef(errs.CodeSlugTaken, "slug: %q is used by another product of this vendor", slug)
}

func (s Service) slugOp(vendorID string, p Product) store.Op {
	k := datamodel.ProductSlugKey(vendorID, p.Slug)
	data, _ := json.Marshal(map[string]string{"product_id": p.ID})
	return store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent())
}

func (p Product) inventoryIDs(seqs []int) []string {
	out := make([]string, len(seqs))
	for i, seq := range seqs {
		out[i] = InventoryItemID(p.ID, seq)
	}
	return out
}

// apply copies the editable fields of in onto p.
func (p *Product) apply(in Input) {
	p.Name, p.Slug, p.Description = in.Name, in.Slug, in.Description
	p.Price, p.OriginalPrice = in.Price, in.OriginalPrice
	p.Category, p.Subcategory = in.Category, in.Subcategory
	p.ImageURLs, p.Badge = in.ImageURLs, in.Badge
	p.Options, p.DefaultOptions = in.Options, in.DefaultOptions
	p.Features, p.RelatedProductIDs, p.Tags = in.Features, in.RelatedProductIDs, in.Tags
	p.SKU, p.WeightKg, p.SourceRegion = in.SKU, in.WeightKg, in.SourceRegion
}

func revisionConflict(current int64) error {
	return errs.Ef(errs.CodeRevisionConflict, "expected_revision: the product is at revision %d; read it again and retry", current)
}

// Update replaces the editable fields of a product (PATCH).
func (s Service) Update(ctx context.Context, vendorID, productID string, in Input) (Product, error) {
	return retryMoved(ctx, func() (Product, error) { return s.update(ctx, vendorID, productID, in) })
}

// retryMoved runs a product write again while it loses to a change of the
// vendor authority, so that the write is decided on the masters it
// commits under.
func retryMoved(ctx context.Context, write func() (Product, error)) (Product, error) {
	for attempt := 1; ; attempt++ {
		p, err := write()
		if !errors.Is(err, idempotency.ErrRetry) || attempt >= idempotency.MaxAttempts {
			return p, err
		}
		if err := idempotency.Pause(ctx, attempt); err != nil {
			return Product{}, errs.Unavailablef(err, "the product could not be stored")
		}
	}
}

func (s Service) update(ctx context.Context, vendorID, productID string, in Input) (Product, error) {
	masters := MastersLater(ctx, s.Authority, vendorID)
	p, it, err := s.Get(ctx, vendorID, productID)
	if err != nil {
		return Product{}, err
	}
	if p.Status == StatusArchived {
		return Product{}, errs.E(errs.CodeProductState, "the product is archived; restore it before editing")
	}
	if in.ExpectedRevision != p.Revision {
		return Product{}, revisionConflict(p.Revision)
	}
	if in.Kind != p.Kind {
		return Product{}, errs.Ef(errs.CodeInvalidRequest, "kind: is immutable; this product is %s", p.Kind)
	}
	m, err := masters()
	if err != nil {
		return Product{}, err
	}
	if err := CheckBindings(m, in.Authority); err != nil {
		return Product{}, err
	}

	next := p
	next.apply(in)
	deltas := map[string]int64{}
	cond := store.IfVersion(p.Revision)
	var retired []string
	existing := map[string]Variation{}
	for _, v := range p.Variations {
		existing[v.ID] = v
	}
	next.Variations = nil
	for i, v := range in.Variations {
		if v.ID == "" {
			next.Variations = append(next.Variations, Variation{ID: ids.New("var"), Status: VariationActive, Options: v.Options,
				Price: v.Price, OriginalPrice: v.OriginalPrice, SKU: v.SKU, Seq: next.NextSeq})
			NewBuckets(next.NextSeq, deltas)
			next.NextSeq++
			continue
		}
		old, ok := existing[v.ID]
		if !ok {
			return Product{}, errs.Ef(errs.CodeInvalidRequest, "variations[%d].id: %q is not a variation of this product; omit id to add a variation", i, v.ID)
		}
		delete(existing, v.ID)
		if v.Status == VariationRetired && old.Status == VariationActive {
			oh, rs := it.Nums[datamodel.OnHandAttr(old.Seq)], it.Nums[datamodel.ReservedAttr(old.Seq)]
			if oh != 0 || rs != 0 {
				return Product{}, errs.Ef(errs.CodeVariationNotRetirable, "variations[%d]: %q has on_hand %d and reserved %d; set stock to zero and release holds before retiring it", i, v.ID, oh, rs)
			}
			// The stock must still be zero when the retirement commits.
			cond.Bounds = append(cond.Bounds,
				store.Bound{Attr: datamodel.OnHandAttr(old.Seq), Cmp: store.EQ, Value: 0},
				store.Bound{Attr: datamodel.ReservedAttr(old.Seq), Cmp: store.EQ, Value: 0})
			retired = append(retired, v.ID)
		}
		next.Variations = append(next.Variations, Variation{ID: v.ID, Status: v.Status, Options: v.Options,
			Price: v.Price, OriginalPrice: v.OriginalPrice, SKU: v.SKU, Seq: old.Seq})
	}
	for id := range existing {
		return Product{}, errs.Ef(errs.CodeInvalidRequest, "variations: existing variation %q is missing; variations cannot be removed, set status retired instead", id)
	}
	if same, err := sameContent(p, next); err != nil {
		return Product{}, err
	} else if same {
		return p, nil // an identical replacement changes nothing
	}

	now := s.Clock.Now()
	next.Revision, next.UpdatedAt = p.Revision+1, now
	data, err := Encode(next)
	if err != nil {
		return Product{}, err
	}
	k := datamodel.ProductKey(vendorID, p.ID)
	ops := []store.Op{store.Update(k, data, next.Revision, deltas, cond)}
	if next.Slug != p.Slug {
		ops = append(ops, store.Delete(datamodel.ProductSlugKey(vendorID, p.Slug), store.Cond{}), s.slugOp(vendorID, next))
	}
	meta := map[string]any{"revision": next.Revision}
	if len(deltas) > 0 {
		var seqs []int
		for _, v := range next.Variations[len(p.Variations):] {
			seqs = append(seqs, v.Seq)
		}
		meta["inventory_item_ids_created"] = next.inventoryIDs(seqs)
	}
	if len(retired) > 0 {
		meta["variation_ids_retired"] = retired
	}
	ev, err := event.Op(event.New(now, vendorID, event.ProductUpdated, "product", p.ID, meta))
	if err != nil {
		return Product{}, err
	}
	// Catalog and base price must not have changed hands meanwhile.
	ops = m.Fenced(append(ops, ev))
	if err := s.Store.Transact(ctx, ops...); err != nil {
		ce, ok := store.AsCondition(err)
		if !ok {
			return Product{}, errs.Unavailablef(err, "the product could not be stored")
		}
		if err := Moved(ctx, s.Authority, vendorID, m); err != nil {
			return Product{}, err
		}
		if len(ops) > 2 && ce.Has(2) && !ce.Has(0) {
			return Product{}, slugTaken(next.Slug)
		}
		return Product{}, s.explainConflict(ctx, vendorID, p.ID, p.Revision)
	}
	return next, nil
}

// explainConflict re-reads a product whose write lost a race and says why.
func (s Service) explainConflict(ctx context.Context, vendorID, productID string, expected int64) error {
	read := func() (Product, int64, error) {
		cur, _, err := s.Get(ctx, vendorID, productID)
		return cur, cur.Revision, err
	}
	return errs.Raced(read, expected, revisionConflict, func(Product) error {
		return errs.E(errs.CodeVariationNotRetirable, "variations: stock arrived on a variation being retired; set it to zero and release holds first")
	})
}

// sameContent reports whether two versions of a product differ in nothing
// a client edits.
func sameContent(a, b Product) (bool, error) {
	b.UpdatedAt = a.UpdatedAt
	ea, err := Encode(a)
	if err != nil {
		return false, err
	}
	eb, err := Encode(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ea, eb), nil
}

// Actions of the lifecycle.
const (
	Publish   = "publish"
	Unpublish = "unpublish"
	Archive   = "archive"
	Restore   = "restore"
)

// With is s reading and writing through st, a request's view of the
// store, and so is its Authority when that reads the store
// (connection.Masters): the root builds the service once, a request uses
// a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	if a, ok := s.Authority.(interface{ With(store.Store) Authority }); ok {
		s.Authority = a.With(st)
	}
	return s
}
