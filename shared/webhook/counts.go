package webhook

import (
	"context"
	"errors"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// The vendor's count item (datamodel.SubscriptionCountKey) counts its
// subscriptions against the limit and, per event type, those that
// receive it, for the pending markers (pipeline.Receivers). Every
// transaction that adds, removes or retypes a subscription moves them.

// typeDeltas moves the per-type counts of the vendor's count item
// (datamodel.SubscriptionTypeAttr) from a subscription's event types from
// to its types to; a type in both moves nothing.
func typeDeltas(from, to []string) map[string]int64 {
	d := make(map[string]int64, len(from)+len(to)+2)
	for _, t := range from {
		d[datamodel.SubscriptionTypeAttr(t)]--
	}
	for _, t := range to {
		d[datamodel.SubscriptionTypeAttr(t)]++
	}
	for a, n := range d {
		if n == 0 {
			delete(d, a)
		}
	}
	return d
}

// recountAttempts bounds the recounts of a vendor whose subscriptions
// keep changing while it is recounted.
const recountAttempts = 4

// Recount completes the per-type counts of a count item written before
// them (no datamodel.SubscriptionTypedAttr), from the vendor's
// subscriptions as they are, and reports whether it did. The item is
// replaced on the conditions that its count of subscriptions is the one
// read before them and each of them is at the version read: a create,
// delete or type change that commits first fails the recount, which reads
// again; one that commits after moves the complete counts. A vendor
// without a count item, or with complete counts, is left as it is.
func (s Service) Recount(ctx context.Context, vendorID string) (bool, error) {
	for range recountAttempts {
		done, err := s.recount(ctx, vendorID)
		if !store.IsCondition(err) {
			return done, err
		}
	}
	return false, errs.E(errs.CodeConflict, "the webhook subscriptions kept changing while they were recounted; retry")
}

func (s Service) recount(ctx context.Context, vendorID string) (bool, error) {
	ck := datamodel.SubscriptionCountKey(vendorID)
	cit, err := s.Store.Get(ctx, ck)
	if errors.Is(err, store.ErrNotFound) || err == nil && cit.Nums[datamodel.SubscriptionTypedAttr] == 1 {
		return false, nil
	}
	if err != nil {
		return false, subscriptionErrors.Unavailable(err)
	}
	n := cit.Nums[datamodel.SubscriptionCountAttr]
	items, err := s.Store.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.SubscriptionPrefix, Limit: 100})
	if err != nil {
		return false, subscriptionErrors.Unavailable(err)
	}
	nums := map[string]int64{datamodel.SubscriptionCountAttr: n, datamodel.SubscriptionTypedAttr: 1}
	ops := []store.Op{store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: cit.Version, Nums: nums},
		store.Cond{Bounds: []store.Bound{{Attr: datamodel.SubscriptionCountAttr, Cmp: store.EQ, Value: n}}})}
	for _, it := range items {
		sub, err := Decode(it)
		if err != nil {
			return false, err
		}
		for a, d := range typeDeltas(nil, sub.EventTypes) {
			nums[a] += d
		}
		ops = append(ops, store.Check(it.Key(), store.IfVersion(it.Version)))
	}
	if err := s.Store.Transact(ctx, ops...); err != nil {
		if store.IsCondition(err) {
			return false, err
		}
		return false, errs.Unavailablef(err, "the webhook subscription counts could not be stored")
	}
	return true, nil
}
