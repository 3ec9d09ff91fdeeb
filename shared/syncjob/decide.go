package syncjob

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/jobrun"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
)

// state is what an item is decided on, with the versions its write is
// conditioned on.
type state struct {
	conn       connection.Connection
	authority  connection.Authority
	authItem   store.Item // zero PK when the vendor has no authority record
	product    catalog.Product
	prodItem   store.Item // zero PK when the product does not exist
	hasProduct bool
	// openConflict is the open conflict of the item's kind for the job's
	// connection and the item's resource, or "".
	openConflict string
}

// read loads the connection, the vendor authority, the item's product and
// the open-index entry of the item's conflict in one round trip.
func (w Worker) read(ctx context.Context, j Job, it Item, productID string) (state, error) {
	conn := j.ConnectionID
	keys := []store.Key{datamodel.ConnectionKey(j.VendorID, j.ConnectionID), datamodel.AuthorityKey(j.VendorID),
		datamodel.ProductKey(j.VendorID, productID), conflict.OpenKey(j.VendorID, conflictType(j.Kind), &conn, it.Resource)}
	items, err := w.Store.GetMany(ctx, keys)
	if err != nil {
		return state{}, errs.Unavailablef(err, "the sync state could not be read")
	}
	var st state
	if items[0].PK == "" {
		return state{}, errs.E(errs.CodeNotFound, "the job's connection no longer exists")
	}
	if st.conn, err = connection.Decode(items[0]); err != nil {
		return state{}, errs.Unavailablef(err, "the sync state could not be read")
	}
	if st.authItem = items[1]; st.authItem.PK != "" && len(st.authItem.Data) > 0 {
		if err := json.Unmarshal(st.authItem.Data, &st.authority); err != nil {
			return state{}, errs.Unavailablef(fmt.Errorf("syncjob: decode authority: %w", err), "the sync state could not be read")
		}
	}
	if items[2].PK != "" {
		st.prodItem, st.hasProduct = items[2], true
		if st.product, err = catalog.Decode(items[2]); err != nil {
			return state{}, errs.Unavailablef(err, "the sync state could not be read")
		}
	}
	if items[3].PK != "" {
		if st.openConflict, err = conflict.DecodeOpen(items[3]); err != nil {
			return state{}, errs.Unavailablef(err, "the sync state could not be read")
		}
	}
	return st, nil
}

// conflictType is the conflict a kind's master can open.
func conflictType(kind string) string {
	switch kind {
	case KindInventory:
		return conflict.TypeStockMismatch
	case KindPrice:
		return conflict.TypePriceMismatch
	}
	return conflict.TypeCatalogMismatch
}

// verdict is an item's decision and what writing it takes.
type verdict struct {
	status   string
	service  *Value
	code     errs.Code
	detail   string
	conflict string // the conflict type to open or link, for status conflict
	effectID *string
	ops      []store.Op
	guards   guards
}

// decide makes item i's verdict on the state as it is now, with the
// operations and guards its write needs. Errors are a stopping cause, a
// race (errRace) or a failure worth another attempt.
func (w Worker) decide(ctx context.Context, j Job, i int) (verdict, error) {
	it := j.Items[i]
	productID, seq := it.Resource.ID, -1
	if j.Kind == KindInventory {
		pid, n, ok := catalog.ParseInventoryItemID(it.Resource.ID)
		if !ok || len(it.Resource.ID) > MaxIDLength {
			return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "inventory item not found"}, nil
		}
		productID, seq = pid, n
	} else if !catalog.ValidProductID(productID) {
		return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "product not found"}, nil
	}
	st, err := w.read(ctx, j, it, productID)
	if err != nil {
		if jobrun.Transient(err) {
			return verdict{}, err
		}
		return verdict{}, stopping{err}
	}
	if err := Admissible(st.conn, j.Kind); errs.Is(err, errs.CodeConnectionState) {
		return verdict{}, stopping{err}
	}
	g := newGuards(j, st, productID, seq)
	var v verdict
	switch {
	case RoleOf(st.conn.Roles, j.Kind) == connection.Disabled:
		v = verdict{status: ItemFailed, code: errs.CodeSyncRoleDisabled,
			detail: fmt.Sprintf("the connection's %s role was disabled before this item was decided", domainName(j.Kind))}
	case j.Kind == KindInventory:
		v, err = w.decideInventory(ctx, j, it, st, seq, g)
	case j.Kind == KindPrice:
		v = decidePrice(j, it, st)
	default:
		v = decideCatalog(j, it, st)
	}
	if err != nil {
		return verdict{}, err
	}
	if v.guards == (guards{}) {
		v.guards = g
	}
	switch {
	case v.status == ItemConflict:
		err = w.openOrLink(ctx, j, it, st, &v)
	case st.openConflict != "" && masters(j, st) && (v.status == ItemInSync || v.status == ItemUpdated) && j.Kind != KindPrice:
		err = w.closeSettled(ctx, j, st, &v)
	}
	if err != nil {
		return verdict{}, err
	}
	return v, nil
}

// closeSettled resolves the open conflict of an item whose master now
// agrees with the service (in sync, or a count it may apply): the
// disagreement the conflict recorded is gone. It is closed by the service
// in the verdict's transaction and taken off the connection's count under
// the connection's guard. Price conflicts are about a whole product, so
// one variation that agrees does not close them.
func (w Worker) closeSettled(ctx context.Context, j Job, st state, v *verdict) error {
	c, err := w.Conflicts.Get(ctx, j.VendorID, st.openConflict)
	if err != nil {
		return err
	}
	if c.Status != conflict.StatusOpen {
		// Closed since its open index was read: decide again.
		return fmt.Errorf("%w: conflict %s is %s", errRace, c.ID, c.Status)
	}
	_, ops, err := conflict.Close(w.Clock.Now(), c, conflict.StatusResolved,
		fmt.Sprintf("sync job %s found the channel in agreement with the service", j.ID), conflict.Actor{Type: conflict.ActorSystem})
	if err != nil {
		return err
	}
	v.ops = append(v.ops, ops...)
	cond := store.IfVersion(st.conn.Version)
	cond.Bounds = []store.Bound{conflict.CountedBound()}
	uncount := store.Add(datamodel.ConnectionKey(j.VendorID, j.ConnectionID), conflict.CountDelta(-1), 0, cond)
	v.guards.conn = &uncount
	v.detail = strings.TrimPrefix(v.detail+"; ", "; ") + "resolves conflict " + c.ID
	return nil
}

// masters tells whether the job's connection masters the kind's domain.
func masters(j Job, st state) bool {
	m := masterOf(st.authority, j.Kind)
	return m != nil && *m == j.ConnectionID
}

// decideInventory compares a reported on_hand with the item.
func (w Worker) decideInventory(ctx context.Context, j Job, it Item, st state, seq int, g guards) (verdict, error) {
	if !st.hasProduct {
		return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "inventory item not found"}, nil
	}
	p := st.product
	if _, ok := p.VariationBySeq(seq); (p.Kind == catalog.KindSimple && seq != 0) || (p.Kind == catalog.KindVariable && !ok) {
		return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "inventory item not found"}, nil
	}
	b, ok := inventory.BucketsOf(st.prodItem.Nums, seq)
	if !ok {
		return verdict{}, errs.Unavailablef(fmt.Errorf("syncjob: buckets of %s are missing", it.Resource.ID), "inventory state could not be read safely")
	}
	if v, ok := p.VariationBySeq(seq); ok && v.Status == catalog.VariationRetired {
		return verdict{status: ItemFailed, code: errs.CodeInventoryItemRetired, detail: "the item's variation is retired; its stock stays at zero"}, nil
	}
	reported := *it.ChannelValue.OnHand
	if !masters(j, st) {
		sv := &Value{Available: new(b.Available)}
		if reported == b.Available {
			return verdict{status: ItemInSync, service: sv}, nil
		}
		return verdict{status: ItemChannelStale, service: sv,
			detail: fmt.Sprintf("the channel shows %d; the service has %d available: push the service's value", reported, b.Available)}, nil
	}
	sv := &Value{OnHand: new(b.OnHand), Reserved: new(b.Reserved), Available: new(b.Available)}
	switch {
	case reported == b.OnHand:
		return verdict{status: ItemInSync, service: sv}, nil
	case reported < b.Reserved:
		return verdict{status: ItemConflict, service: sv, conflict: conflict.TypeStockMismatch,
			detail: fmt.Sprintf("the channel reports on_hand %d, below the %d units the service holds reserved", reported, b.Reserved)}, nil
	}
	jobID, itemID, conn := j.ID, it.Resource.ID, j.ConnectionID
	adjusted, err := w.Inventory.PrepareAdjust(ctx, j.VendorID, itemID, inventory.Adjustment{
		TargetOnHand: reported, ExpectedVersion: b.Version, Authority: &conn,
		Cause: &stockeffect.Cause{Type: stockeffect.CauseSyncJob, ID: &jobID, Action: stockeffect.ActionReconciled, RecordKey: &itemID}})
	if err != nil {
		if jobrun.Transient(err) {
			return verdict{}, err
		}
		// The item or the authority moved since it was read: decide again.
		return verdict{}, fmt.Errorf("%w: %v", errRace, err)
	}
	// The adjustment's add is conditioned on the item's version and floor;
	// it stands for the product's guard. The job's authority guard stands
	// for the adjustment's fence on the same record.
	ops := slices.DeleteFunc(adjusted.Ops, func(op store.Op) bool { return op.Item.Key() == datamodel.AuthorityKey(j.VendorID) })
	g.product = nil
	return verdict{status: ItemUpdated, service: sv, ops: ops, guards: g,
		effectID: new(stockeffect.ID(itemID, b.Version+1))}, nil
}

// decidePrice compares a reported price with the product's or variation's.
func decidePrice(j Job, it Item, st state) verdict {
	if !st.hasProduct {
		return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "product not found"}
	}
	price := st.product.Price
	if it.VariationID != nil {
		found := false
		for _, v := range st.product.Variations {
			if v.ID == *it.VariationID {
				price, found = v.Price, true
			}
		}
		if !found {
			return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "the product has no such variation"}
		}
	}
	reported := *it.ChannelValue.Price
	sv := &Value{Price: new(price)}
	switch {
	case reported == price:
		return verdict{status: ItemInSync, service: sv}
	case masters(j, st):
		return verdict{status: ItemConflict, service: sv, conflict: conflict.TypePriceMismatch,
			detail: fmt.Sprintf("the channel, which masters the base price, reports %d; the service has %d: write the product with the channel's authority, then resolve", reported, price)}
	}
	return verdict{status: ItemChannelStale, service: sv,
		detail: fmt.Sprintf("the channel shows %d; the service's price is %d: push the service's value", reported, price)}
}

// decideCatalog compares a reported name and catalog status with the product's.
func decideCatalog(j Job, it Item, st state) verdict {
	if !st.hasProduct {
		return verdict{status: ItemFailed, code: errs.CodeNotFound, detail: "product not found"}
	}
	name, status := st.product.Name, st.product.CatalogStatus()
	sv := &Value{Name: new(name), CatalogStatus: new(status)}
	switch {
	case *it.ChannelValue.Name == name && *it.ChannelValue.CatalogStatus == status:
		return verdict{status: ItemInSync, service: sv}
	case masters(j, st):
		return verdict{status: ItemConflict, service: sv, conflict: conflict.TypeCatalogMismatch,
			detail: "the channel, which masters the catalog, reports another name or catalog status: write the product with the channel's authority, then resolve"}
	}
	return verdict{status: ItemChannelStale, service: sv, detail: "the channel shows another name or catalog status: push the service's values"}
}

// openOrLink makes v's conflict: the open conflict of the same (type,
// connection, resource) if there is one, else a new one opened in the
// verdict's transaction and counted on the connection under the
// connection's guard. A conflict opened meanwhile by another job fails the
// open index's condition, and the item is decided again.
func (w Worker) openOrLink(ctx context.Context, j Job, it Item, st state, v *verdict) error {
	conn, id := j.ConnectionID, st.openConflict
	if id != "" {
		// Linked while it stays open: its open index must still exist.
		k := conflict.OpenKey(j.VendorID, v.conflict, &conn, it.Resource)
		v.ops = append(v.ops, store.Check(k, store.Cond{Exists: true}))
		v.detail = fmt.Sprintf("%s (conflict %s is already open)", v.detail, id)
		v.effectID = nil
		v.code = ""
		v.conflict = id
		return nil
	}
	var service, channel any = v.service, it.ChannelValue
	if it.VariationID != nil {
		service = map[string]any{"variation_id": it.VariationID, "price": v.service.Price}
		channel = map[string]any{"variation_id": it.VariationID, "price": it.ChannelValue.Price}
	}
	o, err := conflict.PrepareOpen(w.Clock.Now(), j.VendorID, conflict.Draft{Type: v.conflict, ConnectionID: &conn, Resource: it.Resource,
		ServiceValue: service, ChannelValue: channel, Detail: v.detail, Source: conflict.Source{Type: conflict.SourceSyncJob, ID: j.ID}})
	if err != nil {
		return err
	}
	v.ops = append(v.ops, o.Ops...)
	// The count rides on the connection's guard: one action on that item.
	count := store.Add(datamodel.ConnectionKey(j.VendorID, conn), conflict.CountDelta(1), 0, store.IfVersion(st.conn.Version))
	v.guards.conn = &count
	v.conflict = o.Conflict.ID
	return nil
}

// apply records the verdict on its item.
func (v verdict) apply(r *Item) {
	r.Status, r.ServiceValue, r.StockEffectID = v.status, v.service, v.effectID
	r.Code, r.Detail, r.ConflictID = nil, nil, nil
	if v.code != "" {
		r.Code = new(string(v.code))
	}
	if v.detail != "" {
		r.Detail = new(v.detail)
	}
	if v.status == ItemConflict {
		r.ConflictID = new(v.conflict)
	}
}

// writes tells whether writing the verdict changes more than the job: an
// effect, a conflict opened or linked.
func (v verdict) writes() bool { return len(v.ops) > 0 || v.status == ItemConflict }
