package extorder

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
)

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
		return stock{}, externalOrderErrors.Unavailable(err)
	}
	for i, it := range got {
		st.items[pids[i]] = it
		if it.PK == "" {
			continue
		}
		p, err := catalog.Decode(it)
		if err != nil {
			return stock{}, externalOrderErrors.Unavailable(err)
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
			return nil, nil, externalOrderErrors.Unavailable(errors.New("extorder: inventory buckets missing"))
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
			return nil, externalOrderErrors.Unavailable(errors.New("extorder: inventory buckets of a held item missing"))
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
