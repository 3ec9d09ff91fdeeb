package syncjob

import (
	"slices"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
)

// guards are the conditions every verdict is written under: the
// connection and the authority as read, and the product as read (or its
// absence). A verdict that writes one of these items itself replaces its
// guard with a write under the same condition.
type guards struct {
	conn, authority, product *store.Op
}

func (g guards) ops() []store.Op {
	var out []store.Op
	for _, op := range []*store.Op{g.conn, g.authority, g.product} {
		if op != nil {
			out = append(out, *op)
		}
	}
	return out
}

func newGuards(j Job, st state, productID string, seq int) guards {
	conn := store.Check(datamodel.ConnectionKey(j.VendorID, j.ConnectionID), store.IfVersion(st.conn.Version))
	auth := store.Check(datamodel.AuthorityKey(j.VendorID), store.IfAbsent())
	if st.authItem.PK != "" {
		auth = store.Check(datamodel.AuthorityKey(j.VendorID), store.IfVersion(st.authItem.Version))
	}
	g := guards{conn: &conn, authority: &auth}
	if productID == "" {
		return g
	}
	prod := store.Check(datamodel.ProductKey(j.VendorID, productID), store.IfAbsent())
	if st.hasProduct {
		cond := store.IfVersion(st.prodItem.Version)
		if seq >= 0 {
			// An inventory verdict also rests on the item's buckets.
			if b, ok := inventory.BucketsOf(st.prodItem.Nums, seq); ok {
				cond.Bounds = []store.Bound{{Attr: datamodel.ItemVersionAttr(seq), Cmp: store.EQ, Value: b.Version}}
			}
		}
		prod = store.Check(datamodel.ProductKey(j.VendorID, productID), cond)
	}
	g.product = &prod
	return g
}

// mergeGuards joins the guards of a batch into one operation per key: the
// same key must carry the same condition but for its bounds, which add
// up. Guards that disagree (the state moved between two reads) are not ok.
func mergeGuards(gs []guards) ([]store.Op, bool) {
	var out []store.Op
	at := map[store.Key]int{}
	for _, g := range gs {
		for _, op := range g.ops() {
			k := op.Item.Key()
			i, seen := at[k]
			if !seen {
				at[k] = len(out)
				op.Cond.Bounds = slices.Clone(op.Cond.Bounds)
				out = append(out, op)
				continue
			}
			prev := &out[i]
			if prev.Kind != store.OpCheck || op.Kind != store.OpCheck || prev.Cond.Absent != op.Cond.Absent ||
				prev.Cond.HasVersion != op.Cond.HasVersion || prev.Cond.Version != op.Cond.Version {
				return nil, false
			}
			for _, b := range op.Cond.Bounds {
				if !slices.Contains(prev.Cond.Bounds, b) {
					prev.Cond.Bounds = append(prev.Cond.Bounds, b)
				}
			}
		}
	}
	return out, true
}
