package reservation

import (
	"context"
	"errors"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
)

// Service creates and moves reservations.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// reservationErrors is how the package's errors name its records.
var reservationErrors = errs.Record{Name: "reservation", Unreadable: "reservation state could not be read safely"}

// context of a create: the connection, the authority and the product, read
// in one round trip.
type createState struct {
	conn      connection.Connection
	authority store.Item
	product   catalog.Product
	buckets   inventory.Buckets
	seq       int
}

func (s Service) readCreate(ctx context.Context, vendorID string, in CreateInput) (createState, error) {
	productID, seq, ok := catalog.ParseInventoryItemID(in.InventoryItemID)
	if !ok {
		return createState{}, errs.Absent("inventory item")
	}
	items, err := s.Store.GetMany(ctx, []store.Key{
		datamodel.ConnectionKey(vendorID, in.ConnectionID), datamodel.AuthorityKey(vendorID), datamodel.ProductKey(vendorID, productID)})
	if err != nil {
		return createState{}, reservationErrors.Unavailable(err)
	}
	var st createState
	if items[0].PK == "" {
		return createState{}, errs.Absent("connection")
	}
	if st.conn, err = connection.Decode(items[0]); err != nil {
		return createState{}, reservationErrors.Unavailable(err)
	}
	st.authority = items[1]
	if items[2].PK == "" {
		return createState{}, errs.Absent("inventory item")
	}
	if st.product, err = catalog.Decode(items[2]); err != nil {
		return createState{}, reservationErrors.Unavailable(err)
	}
	if v, ok := st.product.VariationBySeq(seq); (st.product.Kind == catalog.KindSimple && seq != 0) || (st.product.Kind == catalog.KindVariable && !ok) {
		return createState{}, errs.Absent("inventory item")
	} else if ok && v.Status == catalog.VariationRetired {
		return createState{}, errs.E(errs.CodeInventoryItemRetired, "the item's variation is retired")
	}
	b, ok := inventory.BucketsOf(items[2].Nums, seq)
	if !ok {
		return createState{}, reservationErrors.Unavailable(errors.New("reservation: inventory buckets missing"))
	}
	st.buckets, st.seq = b, seq
	return st, nil
}

// inventoryExternal reports whether a connection masters the Stock Pool.
func inventoryExternal(it store.Item) bool {
	return it.PK != "" && it.Nums[datamodel.InventoryExternalAttr] != 0
}

// PrepareCreate checks and builds a reservation and the operations that
// hold its stock.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, in CreateInput) (store.Prepared[View], error) {
	st, err := s.readCreate(ctx, vendorID, in)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if st.conn.Status != connection.StatusActive {
		return store.Prepared[View]{}, errs.Ef(errs.CodeConnectionInactive, "connection_id: the connection is %s; reservations need an active connection", st.conn.Status)
	}
	if inventoryExternal(st.authority) {
		return store.Prepared[View]{}, errs.E(errs.CodeInventoryExternal, "a channel masters the Stock Pool: the service's own checkout is blocked until a remote reserve-and-debit adapter exists")
	}
	if st.product.Status == catalog.StatusArchived {
		return store.Prepared[View]{}, errs.E(errs.CodeProductState, "the product is archived: its stock cannot be reserved")
	}
	if st.buckets.Available < in.Quantity {
		return store.Prepared[View]{}, errs.Ef(errs.CodeInsufficientStock, "quantity: %d requested, %d available", in.Quantity, st.buckets.Available)
	}
	if st.authority.PK == "" {
		// The vendor's first reservation: create the authority record (the
		// service masters everything) so the hold can count itself on it.
		k := datamodel.AuthorityKey(vendorID)
		err := s.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Nums: map[string]int64{
			datamodel.ServiceReservationsAttr: 0, datamodel.InventoryExternalAttr: 0}}, store.IfAbsent()))
		if err != nil && !store.IsCondition(err) {
			return store.Prepared[View]{}, errs.Unavailablef(err, "the vendor authority could not be stored")
		}
	}
	now := s.Clock.Now()
	r := Reservation{Shown: Shown{ID: ids.Sortable("res", now), VendorID: vendorID, ConnectionID: st.conn.ID, InventoryItemID: in.InventoryItemID,
		ProductID: st.product.ID, Quantity: in.Quantity, Status: StatusActive, Owner: connection.Moku, Reference: in.Reference,
		Version: 1, ExpiresAt: now.Add(in.Hold).Truncate(time.Second), CreatedAt: now, UpdatedAt: now}, Seq: st.seq}
	it, err := r.item()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	q := in.Quantity
	b := st.buckets
	_, effect, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: vendorID, ProductID: r.ProductID, InventoryItemID: r.InventoryItemID,
		Before: stockeffect.Buckets{OnHand: b.OnHand, Reserved: b.Reserved}, ReservedDelta: q, Version: b.Version + 1,
		Cause: stockeffect.Cause{Type: stockeffect.CauseReservation, ID: &r.ID, Action: stockeffect.ActionReserved}})
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{
		store.Put(it, store.IfAbsent()),
		// Conditioned on the item's version, so the effect's before and
		// after are exact; a lost race is retried (see conflict).
		store.Add(datamodel.ProductKey(vendorID, r.ProductID), map[string]int64{
			datamodel.ReservedAttr(r.Seq): q, datamodel.AvailableAttr(r.Seq): -q, datamodel.ItemVersionAttr(r.Seq): 1,
		}, 0, store.Cond{Bounds: []store.Bound{
			{Attr: datamodel.ItemVersionAttr(r.Seq), Cmp: store.EQ, Value: b.Version},
			{Attr: datamodel.AvailableAttr(r.Seq), Cmp: store.GE, Value: q}}}),
		store.Add(datamodel.ConnectionKey(vendorID, r.ConnectionID), map[string]int64{datamodel.ActiveReservationsAttr: 1}, 0,
			store.Cond{Bounds: []store.Bound{{Attr: datamodel.IsActiveAttr, Cmp: store.EQ, Value: 1}}}),
		s.authorityOp(vendorID, 1),
		expiryOp(r),
	}
	ev, err := event.Op(event.New(now, vendorID, event.ReservationCreated, "reservation", r.ID,
		map[string]any{"version": 1, "inventory_item_id": r.InventoryItemID, "quantity": q}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops = append(ops, ev, effect)
	explain := func(ce *store.ConditionError) error {
		switch {
		case ce.Has(1):
			// A concurrent movement won the item: prepare again, which
			// re-reads the stock and decides on what is there now.
			return idempotency.Retry(errs.Ef(errs.CodeInsufficientStock, "quantity: %d requested, but the available stock changed; read the item and retry", q))
		case ce.Has(2):
			return errs.E(errs.CodeConnectionInactive, "connection_id: the connection stopped being active")
		}
		return errs.E(errs.CodeInventoryExternal, "Stock Pool authority moved to a channel while reserving")
	}
	return store.Prepared[View]{View: r.View(), Ops: ops, Explain: explain}, nil
}

// authorityOp moves the vendor's count of service-owned reservations by
// delta; adding one requires that no channel masters the Stock Pool.
func (s Service) authorityOp(vendorID string, delta int64) store.Op {
	cond := store.Cond{Exists: true}
	if delta > 0 {
		cond.Bounds = []store.Bound{{Attr: datamodel.InventoryExternalAttr, Cmp: store.EQ, Value: 0}}
	}
	return store.Add(datamodel.AuthorityKey(vendorID), map[string]int64{datamodel.ServiceReservationsAttr: delta}, 0, cond)
}

// Get reads a reservation.
func (s Service) Get(ctx context.Context, vendorID, id string) (Reservation, error) {
	if !ids.Issued("res", id) {
		return Reservation{}, reservationErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.ReservationKey(vendorID, id), Decode, reservationErrors.NotFound(), reservationErrors.Unavailable)
}

// Filter narrows a list.
type Filter struct {
	Status       string
	ConnectionID string
}

func (f Filter) match(r Reservation) bool {
	return (f.Status == "" || r.Status == f.Status) && (f.ConnectionID == "" || r.ConnectionID == f.ConnectionID)
}

// List reads a page of reservations, newest last.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.ReservationPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	rs, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ReservationKey(vendorID, "").PK, Prefix: datamodel.ReservationPrefix, After: after}, limit, Decode, f.match)
	if err != nil {
		return store.PageOf[View]{}, reservationErrors.Unavailable(err)
	}
	return store.MapPage(rs, Reservation.View), nil
}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeReservationVersion, "reservation", current)
}

// check verifies a client's move on an active reservation.
func (s Service) check(r Reservation, expected int64, verb string) error {
	if r.Version != expected {
		return versionConflict(r.Version)
	}
	if r.Status != StatusActive {
		return errs.Ef(errs.CodeReservationState, "a %s reservation cannot be %s", r.Status, verb)
	}
	return nil
}

// PrepareRenew extends an active hold.
func (s Service) PrepareRenew(ctx context.Context, vendorID, id string, in RenewInput) (store.Prepared[View], error) {
	r, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if err := s.check(r, in.ExpectedVersion, "renewed"); err != nil {
		return store.Prepared[View]{}, err
	}
	now := s.Clock.Now()
	if !now.Before(r.ExpiresAt) {
		return store.Prepared[View]{}, errs.E(errs.CodeReservationState, "the reservation has expired; its stock is being released")
	}
	old := r
	r.ExpiresAt, r.UpdatedAt, r.Version = now.Add(in.Hold).Truncate(time.Second), now, r.Version+1
	it, err := r.item()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ev, err := event.Op(event.New(now, vendorID, event.ReservationRenewed, "reservation", r.ID, map[string]any{"version": r.Version}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{store.Put(it, store.IfVersion(old.Version)), ev}
	if expiryKey(old) != expiryKey(r) {
		ops = append(ops, store.Delete(expiryKey(old), store.Cond{}), expiryOp(r))
	}
	return store.Prepared[View]{View: r.View(), Ops: ops, Explain: s.raced(ctx, vendorID, id, in.ExpectedVersion)}, nil
}

// raced explains a lost race on a reservation.
func (s Service) raced(ctx context.Context, vendorID, id string, expected int64) func(*store.ConditionError) error {
	read := func() (Reservation, int64, error) {
		cur, err := s.Get(ctx, vendorID, id)
		return cur, cur.Version, err
	}
	return func(*store.ConditionError) error {
		return errs.Raced(read, expected, versionConflict, func(Reservation) error {
			return errs.E(errs.CodeReservationState, "the reservation changed concurrently; read it and retry")
		})
	}
}

// PrepareCommit consumes an active hold: on_hand and reserved both fall.
func (s Service) PrepareCommit(ctx context.Context, vendorID, id string, in VersionInput) (store.Prepared[View], error) {
	r, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if err := s.check(r, in.ExpectedVersion, "committed"); err != nil {
		return store.Prepared[View]{}, err
	}
	now := s.Clock.Now()
	if !now.Before(r.ExpiresAt) {
		return store.Prepared[View]{}, errs.E(errs.CodeReservationState, "the reservation has expired; its stock is being released")
	}
	return s.settle(ctx, vendorID, r, StatusCommitted, now)
}

// PrepareRelease returns an active hold to available.
func (s Service) PrepareRelease(ctx context.Context, vendorID, id string, in VersionInput) (store.Prepared[View], error) {
	r, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if err := s.check(r, in.ExpectedVersion, "released"); err != nil {
		return store.Prepared[View]{}, err
	}
	return s.settle(ctx, vendorID, r, StatusReleased, s.Clock.Now())
}

// buckets reads the current counters of a reservation's item.
func (s Service) buckets(ctx context.Context, vendorID string, r Reservation) (inventory.Buckets, error) {
	it, err := s.Store.Get(ctx, datamodel.ProductKey(vendorID, r.ProductID))
	if err != nil {
		return inventory.Buckets{}, reservationErrors.Unavailable(err)
	}
	b, ok := inventory.BucketsOf(it.Nums, r.Seq)
	if !ok {
		return inventory.Buckets{}, reservationErrors.Unavailable(errors.New("reservation: inventory buckets missing"))
	}
	return b, nil
}

// settle ends an active reservation as committed, released or expired.
func (s Service) settle(ctx context.Context, vendorID string, r Reservation, to string, now time.Time) (store.Prepared[View], error) {
	b, err := s.buckets(ctx, vendorID, r)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	prev := r.Version
	q := r.Quantity
	deltas := map[string]int64{datamodel.ReservedAttr(r.Seq): -q, datamodel.ItemVersionAttr(r.Seq): 1}
	typ := event.ReservationReleased
	action, onHandDelta := stockeffect.ActionReleased, int64(0)
	switch to {
	case StatusCommitted:
		deltas[datamodel.OnHandAttr(r.Seq)] = -q
		r.CommittedAt, typ = &now, event.ReservationCommitted
		action, onHandDelta = stockeffect.ActionCommitted, -q
	case StatusReleased:
		deltas[datamodel.AvailableAttr(r.Seq)] = q
		r.ReleasedAt = &now
	case StatusExpired:
		deltas[datamodel.AvailableAttr(r.Seq)] = q
		r.ExpiredAt, typ = &now, event.ReservationExpired
		action = stockeffect.ActionExpired
	}
	_, effect, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: vendorID, ProductID: r.ProductID, InventoryItemID: r.InventoryItemID,
		Before: stockeffect.Buckets{OnHand: b.OnHand, Reserved: b.Reserved}, OnHandDelta: onHandDelta, ReservedDelta: -q, Version: b.Version + 1,
		Cause: stockeffect.Cause{Type: stockeffect.CauseReservation, ID: &r.ID, Action: action}})
	if err != nil {
		return store.Prepared[View]{}, err
	}
	r.Status, r.UpdatedAt, r.Version = to, now, r.Version+1
	it, err := r.item()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ev, err := event.Op(event.New(now, vendorID, typ, "reservation", r.ID,
		map[string]any{"version": r.Version, "inventory_item_id": r.InventoryItemID, "quantity": q}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{
		store.Put(it, store.IfVersion(prev)),
		store.Add(datamodel.ProductKey(vendorID, r.ProductID), deltas, 0, store.Cond{Bounds: []store.Bound{
			{Attr: datamodel.ItemVersionAttr(r.Seq), Cmp: store.EQ, Value: b.Version},
			{Attr: datamodel.ReservedAttr(r.Seq), Cmp: store.GE, Value: q}}}),
		store.Add(datamodel.ConnectionKey(vendorID, r.ConnectionID), map[string]int64{datamodel.ActiveReservationsAttr: -1}, 0, store.Cond{}),
		s.authorityOp(vendorID, -1),
		store.Delete(expiryKey(r), store.Cond{}),
		ev,
		effect,
	}
	raced := s.raced(ctx, vendorID, r.ID, prev)
	explain := func(ce *store.ConditionError) error {
		err := raced(ce)
		if errs.Is(err, errs.CodeReservationState) {
			// The reservation did not move, so the item did: settle
			// again against its new version.
			return idempotency.Retry(err)
		}
		return err
	}
	return store.Prepared[View]{View: r.View(), Ops: ops, Explain: explain}, nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
