package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/sellerorder"
)

// SellerOrders is the Seller orders group: the projection of committed
// moku-fulfilled external orders. Orders take the reservations scopes.
var SellerOrders = Group{Name: "seller-orders", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ReservationsRead}, []auth.Scope{auth.ReservationsWrite}
	base := "/vendors/{vendor_id}/seller-orders"
	one := base + "/{seller_order_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listSellerOrders", Scopes: read, PageAhead: pageAhead(datamodel.SellerOrderPrefix, false), Handle: s.listSellerOrders},
		{Method: http.MethodGet, Path: one, Operation: "getSellerOrder", Scopes: read, Handle: s.getSellerOrder},
		{Method: http.MethodPost, Path: one + "/mark-shipped", Operation: "markSellerOrderShipped", Scopes: write, Handle: s.sellerOrderTransition(sellerorder.MarkShipped)},
		{Method: http.MethodPost, Path: one + "/cancel", Operation: "cancelSellerOrder", Scopes: write, Handle: s.sellerOrderTransition(sellerorder.Cancel)},
	}
}}

func (s *Server) listSellerOrders(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := sellerorder.Filter{ConnectionID: q.Get("connection_id"), Status: q.Get("status")}
	return listedBy(ctx, c, "seller-orders", "connection_id="+f.ConnectionID+"&status="+f.Status, f, c.sellerorders().List)
}

func (s *Server) getSellerOrder(ctx context.Context, c *Call) error {
	return getByID(ctx, c, "seller_order_id", c.sellerorders().Get)
}

func (s *Server) sellerOrderTransition(action string) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		body, err := c.Body(0)
		if err != nil {
			return err
		}
		in, err := sellerorder.ParseInput(body, action)
		if err != nil {
			return err
		}
		o, err := c.sellerorders().Transition(ctx, c.Principal.Vendor.ID, c.R.PathValue("seller_order_id"), action, in)
		if err != nil {
			return err
		}
		return c.Data(ctx, http.StatusOK, o)
	}
}
