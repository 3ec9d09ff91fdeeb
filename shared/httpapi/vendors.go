package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/openapi"
	"github.com/moku/sellerapi/shared/openapi/reference"
)

// Vendors is the Vendors group, with the public contract and error catalog.
var Vendors = Group{Name: "vendors", Routes: func(s *Server) []Route {
	doc, docErr := openapi.Document(s.deps.Config.BaseURL)
	page, pageErr := reference.HTML(doc)
	return []Route{
		{Method: http.MethodGet, Path: "/docs", Operation: "getDocs", Handle: func(ctx context.Context, c *Call) error {
			if err := errors.Join(docErr, pageErr); err != nil {
				return err
			}
			c.page(http.StatusOK, page)
			return nil
		}},
		{Method: http.MethodGet, Path: "/openapi.json", Operation: "getOpenAPI", Handle: func(ctx context.Context, c *Call) error {
			if docErr != nil {
				return docErr
			}
			c.raw(ctx, http.StatusOK, doc)
			return nil
		}},
		{Method: http.MethodGet, Path: "/errors", Operation: "listErrorCodes", Handle: s.listErrorCodes},
		{Method: http.MethodGet, Path: "/vendors", Operation: "listVendors", Scopes: []auth.Scope{auth.VendorsRead}, Handle: s.listVendors},
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}", Operation: "getVendor", Scopes: []auth.Scope{auth.VendorsRead}, Handle: s.getVendor},
	}
}}

// listVendors answers with the one vendor a personal access token is bound
// to; the list shape stays for future multi-vendor grants.
func (s *Server) listVendors(ctx context.Context, c *Call) error {
	return c.Data(ctx, http.StatusOK, []account.View{c.Principal.Vendor.View()})
}

// getVendor answers with the path's vendor, already read and granted by
// authentication.
func (s *Server) getVendor(ctx context.Context, c *Call) error {
	// The vendor's item admission read and checked, its view kept encoded.
	if c.view.gate != nil {
		if it, ok := c.view.gate.ahead.get(datamodel.VendorKey(c.Principal.Vendor.ID)); ok && it.PK != "" {
			b, err := s.svc.Auth.Decoded.VendorView(it)
			if err != nil {
				return errs.Unavailablef(err, "the vendor could not be read")
			}
			c.encodedData(ctx, http.StatusOK, b)
			return nil
		}
	}
	return c.Data(ctx, http.StatusOK, c.Principal.Vendor.View())
}

type errorCodeInfo struct {
	Code   errs.Code `json:"code"`
	Status int       `json:"status"`
	Title  string    `json:"title"`
	Type   string    `json:"type"`
}

func (s *Server) listErrorCodes(ctx context.Context, c *Call) error {
	var out []errorCodeInfo
	for _, i := range errs.Catalog() {
		out = append(out, errorCodeInfo{Code: i.Code, Status: StatusOf(i.Kind), Title: i.Title,
			Type: s.deps.Config.ErrorsURL + "#" + i.Code.Slug()})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Code < out[b].Code })
	return c.Data(ctx, http.StatusOK, out)
}
