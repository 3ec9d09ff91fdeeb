package inventory

import (
	"context"

	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/errs"
)

// Fence is the rule for an adjustment refused because it claimed a
// connection that does not master the Stock Pool, a connector writing
// stock as if it were the source: the refusal is recorded as an
// authority_fence conflict of that connection (one open per connection
// and item, so a connector that keeps retrying cannot fill the list) and
// the returned refusal names it. A claim of an unknown connection is only
// a wrong request, so is any other refusal: they come back as they are,
// and so does the refusal when the conflict cannot be recorded. source is
// the work that applied the claim: a refused request (the HTTP path) or a
// bulk operation's record (docs/decisions.md, "The authority fence in
// the inventory package").
func (s Service) Fence(ctx context.Context, vendorID, itemID string, a Adjustment, source conflict.Source, refusal error) error {
	if errs.As(refusal).Code != errs.CodeAuthorityMismatch || a.Authority == nil {
		return refusal
	}
	claimed := *a.Authority
	m, err := s.Authority.Masters(ctx, vendorID)
	if err != nil || m.Inventory != nil && *m.Inventory == claimed {
		return refusal
	}
	if _, _, _, err := s.Connections.Get(ctx, vendorID, claimed); err != nil {
		return refusal
	}
	id, err := s.Conflicts.Record(ctx, vendorID, conflict.Draft{Type: conflict.TypeAuthorityFence, ConnectionID: &claimed,
		Resource:     conflict.Resource{Type: conflict.ResourceInventoryItem, ID: itemID},
		ServiceValue: map[string]any{"inventory_master_connection_id": m.Inventory},
		ChannelValue: map[string]any{"authority_connection_id": claimed, "target_on_hand": a.TargetOnHand},
		Detail:       "the connection wrote stock as the Stock Pool's source, which it is not; its connector needs the current vendor authority",
		Source:       source})
	if err != nil {
		return refusal
	}
	e := errs.As(refusal)
	return errs.Ef(e.Code, "%s; recorded as conflict %s", e.Detail, id)
}
