package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// Connections is the Connections group, with the vendor authority.
var Connections = Group{Name: "connections", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ConnectionsRead}, []auth.Scope{auth.ConnectionsWrite}
	base := "/vendors/{vendor_id}/connections"
	one := base + "/{connection_id}"
	return []Route{
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/authority", Operation: "getVendorAuthority", Scopes: read, Handle: s.getAuthority},
		{Method: http.MethodGet, Path: base, Operation: "listConnections", Scopes: read, PageAhead: pageConnections, Handle: s.listConnections},
		{Method: http.MethodPost, Path: base, Operation: "createConnection", Scopes: write, Handle: s.createConnection},
		{Method: http.MethodGet, Path: one, Operation: "getConnection", Scopes: read, Handle: s.getConnection},
		{Method: http.MethodPost, Path: one + "/pause", Operation: "pauseConnection", Scopes: write, Handle: s.connectionTransition(connection.Pause)},
		{Method: http.MethodPost, Path: one + "/resume", Operation: "resumeConnection", Scopes: write, Handle: s.connectionTransition(connection.Resume)},
		{Method: http.MethodPost, Path: one + "/disconnect", Operation: "disconnectConnection", Scopes: write, Handle: s.connectionTransition(connection.Disconnect)},
		{Method: http.MethodGet, Path: one + "/health", Operation: "getConnectionHealth", Scopes: read, Handle: s.getConnectionHealth},
		{Method: http.MethodPost, Path: one + "/health", Operation: "reportConnectionHealth", Scopes: write, Handle: s.reportConnectionHealth},
		// The contract names this path without the vendor: the token's vendor is meant.
		{Method: http.MethodPut, Path: "/connections/{connection_id}/roles", Operation: "replaceConnectionRoles", Scopes: write, Handle: s.replaceRoles},
	}
}}

func (s *Server) getAuthority(ctx context.Context, c *Call) error {
	v, err := c.connections().Authority(ctx, c.Principal.Vendor.ID)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) listConnections(ctx context.Context, c *Call) error {
	return listed(ctx, c, "connections", "", c.connections().List)
}

func (s *Server) createConnection(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, connection.ParseCreate)
	if err != nil {
		return err
	}
	if err := c.requireSourceScopes(in.Roles); err != nil {
		return err
	}
	return c.Mutate(ctx, "connections.create", idempotency.ConnectionKeyPattern, body, answer(http.StatusCreated, func(ctx context.Context) (store.Prepared[connection.View], error) {
		return c.connections().PrepareCreate(ctx, c.Principal.Vendor.ID, in)
	}))
}

func (s *Server) getConnection(ctx context.Context, c *Call) error {
	conn, h, _, err := c.connections().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("connection_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, conn.View(h))
}

func (s *Server) getConnectionHealth(ctx context.Context, c *Call) error {
	conn, h, _, err := c.connections().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("connection_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, conn.View(h).Health)
}

func (s *Server) reportConnectionHealth(ctx context.Context, c *Call) error {
	return s.reportHealth(ctx, c, c.Principal.Vendor.ID, c.R.PathValue("connection_id"))
}

// reportHealth records the body's health report on the vendor's connection
// connID and answers with the health as stored.
func (s *Server) reportHealth(ctx context.Context, c *Call, vendorID, connID string) error {
	_, h, err := parsed(c, 0, connection.ParseHealth)
	if err != nil {
		return err
	}
	v, err := c.connections().ReportHealth(ctx, vendorID, connID, h)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v.Health)
}

func (s *Server) connectionTransition(action string) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		_, v, err := parsed(c, 0, fields.ParseVersion)
		if err != nil {
			return err
		}
		view, err := c.connections().Transition(ctx, c.Principal.Vendor.ID, c.R.PathValue("connection_id"), action, v)
		if err != nil {
			return err
		}
		return c.Data(ctx, http.StatusOK, view)
	}
}

func (s *Server) replaceRoles(ctx context.Context, c *Call) error {
	_, in, err := parsed(c, 0, connection.ParseRoles)
	if err != nil {
		return err
	}
	if err := c.requireSourceScopes(in.Roles); err != nil {
		return err
	}
	v, err := c.connections().ReplaceRoles(ctx, c.Principal.Vendor.ID, c.R.PathValue("connection_id"), in)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}
