package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/idempotency"
)

// The store plugin's operational routes besides sync jobs: it imports its
// store's orders, reads them back and reports its health, always for the
// pairing's own connection and only while pairing.Service.
// AuthorizeOperationalWrite allows it (accepted, reviewed, connection
// active).

// pluginScope is where a plugin's idempotency receipts live: its vendor
// and its pairing, apart from any token's.
func pluginScope(c *Call) idempotency.Scope {
	return idempotency.Scope{VendorID: c.Discovery.VendorID, TokenID: c.Discovery.PairingID}
}

// importPluginOrder imports an order of the plugin's store, exactly as the
// external-orders import does for a token.
func (s *Server) importPluginOrder(ctx context.Context, c *Call) error {
	connID, err := c.pairings().AuthorizeOperationalWrite(ctx, c.Discovery)
	if err != nil {
		return err
	}
	body, err := c.Body(0)
	if err != nil {
		return err
	}
	in, err := extorder.ParsePluginImport(body, connID)
	if err != nil {
		return err
	}
	return c.mutateIn(ctx, pluginScope(c), "external_orders.import", idempotency.ConnectionKeyPattern, body, s.prepareImport(c.extorders(), c.Discovery.VendorID, in))
}

// getPluginOrder reads an order of the pairing's connection; any other is 404.
func (s *Server) getPluginOrder(ctx context.Context, c *Call) error {
	connID, err := c.pairings().AuthorizeOperationalWrite(ctx, c.Discovery)
	if err != nil {
		return err
	}
	o, err := c.extorders().Get(ctx, c.Discovery.VendorID, c.R.PathValue("external_order_id"))
	if err != nil {
		return err
	}
	if o.ConnectionID != connID {
		return errs.Absent("external order")
	}
	return c.Data(ctx, http.StatusOK, o)
}

// reportPluginHealth records the plugin's health report on its connection.
func (s *Server) reportPluginHealth(ctx context.Context, c *Call) error {
	connID, err := c.pairings().AuthorizeOperationalWrite(ctx, c.Discovery)
	if err != nil {
		return err
	}
	return s.reportHealth(ctx, c, c.Discovery.VendorID, connID)
}

// prepareImport is the import mutation of both import routes.
func (s *Server) prepareImport(svc extorder.Service, vendorID string, in extorder.ImportInput) func(context.Context) (idempotency.Mutation, error) {
	return func(ctx context.Context) (idempotency.Mutation, error) {
		p, err := svc.PrepareImport(ctx, vendorID, in)
		if err != nil {
			return idempotency.Mutation{}, err
		}
		if len(p.Ops) == 0 {
			// The same order imported before: answer with it.
			return idempotency.Mutation{Status: http.StatusOK, Body: Envelope(p.View)}, nil
		}
		return idempotency.Mutation{Ops: p.Ops, Status: http.StatusCreated, Body: Envelope(p.View), Explain: p.Explain}, nil
	}
}
