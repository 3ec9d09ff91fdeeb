package pipeline

import (
	"context"
	"sync/atomic"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// Receivers is what a write's admission read of its vendor's subscription
// counts (datamodel.SubscriptionCountKey): whether an event of a type
// could have a receiver. Pending.Mark writes no marker for an event that
// could have none. The zero Receivers knows nothing: every type could.
type Receivers struct {
	// vendorID is the vendor whose counts were read; an event of another
	// vendor's partition could have receivers.
	vendorID string
	// nums are the count item's numeric attributes; known is false unless
	// the item's per-type counts are complete (or it is absent: no
	// subscription at all).
	nums  map[string]int64
	known bool
	// changed is set once a transaction of the request wrote the count
	// item: from then on, what was read says nothing.
	changed *atomic.Bool
}

// ReceiversOf reads vendorID's count item it, as a batch read answers it
// (a zero PK: absent, the vendor has never had a subscription).
func ReceiversOf(vendorID string, it store.Item) Receivers {
	r := Receivers{vendorID: vendorID, changed: new(atomic.Bool)}
	switch {
	case it.PK == "":
		r.known = true
	case it.Nums[datamodel.SubscriptionTypedAttr] == 1:
		r.nums, r.known = it.Nums, true
	}
	return r
}

// Could reports whether an event of typ in partition pk could have a
// receiver: true unless the counts are complete and count no
// subscription to typ, nor to every type.
func (r Receivers) Could(pk, typ string) bool {
	if !r.known || pk != datamodel.VendorPartition(r.vendorID) || r.changed == nil || r.changed.Load() {
		return true
	}
	return r.nums[datamodel.SubscriptionTypeAttr(typ)] != 0 || r.nums[datamodel.SubscriptionTypeAttr("*")] != 0
}

// note forgets what was read once ops write the count item: a
// transaction that adds or removes a subscription, or changes its types,
// marks its own events, and so do the request's later ones.
func (r Receivers) note(ops []store.Op) {
	if r.changed == nil {
		return
	}
	k := datamodel.SubscriptionCountKey(r.vendorID)
	for _, op := range ops {
		if op.Kind != store.OpCheck && op.Item.Key() == k {
			r.changed.Store(true)
			return
		}
	}
}

// receiversKey is the context key of a request's Receivers.
type receiversKey struct{}

// WithReceivers returns ctx carrying r, for the transactions made with it.
func WithReceivers(ctx context.Context, r Receivers) context.Context {
	return context.WithValue(ctx, receiversKey{}, r)
}

// ReceiversFrom returns the Receivers ctx carries; the zero Receivers
// (every type could) when it carries none.
func ReceiversFrom(ctx context.Context) Receivers {
	r, _ := ctx.Value(receiversKey{}).(Receivers)
	return r
}
