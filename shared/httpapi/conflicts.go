package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/datamodel"
)

// Conflicts is the Conflicts group: disagreements the service recorded
// instead of deciding them. They belong to a connection's reconciliation,
// so they take the connections scopes.
var Conflicts = Group{Name: "conflicts", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ConnectionsRead}, []auth.Scope{auth.ConnectionsWrite}
	base := "/vendors/{vendor_id}/conflicts"
	one := base + "/{conflict_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listConflicts", Scopes: read, PageAhead: pageAhead(datamodel.ConflictPrefix, false), Handle: s.listConflicts},
		{Method: http.MethodGet, Path: one, Operation: "getConflict", Scopes: read, Handle: s.getConflict},
		{Method: http.MethodPost, Path: one + "/resolve", Operation: "resolveConflict", Scopes: write, Handle: s.closeConflict(conflict.StatusResolved)},
		{Method: http.MethodPost, Path: one + "/dismiss", Operation: "dismissConflict", Scopes: write, Handle: s.closeConflict(conflict.StatusDismissed)},
	}
}}

func (s *Server) listConflicts(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := conflict.Filter{Status: q.Get("status"), Type: q.Get("type"), ConnectionID: q.Get("connection_id"), ResourceID: q.Get("resource_id")}
	return listedBy(ctx, c, "conflicts", "status="+f.Status+"&type="+f.Type+"&connection_id="+f.ConnectionID+"&resource_id="+f.ResourceID, f, c.conflicts().List)
}

func (s *Server) getConflict(ctx context.Context, c *Call) error {
	return getByID(ctx, c, "conflict_id", c.conflicts().Get)
}

// closeConflict resolves or dismisses a conflict. expected_version makes a
// repeat fail instead of closing twice, so no Idempotency-Key is needed.
func (s *Server) closeConflict(status string) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		_, in, err := parsed(c, 0, conflict.ParseClosing)
		if err != nil {
			return err
		}
		vendorID, id := c.Principal.Vendor.ID, c.R.PathValue("conflict_id")
		p, err := c.conflicts().PrepareClose(ctx, vendorID, id, status, in, c.Principal.Token.ID)
		if err != nil {
			return err
		}
		if err := c.conflicts().Store.Transact(ctx, p.Ops...); err != nil {
			return c.conflicts().Explain(ctx, vendorID, id, in.ExpectedVersion, err)
		}
		return c.Data(ctx, http.StatusOK, p.View)
	}
}
