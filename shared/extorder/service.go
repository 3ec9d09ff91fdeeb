package extorder

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/conflict"
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
}

func notFound() error { return errs.E(errs.CodeNotFound, "external order not found") }

func unavailable(err error) error {
	return errs.Unavailablef(err, "external order state could not be read safely")
}

func versionConflict(current int64) error {
	return errs.Ef(errs.CodeExternalOrderVersion, "expected_version: the external order is at version %d; read it again and retry", current)
}

func stateConflict(status, verb string) error {
	return errs.Ef(errs.CodeExternalOrderState, "a %s external order cannot be %s", status, verb)
}

// stock is what a plan read: per product, its item and decoded product.
type stock struct {
	items    map[string]store.Item
	products map[string]catalog.Product
}

func (s Service) readStock(ctx context.Context, vendorID string, qs []itemQty) (stock, error) {
	st := stock{items: map[string]store.Item{}, products: map[string]catalog.Product{}}
	var keys []store.Key
	var pids []string
	for _, q := range qs {
		if _, ok := st.items[q.ProductID]; ok {
			continue
		}
		st.items[q.ProductID] = store.Item{}
		keys = append(keys, datamodel.ProductKey(vendorID, q.ProductID))
		pids = append(pids, q.ProductID)
	}
	if len(keys) == 0 {
		return st, nil
	}
	got, err := s.Store.GetMany(ctx, keys)
	if err != nil {
		return stock{}, unavailable(err)
	}
	for i, it := range got {
		st.items[pids[i]] = it
		if it.PK == "" {
			continue
		}
		p, err := catalog.Decode(it)
		if err != nil {
			return stock{}, unavailable(err)
		}
		st.products[pids[i]] = p
	}
	return st, nil
}

// productOps groups per-product deltas and bounds so that one product is
// written once per transaction.
type productOps struct {
	order  []string
	deltas map[string]map[string]int64
	bounds map[string][]store.Bound
}

func newProductOps() *productOps {
	return &productOps{deltas: map[string]map[string]int64{}, bounds: map[string][]store.Bound{}}
}

func (p *productOps) add(pid string, deltas map[string]int64, bounds ...store.Bound) {
	if _, ok := p.deltas[pid]; !ok {
		p.order = append(p.order, pid)
		p.deltas[pid] = map[string]int64{}
	}
	for k, v := range deltas {
		p.deltas[pid][k] += v
	}
	p.bounds[pid] = append(p.bounds[pid], bounds...)
}

func (p *productOps) ops(vendorID string, check bool) []store.Op {
	out := make([]store.Op, 0, len(p.order))
	for _, pid := range p.order {
		k := datamodel.ProductKey(vendorID, pid)
		if check {
			out = append(out, store.Check(k, store.Cond{Exists: true, Bounds: p.bounds[pid]}))
		} else {
			out = append(out, store.Add(k, p.deltas[pid], 0, store.Cond{Bounds: p.bounds[pid]}))
		}
	}
	return out
}

// hold plans holding every line of o at once. It returns the operations
// (product writes and effects) when all lines can be held; otherwise the
// problem per line and operations that check the stock it judged on
// (item versions, or absent products), so the verdict is exact too.
func (s Service) hold(ctx context.Context, o Order, now time.Time) (ops []store.Op, problems map[string]string, err error) {
	qs, _ := merged(o.Lines)
	st, err := s.readStock(ctx, o.VendorID, qs)
	if err != nil {
		return nil, nil, err
	}
	problems = map[string]string{}
	for _, l := range o.Lines {
		if _, _, ok := catalog.ParseInventoryItemID(l.InventoryItemID); !ok {
			problems[l.InventoryItemID] = ProblemNotFound
		}
	}
	po := newProductOps()
	var effects []store.Op
	var absent []string
	for _, q := range qs {
		p, ok := st.products[q.ProductID]
		if !ok {
			problems[q.ItemID] = ProblemNotFound
			absent = append(absent, q.ProductID)
			continue
		}
		v, hasVar := p.VariationBySeq(q.Seq)
		if (p.Kind == catalog.KindSimple && q.Seq != 0) || (p.Kind == catalog.KindVariable && !hasVar) {
			problems[q.ItemID] = ProblemNotFound
			po.add(q.ProductID, nil)
			continue
		}
		b, ok := inventory.BucketsOf(st.items[q.ProductID].Nums, q.Seq)
		if !ok {
			return nil, nil, unavailable(errors.New("extorder: inventory buckets missing"))
		}
		vb := store.Bound{Attr: datamodel.ItemVersionAttr(q.Seq), Cmp: store.EQ, Value: b.Version}
		switch {
		case hasVar && v.Status == catalog.VariationRetired:
			problems[q.ItemID] = ProblemRetired
		case p.Status == catalog.StatusArchived:
			problems[q.ItemID] = ProblemArchived
		case b.Available < q.Quantity:
			problems[q.ItemID] = ProblemInsufficientStock
		}
		po.add(q.ProductID, map[string]int64{datamodel.ReservedAttr(q.Seq): q.Quantity, datamodel.AvailableAttr(q.Seq): -q.Quantity, datamodel.ItemVersionAttr(q.Seq): 1},
			vb, store.Bound{Attr: datamodel.AvailableAttr(q.Seq), Cmp: store.GE, Value: q.Quantity})
		id := o.ID
		_, effect, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: o.VendorID, ProductID: q.ProductID, InventoryItemID: q.ItemID,
			Before: stockeffect.Buckets{OnHand: b.OnHand, Reserved: b.Reserved}, ReservedDelta: q.Quantity, Version: b.Version + 1,
			Cause: stockeffect.Cause{Type: stockeffect.CauseExternalOrder, ID: &id, Action: stockeffect.ActionReserved}})
		if err != nil {
			return nil, nil, err
		}
		effects = append(effects, effect)
	}
	if len(problems) == 0 {
		return append(po.ops(o.VendorID, false), effects...), nil, nil
	}
	// Unreservable: check the versions it judged on instead of moving stock.
	for pid, b := range po.bounds {
		var keep []store.Bound
		for _, x := range b {
			if x.Cmp == store.EQ {
				keep = append(keep, x)
			}
		}
		po.bounds[pid] = keep
	}
	ops = po.ops(o.VendorID, true)
	sort.Strings(absent)
	for i, pid := range absent {
		if i > 0 && absent[i-1] == pid {
			continue
		}
		ops = append(ops, store.Check(datamodel.ProductKey(o.VendorID, pid), store.IfAbsent()))
	}
	return ops, problems, nil
}

// settle plans consuming (commit) or returning (release) the holds of a
// reserved order.
func (s Service) settle(ctx context.Context, o Order, commit bool, now time.Time) ([]store.Op, error) {
	qs, _ := merged(o.Lines)
	st, err := s.readStock(ctx, o.VendorID, qs)
	if err != nil {
		return nil, err
	}
	po := newProductOps()
	var effects []store.Op
	for _, q := range qs {
		b, ok := inventory.BucketsOf(st.items[q.ProductID].Nums, q.Seq)
		if !ok {
			return nil, unavailable(errors.New("extorder: inventory buckets of a held item missing"))
		}
		d := map[string]int64{datamodel.ReservedAttr(q.Seq): -q.Quantity, datamodel.ItemVersionAttr(q.Seq): 1}
		action, onHand := stockeffect.ActionReleased, int64(0)
		if commit {
			d[datamodel.OnHandAttr(q.Seq)] = -q.Quantity
			action, onHand = stockeffect.ActionCommitted, -q.Quantity
		} else {
			d[datamodel.AvailableAttr(q.Seq)] = q.Quantity
		}
		po.add(q.ProductID, d, store.Bound{Attr: datamodel.ItemVersionAttr(q.Seq), Cmp: store.EQ, Value: b.Version},
			store.Bound{Attr: datamodel.ReservedAttr(q.Seq), Cmp: store.GE, Value: q.Quantity})
		id := o.ID
		_, effect, err := stockeffect.Op(ctx, now, stockeffect.Movement{VendorID: o.VendorID, ProductID: q.ProductID, InventoryItemID: q.ItemID,
			Before: stockeffect.Buckets{OnHand: b.OnHand, Reserved: b.Reserved}, OnHandDelta: onHand, ReservedDelta: -q.Quantity, Version: b.Version + 1,
			Cause: stockeffect.Cause{Type: stockeffect.CauseExternalOrder, ID: &id, Action: action}})
		if err != nil {
			return nil, err
		}
		effects = append(effects, effect)
	}
	return append(po.ops(o.VendorID, false), effects...), nil
}

func setProblems(o *Order, problems map[string]string) {
	for i := range o.Lines {
		o.Lines[i].Problem = nil
		if p, ok := problems[o.Lines[i].InventoryItemID]; ok {
			p := p
			o.Lines[i].Problem = &p
		}
	}
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
	id, err := conflict.Service{Store: s.Store, Clock: s.Clock}.Record(ctx, vendorID, conflict.Draft{
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
		return store.Prepared[View]{}, unavailable(err)
	}
	if items[0].PK == "" {
		return store.Prepared[View]{}, errs.E(errs.CodeNotFound, "connection not found")
	}
	fp := in.Fingerprint()
	if items[1].PK != "" {
		var e keyEntry
		if err := jsonUnmarshal(items[1].Data, &e); err != nil {
			return store.Prepared[View]{}, unavailable(err)
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
		return store.Prepared[View]{}, unavailable(err)
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
		return Order{}, notFound()
	}
	return store.Read(ctx, s.Store, datamodel.ExternalOrderKey(vendorID, id), Decode, notFound(), unavailable)
}

// Filter narrows a list.
type Filter struct{ ConnectionID, Status string }

// List reads a page of orders, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (views []View, lastKey string, more bool, err error) {
	if after != "" && !strings.HasPrefix(after, datamodel.ExternalOrderPrefix) {
		return nil, "", false, errs.E(errs.CodeInvalidCursor, "page_after: the cursor is not for this list")
	}
	keep := func(o Order) bool {
		return (f.Status == "" || o.Status == f.Status) && (f.ConnectionID == "" || o.ConnectionID == f.ConnectionID)
	}
	views, lastKey, more, err = store.Page(ctx, s.Store, store.Query{PK: datamodel.ExternalOrderKey(vendorID, "").PK, Prefix: datamodel.ExternalOrderPrefix, After: after}, limit, Decode, keep)
	if err != nil {
		return nil, "", false, unavailable(err)
	}
	return views, lastKey, more, nil
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
		cur, err := s.Get(ctx, vendorID, id)
		if err != nil {
			return err
		}
		if cur.Version != expected {
			return versionConflict(cur.Version)
		}
		// The order did not move, so the stock did: decide again.
		return idempotency.Retry(errs.E(errs.CodeExternalOrderState, "the order's stock changed concurrently; read it and retry"))
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
	c, err := conflict.Service{Store: s.Store, Clock: s.Clock}.Get(ctx, prev.VendorID, *prev.ConflictID)
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
