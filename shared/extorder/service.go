package extorder

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Problems a line can have when its stock cannot be held.
const (
	ProblemInsufficientStock = "insufficient_stock"
	ProblemNotFound          = "item_not_found"
	ProblemRetired           = "item_retired"
	ProblemArchived          = "product_archived"
)

// Service imports, moves and reads external orders.
type Service struct {
	Store store.Store
	Clock clock.Clock
	// Conflicts records a duplicate import and closes an unreservable
	// order's conflict.
	Conflicts conflict.Service
}

// With is s, and the conflict service it calls, reading and writing
// through st, a request's view of the store: the root builds the service
// once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store, s.Conflicts = st, s.Conflicts.With(st)
	return s
}

// externalOrderErrors is how the package's errors name its records.
var externalOrderErrors = errs.Record{Name: "external order", Unreadable: "external order state could not be read safely"}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeExternalOrderVersion, "external order", current)
}

func stateConflict(status, verb string) error {
	return errs.Ef(errs.CodeExternalOrderState, "a %s external order cannot be %s", status, verb)
}

func eventOp(o Order, typ string) (store.Op, error) {
	return event.Op(event.New(o.UpdatedAt, o.VendorID, typ, "external_order", o.ID, map[string]any{
		"version": o.Version, "connection_id": o.ConnectionID, "external_order_id": o.ExternalOrderID,
		"fulfillment": o.Fulfillment, "status": o.Status, "lines": o.Lines}))
}

// duplicate records a second import of an external order id with other
// content as a conflict (one per order while open) and returns the 409
// that names it. The record is written even though the import is refused:
// a connector that disagrees with itself is for the seller to look at.
func (s Service) duplicate(ctx context.Context, vendorID, orderID string, in ImportInput) error {
	first, err := s.Get(ctx, vendorID, orderID)
	if err != nil {
		return err
	}
	conn := in.ConnectionID
	id, err := s.Conflicts.Record(ctx, vendorID, conflict.Draft{
		Type: conflict.TypeDuplicateExternalID, ConnectionID: &conn,
		Resource:     conflict.Resource{Type: conflict.ResourceExternalOrder, ID: orderID},
		ServiceValue: map[string]any{"external_order_id": first.ExternalOrderID, "lines": first.Lines},
		ChannelValue: map[string]any{"external_order_id": in.ExternalOrderID, "lines": in.Lines},
		Detail:       "the connection imported this external order id again with different content; the first import stands",
		Source:       conflict.Source{Type: conflict.SourceExternalOrder, ID: orderID}})
	if err != nil {
		return err
	}
	return errs.Ef(errs.CodeExternalOrderDuplicate, "external_order_id: the connection already imported this order with different content (external order %s); recorded as conflict %s", orderID, id)
}

// unreservableDraft is the conflict of an order that cannot be held: what
// the channel asks for against why the service cannot hold it.
func unreservableDraft(o Order, problems map[string]string) conflict.Draft {
	conn := o.ConnectionID
	asked := make([]map[string]any, len(o.Lines))
	for i, l := range o.Lines {
		asked[i] = map[string]any{"line_id": l.LineID, "inventory_item_id": l.InventoryItemID, "quantity": l.Quantity}
	}
	return conflict.Draft{Type: conflict.TypeUnreservableOrder, ConnectionID: &conn,
		Resource:     conflict.Resource{Type: conflict.ResourceExternalOrder, ID: o.ID},
		ServiceValue: map[string]any{"problems": problems},
		ChannelValue: map[string]any{"external_order_id": o.ExternalOrderID, "lines": asked},
		Detail:       "the order's lines cannot all be held; fix the stock and reserve the order again, or reject or cancel it",
		Source:       conflict.Source{Type: conflict.SourceExternalOrder, ID: o.ID}}
}

// PrepareImport checks and builds an import. A repeat with the same
// content answers with the first order and no operations.
func (s Service) PrepareImport(ctx context.Context, vendorID string, in ImportInput) (store.Prepared[View], error) {
	uk := datamodel.ExternalOrderUniqueKey(vendorID, in.ConnectionID, in.ExternalOrderID)
	items, err := s.Store.GetMany(ctx, []store.Key{datamodel.ConnectionKey(vendorID, in.ConnectionID), uk})
	if err != nil {
		return store.Prepared[View]{}, externalOrderErrors.Unavailable(err)
	}
	if items[0].PK == "" {
		return store.Prepared[View]{}, errs.Absent("connection")
	}
	fp := in.Fingerprint()
	if items[1].PK != "" {
		var e keyEntry
		if err := jsonUnmarshal(items[1].Data, &e); err != nil {
			return store.Prepared[View]{}, externalOrderErrors.Unavailable(err)
		}
		if e.Fingerprint != fp {
			return store.Prepared[View]{}, s.duplicate(ctx, vendorID, e.OrderID, in)
		}
		o, err := s.Get(ctx, vendorID, e.OrderID)
		if err != nil {
			return store.Prepared[View]{}, err
		}
		return store.Prepared[View]{View: o}, nil
	}
	conn, err := connection.Decode(items[0])
	if err != nil {
		return store.Prepared[View]{}, externalOrderErrors.Unavailable(err)
	}
	if conn.Status == connection.StatusDisconnected {
		return store.Prepared[View]{}, errs.E(errs.CodeConnectionState, "connection_id: the connection is disconnected: it imports no orders")
	}
	if conn.Roles.OrderIngress != connection.Enabled {
		return store.Prepared[View]{}, errs.E(errs.CodeConnectionState, "connection_id: the connection's order_ingress is disabled")
	}
	now := s.Clock.Now()
	o := Order{ID: ids.Sortable("xo", now), VendorID: vendorID, ConnectionID: conn.ID, ExternalOrderID: in.ExternalOrderID,
		Fulfillment: conn.Roles.ExternalOrderFulfillment, Lines: append([]Line(nil), in.Lines...), Version: 1, CreatedAt: now, UpdatedAt: now}
	stockOps, problems, err := s.hold(ctx, o, now)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	typ := event.ExternalOrderReserved
	o.Status = StatusReserved
	connDeltas := map[string]int64{datamodel.UnresolvedOrdersAttr: 1}
	var opened []store.Op
	if len(problems) > 0 {
		o.Status, typ = StatusUnreservable, event.ExternalOrderUnreservable
		setProblems(&o, problems)
		c, err := conflict.PrepareOpen(now, vendorID, unreservableDraft(o, problems))
		if err != nil {
			return store.Prepared[View]{}, err
		}
		o.ConflictID, opened = &c.Conflict.ID, c.Ops
		connDeltas[datamodel.OpenConflictsAttr] = 1
	}
	it, err := o.item()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	key, err := jsonMarshal(keyEntry{OrderID: o.ID, Fingerprint: fp})
	if err != nil {
		return store.Prepared[View]{}, err
	}
	imported, err := eventOp(o, event.ExternalOrderImported)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	outcome, err := event.Op(event.New(now, vendorID, typ, "external_order", o.ID, map[string]any{
		"version": o.Version, "connection_id": o.ConnectionID, "status": o.Status}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{
		store.Put(it, store.IfAbsent()),
		store.Put(store.Item{PK: uk.PK, SK: uk.SK, Version: 1, Data: key}, store.IfAbsent()),
		// Concurrent imports leave the version alone; a disconnect or a
		// role change moves it, and the import decides again.
		store.Add(datamodel.ConnectionKey(vendorID, conn.ID), connDeltas, 0, store.IfVersion(conn.Version)),
		imported, outcome,
	}
	ops = append(append(ops, stockOps...), opened...)
	explain := func(*store.ConditionError) error {
		return idempotency.Retry(errs.E(errs.CodeConflict, "the stock, the connection or the order key changed concurrently; retry"))
	}
	return store.Prepared[View]{View: o, Ops: ops, Explain: explain}, nil
}

// Get reads an order.
func (s Service) Get(ctx context.Context, vendorID, id string) (Order, error) {
	if !ids.Issued("xo", id) {
		return Order{}, externalOrderErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.ExternalOrderKey(vendorID, id), Decode, externalOrderErrors.NotFound(), externalOrderErrors.Unavailable)
}

// Filter narrows a list.
type Filter struct{ ConnectionID, Status string }

// List reads a page of orders, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.ExternalOrderPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	keep := func(o Order) bool {
		return (f.Status == "" || o.Status == f.Status) && (f.ConnectionID == "" || o.ConnectionID == f.ConnectionID)
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ExternalOrderKey(vendorID, "").PK, Prefix: datamodel.ExternalOrderPrefix, After: after}, limit, Decode, keep)
	if err != nil {
		return store.PageOf[View]{}, externalOrderErrors.Unavailable(err)
	}
	return page, nil
}

var pastTense = map[string]string{Reserve: "reserved", Commit: "committed", Cancel: "cancelled", Reject: "rejected", Fulfill: "fulfilled"}

// PrepareTransition checks and builds an order transition.
func (s Service) PrepareTransition(ctx context.Context, vendorID, id, action string, expected int64) (store.Prepared[View], error) {
	o, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if o.Version != expected {
		return store.Prepared[View]{}, versionConflict(o.Version)
	}
	now := s.Clock.Now()
	prev := o
	var stockOps []store.Op
	var typ string
	switch {
	case action == Reserve && o.Status == StatusUnreservable:
		ops, problems, err := s.hold(ctx, o, now)
		if err != nil {
			return store.Prepared[View]{}, err
		}
		if len(problems) > 0 {
			var parts []string
			for item, p := range problems {
				parts = append(parts, item+": "+p)
			}
			sort.Strings(parts)
			return store.Prepared[View]{}, errs.Ef(errs.CodeInsufficientStock, "the order still cannot be held: %s", strings.Join(parts, "; "))
		}
		setProblems(&o, nil)
		stockOps, o.Status, typ = ops, StatusReserved, event.ExternalOrderReserved
	case action == Commit && o.Status == StatusReserved:
		if stockOps, err = s.settle(ctx, o, true, now); err != nil {
			return store.Prepared[View]{}, err
		}
		o.Status, o.CommittedAt, typ = StatusCommitted, &now, event.ExternalOrderCommitted
	case action == Cancel && (o.Status == StatusReserved || o.Status == StatusUnreservable):
		if o.Status == StatusReserved {
			if stockOps, err = s.settle(ctx, o, false, now); err != nil {
				return store.Prepared[View]{}, err
			}
		}
		o.Status, typ = StatusCancelled, event.ExternalOrderCancelled
	case action == Reject && o.Status == StatusUnreservable:
		o.Status, typ = StatusRejected, event.ExternalOrderRejected
	case action == Fulfill && o.Status == StatusCommitted && o.Fulfillment == connection.Channel:
		o.Status, o.FulfilledAt, typ = StatusFulfilled, &now, event.ExternalOrderFulfilled
	case action == Fulfill && o.Status == StatusCommitted:
		return store.Prepared[View]{}, errs.E(errs.CodeExternalOrderState, "the order's fulfillment is moku: the seller fulfills it through seller orders, not the channel")
	default:
		return store.Prepared[View]{}, stateConflict(o.Status, pastTense[action])
	}
	o.Version, o.UpdatedAt = o.Version+1, now
	it, err := o.item()
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ev, err := eventOp(o, typ)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops := []store.Op{store.Put(it, store.IfVersion(prev.Version)), ev}
	closing, err := s.closeConflict(ctx, prev, action, now)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops = append(ops, closing...)
	deltas := map[string]int64{}
	if d := b2i(Unresolved(o.Status, o.Fulfillment)) - b2i(Unresolved(prev.Status, prev.Fulfillment)); d != 0 {
		deltas[datamodel.UnresolvedOrdersAttr] = d
	}
	if d := b2i(ChannelFulfilling(o.Status, o.Fulfillment)) - b2i(ChannelFulfilling(prev.Status, prev.Fulfillment)); d != 0 {
		deltas[datamodel.ChannelFulfillmentsAttr] = d
	}
	if len(closing) > 0 {
		deltas[datamodel.OpenConflictsAttr] = -1
	}
	if len(deltas) > 0 {
		cond := store.Cond{Exists: true}
		for attr, d := range deltas {
			if d < 0 {
				cond.Bounds = append(cond.Bounds, store.Bound{Attr: attr, Cmp: store.GE, Value: -d})
			}
		}
		ops = append(ops, store.Add(datamodel.ConnectionKey(vendorID, o.ConnectionID), deltas, 0, cond))
	}
	ops = append(ops, stockOps...)
	explain := func(*store.ConditionError) error {
		read := func() (Order, int64, error) {
			cur, err := s.Get(ctx, vendorID, id)
			return cur, cur.Version, err
		}
		return errs.Raced(read, expected, versionConflict, func(Order) error {
			// The order did not move, so the stock did: decide again.
			return idempotency.Retry(errs.E(errs.CodeExternalOrderState, "the order's stock changed concurrently; read it and retry"))
		})
	}
	return store.Prepared[View]{View: o, Ops: ops, Explain: explain}, nil
}

// closeConflict closes the conflict of an unreservable order that moves
// on (reserved, rejected or cancelled): the service resolves it, since the
// order's own transition settled the disagreement. It returns no
// operations when there is nothing to close; the caller takes the conflict
// off the connection's counter in its own write of the connection.
func (s Service) closeConflict(ctx context.Context, prev Order, action string, now time.Time) ([]store.Op, error) {
	if prev.Status != StatusUnreservable || prev.ConflictID == nil {
		return nil, nil
	}
	c, err := s.Conflicts.Get(ctx, prev.VendorID, *prev.ConflictID)
	if errs.Is(err, errs.CodeNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if c.Status != conflict.StatusOpen {
		return nil, nil
	}
	_, ops, err := conflict.Close(now, c, conflict.StatusResolved, "the external order was "+pastTense[action], conflict.Actor{Type: conflict.ActorSystem})
	return ops, err
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
