package httpapi

import (
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/syncjob"
)

// A side door needs the scopes of the front door: whatever a request
// changes through a connection or a sync job, the token must be allowed to
// change directly. Inventory is the Inventory group's inventory.write;
// catalog and base price are the Products group's products.write.

// requireScope refuses the request with 403 unless the token has sc, the
// way admit refuses a route's own scopes.
func (c *Call) requireScope(sc auth.Scope, why string) error {
	if c.Principal.Token.Has(sc) {
		return nil
	}
	c.W.Header().Set("WWW-Authenticate", `Bearer realm="moku", error="insufficient_scope", scope="`+string(sc)+`"`)
	return errs.Ef(errs.CodeInsufficientScope, "This operation requires scope %s: %s.", sc, why)
}

// requireSourceScopes asks for the scope of every domain the roles claim
// as source: a connection made source of the Stock Pool can set stock, one
// made source of the catalog or base price can set products.
func (c *Call) requireSourceScopes(r connection.Roles) error {
	if r.Inventory == connection.Source {
		if err := c.requireScope(auth.InventoryWrite, "the roles make the connection the Stock Pool's source"); err != nil {
			return err
		}
	}
	if r.Catalog == connection.Source || r.BasePrice == connection.Source {
		if err := c.requireScope(auth.ProductsWrite, "the roles make the connection the source of the catalog or base price"); err != nil {
			return err
		}
	}
	return nil
}

// requireJobScope asks for the scope of the domain a sync job's verdicts
// may write: an inventory job sets on_hand, a price or catalog job
// products.
func (c *Call) requireJobScope(kind string) error {
	if kind == syncjob.KindInventory {
		return c.requireScope(syncjob.DomainScope(kind), "an inventory sync job can set stock")
	}
	return c.requireScope(syncjob.DomainScope(kind), "a "+kind+" sync job can change products")
}
