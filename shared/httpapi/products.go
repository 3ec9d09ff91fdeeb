package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// Products is the Products group.
var Products = Group{Name: "products", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ProductsRead}, []auth.Scope{auth.ProductsWrite}
	base := "/vendors/{vendor_id}/products"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listProducts", Scopes: read, PageAhead: pageAhead(datamodel.ProductPrefix, false), Handle: s.listProducts},
		{Method: http.MethodPost, Path: base, Operation: "createProduct", Scopes: write,
			ReadAhead: aheadOf(aheadAuthority, aheadReceipt("products.create", idempotency.ProductKeyPattern)), Handle: s.createProduct},
		{Method: http.MethodGet, Path: base + "/{product_id}", Operation: "getProduct", Scopes: read, ReadAhead: aheadOf(aheadProduct), Handle: s.getProduct},
		{Method: http.MethodPatch, Path: base + "/{product_id}", Operation: "updateProduct", Scopes: write, ReadAhead: aheadOf(aheadProduct, aheadAuthority), Handle: s.updateProduct},
		{Method: http.MethodPost, Path: base + "/{product_id}/publish", Operation: "publishProduct", Scopes: write, ReadAhead: aheadOf(aheadProduct, aheadAuthority), Handle: s.transition(catalog.Publish)},
		{Method: http.MethodPost, Path: base + "/{product_id}/unpublish", Operation: "unpublishProduct", Scopes: write, ReadAhead: aheadOf(aheadProduct, aheadAuthority), Handle: s.transition(catalog.Unpublish)},
		{Method: http.MethodPost, Path: base + "/{product_id}/archive", Operation: "archiveProduct", Scopes: write, ReadAhead: aheadOf(aheadProduct, aheadAuthority), Handle: s.transition(catalog.Archive)},
		{Method: http.MethodPost, Path: base + "/{product_id}/restore", Operation: "restoreProduct", Scopes: write, ReadAhead: aheadOf(aheadProduct, aheadAuthority), Handle: s.transition(catalog.Restore)},
	}
}}

func (s *Server) listProducts(ctx context.Context, c *Call) error {
	pr, err := c.PageParams(ctx, "products", "")
	if err != nil {
		return err
	}
	ps, err := c.catalog().List(ctx, c.Principal.Vendor.ID, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, store.MapPage(ps, catalog.Product.View))
}

func (s *Server) getProduct(ctx context.Context, c *Call) error {
	b, err := c.catalog().EncodedViewOf(ctx, c.Principal.Vendor.ID, c.R.PathValue("product_id"))
	if err != nil {
		return err
	}
	c.encodedData(ctx, http.StatusOK, b)
	return nil
}

func (s *Server) createProduct(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, catalog.ParseCreate)
	if err != nil {
		return err
	}
	return c.Mutate(ctx, "products.create", idempotency.ProductKeyPattern, body, func(ctx context.Context) (idempotency.Mutation, error) {
		p, err := c.catalog().PrepareCreate(ctx, c.Principal.Vendor.ID, in)
		if err != nil {
			return idempotency.Mutation{}, err
		}
		return idempotency.Mutation{Ops: p.Ops, Status: http.StatusCreated, Body: Envelope(p.View.View()), Explain: p.Explain}, nil
	})
}

func (s *Server) updateProduct(ctx context.Context, c *Call) error {
	_, in, err := parsed(c, 0, catalog.ParseUpdate)
	if err != nil {
		return err
	}
	p, err := c.catalog().Update(ctx, c.Principal.Vendor.ID, c.R.PathValue("product_id"), in)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, p.View())
}

func (s *Server) transition(action string) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		_, t, err := parsed(c, 0, catalog.ParseTransition)
		if err != nil {
			return err
		}
		p, err := c.catalog().Transition(ctx, c.Principal.Vendor.ID, c.R.PathValue("product_id"), action, t)
		if err != nil {
			return err
		}
		return c.Data(ctx, http.StatusOK, p.View())
	}
}
