package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/idempotency"
)

// ExternalOrders is the External orders group; orders hold and move stock
// like reservations do, so they take the reservations scopes.
var ExternalOrders = Group{Name: "external-orders", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ReservationsRead}, []auth.Scope{auth.ReservationsWrite}
	base := "/vendors/{vendor_id}/external-orders"
	one := base + "/{external_order_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listExternalOrders", Scopes: read, PageAhead: pageAhead(datamodel.ExternalOrderPrefix, false), Handle: s.listExternalOrders},
		{Method: http.MethodPost, Path: base, Operation: "importExternalOrder", Scopes: write, Handle: s.importExternalOrder},
		{Method: http.MethodGet, Path: one, Operation: "getExternalOrder", Scopes: read, Handle: s.getExternalOrder},
		{Method: http.MethodPost, Path: one + "/reserve", Operation: "reserveExternalOrder", Scopes: write, Handle: s.externalOrderTransition(extorder.Reserve)},
		{Method: http.MethodPost, Path: one + "/commit", Operation: "commitExternalOrder", Scopes: write, Handle: s.externalOrderTransition(extorder.Commit)},
		{Method: http.MethodPost, Path: one + "/cancel", Operation: "cancelExternalOrder", Scopes: write, Handle: s.externalOrderTransition(extorder.Cancel)},
		{Method: http.MethodPost, Path: one + "/reject", Operation: "rejectExternalOrder", Scopes: write, Handle: s.externalOrderTransition(extorder.Reject)},
		{Method: http.MethodPost, Path: one + "/fulfill", Operation: "fulfillExternalOrder", Scopes: write, Handle: s.externalOrderTransition(extorder.Fulfill)},
	}
}}

func (s *Server) listExternalOrders(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := extorder.Filter{ConnectionID: q.Get("connection_id"), Status: q.Get("status")}
	return listedBy(ctx, c, "external-orders", "connection_id="+f.ConnectionID+"&status="+f.Status, f, c.extorders().List)
}

func (s *Server) getExternalOrder(ctx context.Context, c *Call) error {
	return getByID(ctx, c, "external_order_id", c.extorders().Get)
}

func (s *Server) importExternalOrder(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, extorder.ParseImport)
	if err != nil {
		return err
	}
	return c.Mutate(ctx, "external_orders.import", idempotency.ConnectionKeyPattern, body, s.prepareImport(c.extorders(), c.Principal.Vendor.ID, in))
}

func (s *Server) externalOrderTransition(action string) func(context.Context, *Call) error {
	return applyTransition((*Call).extorders, "external order", "external_order_id", action, extorder.Service.PrepareTransition)
}
