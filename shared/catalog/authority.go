package catalog

import (
	"context"
	"fmt"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// Masters are the current source-of-truth owners of a vendor's Catalog,
// base price and default Stock Pool; nil means the service itself.
type Masters struct {
	Catalog   *string
	BasePrice *string
	Inventory *string
	// Fence, when set, is the condition that the authority record is still
	// as read. A write decided on these masters carries it in its
	// transaction, so it cannot commit after the domain changed hands.
	Fence *store.Op
}

// Fenced appends the masters' fence, if any, to ops.
func (m Masters) Fenced(ops []store.Op) []store.Op {
	if m.Fence == nil {
		return ops
	}
	return append(ops, *m.Fence)
}

// authorityMoved is the answer to a write whose fence failed: the masters
// changed between its read and its commit. It is worth a retry, which
// decides the write again on the new masters.
func authorityMoved() error {
	return idempotency.Retry(errs.E(errs.CodeAuthorityMismatch, "the vendor authority changed while the write was decided; read the vendor authority and retry"))
}

// Moved reports, after a write's conditions failed, whether the authority
// record changed since m was read; a read error counts as moved, so that
// the write is decided again rather than misexplained.
func Moved(ctx context.Context, a Authority, vendorID string, m Masters) error {
	if m.Fence == nil {
		return nil
	}
	cur, err := a.Masters(ctx, vendorID)
	if err != nil || cur.Fence == nil || cur.Fence.Cond.Absent != m.Fence.Cond.Absent || cur.Fence.Cond.Version != m.Fence.Cond.Version {
		return authorityMoved()
	}
	return nil
}

// Authority tells who masters a vendor's domains. The connections group
// provides the real one, derived from the connections' source roles.
type Authority interface {
	Masters(ctx context.Context, vendorID string) (Masters, error)
}

// ServiceOwned is the authority of a vendor with no source connections: the
// service masters everything.
type ServiceOwned struct{}

// Masters reports the service as master of every domain.
func (ServiceOwned) Masters(context.Context, string) (Masters, error) { return Masters{}, nil }

func same(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func describe(p *string) string {
	if p == nil {
		return "null (the service)"
	}
	return fmt.Sprintf("%q", *p)
}

// CheckBindings fails with 409 AUTHORITY_MISMATCH unless the asserted
// bindings equal the current Catalog and base-price masters.
func CheckBindings(m Masters, b Bindings) error {
	if !same(m.Catalog, b.Catalog) {
		return errs.Ef(errs.CodeAuthorityMismatch, "catalog_authority_connection_id: the Catalog authority is %s, not %s; read the vendor authority and retry", describe(m.Catalog), describe(b.Catalog))
	}
	if !same(m.BasePrice, b.BasePrice) {
		return errs.Ef(errs.CodeAuthorityMismatch, "base_price_authority_connection_id: the base-price authority is %s, not %s; read the vendor authority and retry", describe(m.BasePrice), describe(b.BasePrice))
	}
	return nil
}

// CheckInventoryBinding fails with 409 AUTHORITY_MISMATCH unless the
// asserted connection is the Stock Pool's current master.
func CheckInventoryBinding(m Masters, conn *string) error {
	if !same(m.Inventory, conn) {
		return errs.Ef(errs.CodeAuthorityMismatch, "authority_connection_id: the default Stock Pool's authority is %s, not %s; read the vendor authority and retry", describe(m.Inventory), describe(conn))
	}
	return nil
}
