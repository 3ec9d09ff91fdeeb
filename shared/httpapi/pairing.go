package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/ratelimit"
)

// StorePairings is the store-plugin paired discovery group: the seller's
// pairing routes (token), the plugin's exchange (the code is the
// credential) and the plugin's discovery routes (discovery credential).
var StorePairings = Group{Name: "store-pairings", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ConnectionsRead}, []auth.Scope{auth.ConnectionsWrite}
	// A discovery route needs a credential but no token scope.
	discovery := []auth.Scope{}
	base := "/vendors/{vendor_id}/store-pairings"
	one := base + "/{pairing_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listStorePairings", Scopes: read, PageAhead: pageAhead(datamodel.PairingPrefix, false), Handle: s.listPairings},
		{Method: http.MethodPost, Path: base, Operation: "createStorePairing", Scopes: write, Handle: s.createPairing},
		{Method: http.MethodGet, Path: one, Operation: "getStorePairing", Scopes: read, Handle: s.getPairing},
		{Method: http.MethodPost, Path: one + "/accept", Operation: "acceptStorePairing", Scopes: write, Handle: s.acceptPairing},
		{Method: http.MethodPost, Path: one + "/revoke", Operation: "revokeStorePairing", Scopes: write, Handle: s.revokePairing},
		{Method: http.MethodPost, Path: "/store-pairings/exchange", Operation: "exchangeStorePairingCode", Throttle: ratelimit.Exchange, Handle: s.exchangePairing},
		{Method: http.MethodGet, Path: "/store-pairings/current", Operation: "getCurrentStorePairing", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.currentPairing},
		{Method: http.MethodPost, Path: "/store-pairings/current/discovery", Operation: "postStorePairingDiscovery", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.postDiscovery},
		// Operational routes of an active pairing (sync_jobs.go).
		{Method: http.MethodPost, Path: "/store-pairings/current/sync-jobs", Operation: "createStorePairingSyncJob", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.createPluginSyncJob},
		{Method: http.MethodGet, Path: "/store-pairings/current/sync-jobs/{sync_job_id}", Operation: "getStorePairingSyncJob", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.getPluginSyncJob},
		// Orders and health of an active pairing (plugin_orders.go).
		{Method: http.MethodPost, Path: "/store-pairings/current/external-orders", Operation: "importStorePairingExternalOrder", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.importPluginOrder},
		{Method: http.MethodGet, Path: "/store-pairings/current/external-orders/{external_order_id}", Operation: "getStorePairingExternalOrder", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.getPluginOrder},
		{Method: http.MethodPost, Path: "/store-pairings/current/health", Operation: "reportStorePairingHealth", Scopes: discovery, Credential: DiscoveryCredential, Handle: s.reportPluginHealth},
	}
}}

func (s *Server) listPairings(ctx context.Context, c *Call) error {
	return listed(ctx, c, "store-pairings", "", c.pairings().List)
}

// createPairing stores a pairing under the Idempotency-Key. The receipt
// keeps the response without the code, which exists only as a hash: an
// exact replay answers the same pairing with code null.
func (s *Server) createPairing(ctx context.Context, c *Call) error {
	body, err := c.Body(0)
	if err != nil {
		return err
	}
	if err := pairing.ParseCreate(body); err != nil {
		return err
	}
	sc := idempotency.Scope{VendorID: c.Principal.Vendor.ID, TokenID: c.Principal.Token.ID}
	var fresh pairing.Created
	res, err := c.keep(ctx, sc, "store_pairings.create", idempotency.ConnectionKeyPattern, body, func(ctx context.Context) (idempotency.Mutation, error) {
		p, err := c.pairings().PrepareCreate(ctx, c.Principal.Vendor.ID)
		if err != nil {
			return idempotency.Mutation{}, err
		}
		fresh = p.View
		stored := p.View
		stored.Code = nil
		return idempotency.Mutation{Ops: p.Ops, Status: http.StatusCreated, Body: Envelope(stored)}, nil
	})
	if err != nil {
		return err
	}
	if res.Replayed {
		c.writeKept(ctx, res)
		return nil
	}
	return c.Data(ctx, http.StatusCreated, fresh)
}

func (s *Server) getPairing(ctx context.Context, c *Call) error {
	v, err := c.pairings().View(ctx, c.Principal.Vendor.ID, c.R.PathValue("pairing_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) acceptPairing(ctx context.Context, c *Call) error {
	_, in, err := parsed(c, 0, pairing.ParseAccept)
	if err != nil {
		return err
	}
	if roles, ok := connection.Preset(in.Preset); ok {
		if err := c.requireSourceScopes(roles); err != nil {
			return err
		}
	}
	v, err := c.pairings().Accept(ctx, c.Principal.Vendor.ID, c.R.PathValue("pairing_id"), c.Principal.Token.ID, in)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) revokePairing(ctx context.Context, c *Call) error {
	v, err := c.pairings().Revoke(ctx, c.Principal.Vendor.ID, c.R.PathValue("pairing_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) exchangePairing(ctx context.Context, c *Call) error {
	_, code, err := parsed(c, 4<<10, pairing.ParseExchange)
	if err != nil {
		return err
	}
	x, err := c.pairings().Exchange(ctx, code)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, x)
}

func (s *Server) currentPairing(ctx context.Context, c *Call) error {
	v, err := c.pairings().Current(ctx, c.Discovery)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) postDiscovery(ctx context.Context, c *Call) error {
	_, d, err := parsed(c, 16<<10, pairing.ParseDiscovery)
	if err != nil {
		return err
	}
	v, err := c.pairings().Discover(ctx, c.Discovery, d)
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}
