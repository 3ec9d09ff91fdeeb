package listing

import (
	"context"
	"errors"
	"strings"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Service creates, changes and reads listings.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// listingErrors is how the package's errors name its records.
var listingErrors = errs.Record{Name: "listing", Unreadable: "listing state could not be read safely"}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeListingVersion, "listing", current)
}

// raced is the explanation of a lost race on the connection: it changed
// (a transition or role change) while the listing was written. Preparing
// again decides on its new state.
func raced() error {
	return idempotency.Retry(errs.E(errs.CodeConnectionState, "the connection changed concurrently; read it and retry"))
}

func exists() error {
	return errs.E(errs.CodeListingExists, "a listing of this product and variation already exists on the connection")
}

// usable checks that a connection takes listing changes.
func usable(c connection.Connection) error {
	if c.Status == connection.StatusDisconnected {
		return errs.E(errs.CodeConnectionState, "the connection is disconnected: it takes no listing changes")
	}
	return nil
}

// priceAllowed refuses a channel price on a connection that sources the base price.
func priceAllowed(c connection.Connection, price *int64) error {
	if price != nil && c.Roles.BasePrice == connection.Source {
		return errs.E(errs.CodeChannelPriceRefused, "channel_price: the connection sources the base price; it cannot override it")
	}
	return nil
}

// state is a listing with its connection and product, read in one round trip.
type state struct {
	l       Listing
	conn    connection.Connection
	product catalog.Product
}

func (s Service) read(ctx context.Context, vendorID, id string) (state, error) {
	if !ids.Issued("lst", id) {
		return state{}, listingErrors.NotFound()
	}
	l, err := store.Read(ctx, s.Store, datamodel.ListingKey(vendorID, id), Decode, listingErrors.NotFound(), listingErrors.Unavailable)
	if err != nil {
		return state{}, err
	}
	items, err := s.Store.GetMany(ctx, []store.Key{datamodel.ConnectionKey(vendorID, l.ConnectionID), datamodel.ProductKey(vendorID, l.ProductID)})
	if err != nil {
		return state{}, listingErrors.Unavailable(err)
	}
	if items[0].PK == "" || items[1].PK == "" {
		return state{}, listingErrors.Unavailable(errors.New("listing: connection or product missing"))
	}
	st := state{l: l}
	if st.conn, err = connection.Decode(items[0]); err != nil {
		return state{}, listingErrors.Unavailable(err)
	}
	if st.product, err = catalog.Decode(items[1]); err != nil {
		return state{}, listingErrors.Unavailable(err)
	}
	return st, nil
}

// Get reads one listing.
func (s Service) Get(ctx context.Context, vendorID, id string) (View, error) {
	st, err := s.read(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	return st.l.View(st.conn.Roles), nil
}

// PrepareCreate checks and builds a draft listing.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, in CreateInput) (store.Prepared[View], error) {
	if !catalog.ValidProductID(in.ProductID) {
		return store.Prepared[View]{}, errs.Absent("product")
	}
	uk := datamodel.ListingUniqueKey(vendorID, in.ConnectionID, in.ProductID, in.VariationID)
	items, err := s.Store.GetMany(ctx, []store.Key{datamodel.ConnectionKey(vendorID, in.ConnectionID), datamodel.ProductKey(vendorID, in.ProductID), uk})
	if err != nil {
		return store.Prepared[View]{}, listingErrors.Unavailable(err)
	}
	if items[0].PK == "" {
		return store.Prepared[View]{}, errs.Absent("connection")
	}
	if items[1].PK == "" {
		return store.Prepared[View]{}, errs.Absent("product")
	}
	conn, err := connection.Decode(items[0])
	if err != nil {
		return store.Prepared[View]{}, listingErrors.Unavailable(err)
	}
	p, err := catalog.Decode(items[1])
	if err != nil {
		return store.Prepared[View]{}, listingErrors.Unavailable(err)
	}
	if err := usable(conn); err != nil {
		return store.Prepared[View]{}, err
	}
	if err := priceAllowed(conn, in.ChannelPrice); err != nil {
		return store.Prepared[View]{}, err
	}
	if p.Status == catalog.StatusArchived {
		return store.Prepared[View]{}, errs.E(errs.CodeProductState, "the product is archived: it cannot be listed")
	}
	if in.VariationID != nil && !hasVariation(p, *in.VariationID) {
		return store.Prepared[View]{}, errs.E(errs.CodeNotFound, "variation_id: the product has no such variation")
	}
	if items[2].PK != "" {
		return store.Prepared[View]{}, exists()
	}
	now := s.Clock.Now()
	l := Listing{Fields: Fields{ID: ids.Sortable("lst", now), VendorID: vendorID, ConnectionID: conn.ID, ProductID: p.ID, VariationID: in.VariationID,
		ExternalListingID: in.ExternalListingID, Status: StatusDraft, ChannelPrice: in.ChannelPrice}, Version: 1, CreatedAt: now, UpdatedAt: now}
	data, err := l.encode()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	k := datamodel.ListingKey(vendorID, l.ID)
	ev, err := event.Op(event.New(now, vendorID, event.ListingCreated, "listing", l.ID,
		map[string]any{"version": 1, "connection_id": conn.ID, "product_id": p.ID, "status": l.Status}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{
		store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent()),
		store.Put(store.Item{PK: uk.PK, SK: uk.SK, Version: 1, Data: []byte(`{"listing_id":"` + l.ID + `"}`)}, store.IfAbsent()),
		store.Check(datamodel.ConnectionKey(vendorID, conn.ID), store.IfVersion(conn.Version)),
		ev,
	}
	// A concurrent create of the same listing, or a change of the
	// connection: preparing again tells which.
	explain := func(*store.ConditionError) error { return raced() }
	return store.Prepared[View]{View: l.View(conn.Roles), Ops: ops, Explain: explain}, nil
}

func hasVariation(p catalog.Product, id string) bool {
	for _, v := range p.Variations {
		if v.ID == id {
			return true
		}
	}
	return false
}

// write prepares a change of st.l to next: the listing, the connection
// (checked, or its counter moved when next enters or leaves the counted
// statuses) and the event.
func (s Service) write(vendorID string, st state, next Listing, typ string) (store.Prepared[View], error) {
	data, err := next.encode()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ck := datamodel.ConnectionKey(vendorID, st.conn.ID)
	connOp := store.Check(ck, store.IfVersion(st.conn.Version))
	delta := b2i(Counted(next.Status)) - b2i(Counted(st.l.Status))
	if delta != 0 {
		cond := store.IfVersion(st.conn.Version)
		if delta < 0 {
			cond.Bounds = []store.Bound{{Attr: datamodel.ActiveListingsAttr, Cmp: store.GE, Value: 1}}
		}
		connOp = store.Add(ck, map[string]int64{datamodel.ActiveListingsAttr: delta}, 0, cond)
	}
	ev, err := event.Op(event.New(next.UpdatedAt, vendorID, typ, "listing", next.ID,
		map[string]any{"version": next.Version, "connection_id": next.ConnectionID, "product_id": next.ProductID, "status": next.Status}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{store.Update(datamodel.ListingKey(vendorID, next.ID), data, next.Version, nil, store.IfVersion(st.l.Version)), connOp, ev}
	// Either the listing or its connection changed since it was read:
	// preparing again reports a stale expected_version or decides on the
	// connection's new state.
	explain := func(*store.ConditionError) error {
		return idempotency.Retry(errs.E(errs.CodeListingVersion, "the listing or its connection changed concurrently; read it and retry"))
	}
	return store.Prepared[View]{View: next.View(st.conn.Roles), Ops: ops, Explain: explain}, nil
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// PrepareUpdate changes the channel price or the external listing id.
func (s Service) PrepareUpdate(ctx context.Context, vendorID, id string, in UpdateInput) (store.Prepared[View], error) {
	st, err := s.read(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if st.l.Version != in.ExpectedVersion {
		return store.Prepared[View]{}, versionConflict(st.l.Version)
	}
	if err := s.changeable(st); err != nil {
		return store.Prepared[View]{}, err
	}
	if st.product.Status == catalog.StatusArchived {
		return store.Prepared[View]{}, errs.E(errs.CodeProductState, "the product is archived: its listings can only be ended")
	}
	next := st.l
	if in.SetChannelPrice {
		if err := priceAllowed(st.conn, in.ChannelPrice); err != nil {
			return store.Prepared[View]{}, err
		}
		next.ChannelPrice = in.ChannelPrice
	}
	if in.SetExternalListingID {
		next.ExternalListingID = in.ExternalListingID
	}
	next.Version, next.UpdatedAt = next.Version+1, s.Clock.Now()
	return s.write(vendorID, st, next, event.ListingUpdated)
}

// changeable refuses changes to an ended listing or on a disconnected connection.
func (s Service) changeable(st state) error {
	if st.l.Status == StatusEnded {
		return errs.E(errs.CodeListingState, "the listing has ended; ended is final")
	}
	return usable(st.conn)
}

var eventOf = map[string]string{Activate: event.ListingActivated, Pause: event.ListingPaused, Resume: event.ListingResumed, End: event.ListingEnded}

// PrepareTransition activates, pauses, resumes or ends a listing.
func (s Service) PrepareTransition(ctx context.Context, vendorID, id, action string, expected int64) (store.Prepared[View], error) {
	st, err := s.read(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if st.l.Version != expected {
		return store.Prepared[View]{}, versionConflict(st.l.Version)
	}
	if err := usable(st.conn); err != nil {
		return store.Prepared[View]{}, err
	}
	tr := transitions[action]
	ok := false
	for _, from := range tr.from {
		ok = ok || from == st.l.Status
	}
	if !ok {
		return store.Prepared[View]{}, errs.Ef(errs.CodeListingState, "a %s listing cannot %s; allowed from: %s", st.l.Status, action, strings.Join(tr.from, ", "))
	}
	if action != End && st.product.Status == catalog.StatusArchived {
		return store.Prepared[View]{}, errs.E(errs.CodeProductState, "the product is archived: its listings can only be ended")
	}
	next := st.l
	next.Status, next.Version, next.UpdatedAt = tr.to, next.Version+1, s.Clock.Now()
	return s.write(vendorID, st, next, eventOf[action])
}

// Filter narrows a list.
type Filter struct {
	ConnectionID, ProductID, Status string
}

func (f Filter) match(l Listing) bool {
	return (f.ConnectionID == "" || l.ConnectionID == f.ConnectionID) && (f.ProductID == "" || l.ProductID == f.ProductID) &&
		(f.Status == "" || l.Status == f.Status)
}

// List reads a page of listings, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.ListingPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ListingKey(vendorID, "").PK, Prefix: datamodel.ListingPrefix, After: after}, limit, Decode, f.match)
	if err != nil {
		return store.PageOf[View]{}, listingErrors.Unavailable(err)
	}
	// The sync flags come from the connections' current roles.
	roles := map[string]connection.Roles{}
	var keys []store.Key
	for _, l := range page.Items {
		if _, ok := roles[l.ConnectionID]; !ok {
			roles[l.ConnectionID] = connection.Roles{}
			keys = append(keys, datamodel.ConnectionKey(vendorID, l.ConnectionID))
		}
	}
	if len(keys) > 0 {
		conns, err := s.Store.GetMany(ctx, keys)
		if err != nil {
			return store.PageOf[View]{}, listingErrors.Unavailable(err)
		}
		for _, it := range conns {
			if it.PK == "" {
				continue
			}
			c, err := connection.Decode(it)
			if err != nil {
				return store.PageOf[View]{}, listingErrors.Unavailable(err)
			}
			roles[c.ID] = c.Roles
		}
	}
	return store.MapPage(page, func(l Listing) View { return l.View(roles[l.ConnectionID]) }), nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
