package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/listing"
	"github.com/moku/sellerapi/shared/store"
)

// Listings is the Listings group; listings are part of a connection's
// configuration, so they take the connections scopes.
var Listings = Group{Name: "listings", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ConnectionsRead}, []auth.Scope{auth.ConnectionsWrite}
	base := "/vendors/{vendor_id}/listings"
	one := base + "/{listing_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listListings", Scopes: read, PageAhead: pageAhead(datamodel.ListingPrefix, false), Handle: s.listListings},
		{Method: http.MethodPost, Path: base, Operation: "createListing", Scopes: write, Handle: s.createListing},
		{Method: http.MethodGet, Path: one, Operation: "getListing", Scopes: read, Handle: s.getListing},
		{Method: http.MethodPatch, Path: one, Operation: "updateListing", Scopes: write, Handle: s.updateListing},
		{Method: http.MethodPost, Path: one + "/activate", Operation: "activateListing", Scopes: write, Handle: s.listingTransition(listing.Activate)},
		{Method: http.MethodPost, Path: one + "/pause", Operation: "pauseListing", Scopes: write, Handle: s.listingTransition(listing.Pause)},
		{Method: http.MethodPost, Path: one + "/resume", Operation: "resumeListing", Scopes: write, Handle: s.listingTransition(listing.Resume)},
		{Method: http.MethodPost, Path: one + "/end", Operation: "endListing", Scopes: write, Handle: s.listingTransition(listing.End)},
	}
}}

func (s *Server) listListings(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := listing.Filter{ConnectionID: q.Get("connection_id"), ProductID: q.Get("product_id"), Status: q.Get("status")}
	return listedBy(ctx, c, "listings", "connection_id="+f.ConnectionID+"&product_id="+f.ProductID+"&status="+f.Status, f, c.listings().List)
}

func (s *Server) getListing(ctx context.Context, c *Call) error {
	return getByID(ctx, c, "listing_id", c.listings().Get)
}

func (s *Server) createListing(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, listing.ParseCreate)
	if err != nil {
		return err
	}
	return c.Mutate(ctx, "listings.create", idempotency.ConnectionKeyPattern, body, answer(http.StatusCreated, func(ctx context.Context) (store.Prepared[listing.View], error) {
		return c.listings().PrepareCreate(ctx, c.Principal.Vendor.ID, in)
	}))
}

func (s *Server) updateListing(ctx context.Context, c *Call) error {
	_, in, err := parsed(c, 0, listing.ParseUpdate)
	if err != nil {
		return err
	}
	return apply(ctx, c, c.store(), "listing", func(ctx context.Context) (store.Prepared[listing.View], error) {
		return c.listings().PrepareUpdate(ctx, c.Principal.Vendor.ID, c.R.PathValue("listing_id"), in)
	})
}

func (s *Server) listingTransition(action string) func(context.Context, *Call) error {
	return applyTransition((*Call).listings, "listing", "listing_id", action, listing.Service.PrepareTransition)
}
