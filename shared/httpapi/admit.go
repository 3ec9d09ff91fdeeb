package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/readahead"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// admit authenticates, authorizes the path's vendor, checks scopes and
// spends the rate window, in that order. The bearer's prefix picks the
// authenticator; a valid credential of another kind than the route takes
// is 403, like a missing scope.
func (s *Server) admit(ctx context.Context, c *Call, rt Route) error {
	if rt.Scopes == nil {
		return s.admitPublic(ctx, c, rt)
	}
	raw, ok := bearer(c.R.Header.Get("Authorization"))
	if !ok || len(c.R.Header.Values("Authorization")) > 1 {
		return errs.E(errs.CodeUnauthenticated, "The access token is missing, invalid, expired or revoked.")
	}
	if pairing.IsCredential(raw) {
		return s.admitDiscovery(ctx, c, rt, raw)
	}
	vendorID := c.R.PathValue("vendor_id")
	var p auth.Principal
	var err error
	if account.ValidID(vendorID) && s.svc.Auth.Vouched(raw, vendorID) {
		p, err = s.admitVouched(ctx, c, rt, raw, vendorID)
	} else {
		p, err = s.admitChecked(ctx, c, rt, raw, vendorID)
	}
	if err != nil {
		return err
	}
	c.Principal = p
	c.logWith(slog.String("vendor_id", p.Vendor.ID), slog.String("token_id", p.Token.ID))
	if rt.Credential != TokenCredential {
		return errs.E(errs.CodeInsufficientScope, "This operation takes a store-plugin discovery credential, not an access token.")
	}
	for _, sc := range rt.Scopes {
		if !p.Token.Has(sc) {
			c.W.Header().Set("WWW-Authenticate", `Bearer realm="moku", error="insufficient_scope", scope="`+string(sc)+`"`)
			return errs.Ef(errs.CodeInsufficientScope, "This operation requires scope %s.", sc)
		}
	}
	return nil
}

// admitVouched admits a token this process has authenticated before for
// the path's vendor (auth.Service.Vouched): the vendor's window is spent,
// the route's read-ahead keys read and its page queries started beside
// the token's check, which this request makes again, in the same batch,
// so a token revoked or expired since is refused on this very request. A
// refusal gives the unit back and answers 401, never 429.
func (s *Server) admitVouched(ctx context.Context, c *Call, rt Route, raw, vendorID string) (auth.Principal, error) {
	if tk, ok := auth.TokenKey(raw); ok {
		c.tokenID = strings.TrimPrefix(tk.PK, "TOKEN#")
	}
	ahead, pages := s.startBeside(ctx, c, rt, vendorID)
	p, items, err := s.svc.Auth.AuthenticateWith(ctx, raw, vendorID, ahead)
	joinAll(pages)
	if err != nil {
		s.giveBack(ctx, c, rt, vendorID)
		return auth.Principal{}, err
	}
	if len(items) > len(ahead) {
		ahead = append(ahead, datamodel.VendorKey(p.Vendor.ID))
	}
	c.view.gate.ahead.set(ahead, items, pages)
	c.readReceivers(vendorID, ahead, items)
	return p, nil
}

// startBeside spends the vendor's window and starts the route's page
// queries beside the batch read the caller makes next, and returns the
// route's read-ahead keys for that batch; a write's include the vendor's
// subscription counts (readReceivers), a read's do not.
func (s *Server) startBeside(ctx context.Context, c *Call, rt Route, vendorID string) ([]store.Key, []*readahead.Pending) {
	s.spendRate(ctx, c, rt, vendorID)
	var ahead []store.Key
	if rt.ReadAhead != nil {
		ahead = rt.ReadAhead(c)
	}
	if classOf(rt) == ratelimit.Write {
		ahead = append(ahead, datamodel.SubscriptionCountKey(vendorID))
	}
	return ahead, s.startPages(ctx, c, rt)
}

// admitChecked admits any other bearer: its token alone is read and
// checked first (auth.Service.Check), so a forged, expired or revoked
// credential, whatever its shape, is 401 having spent no unit of any
// vendor's window and read nothing of any vendor's partition. Only then
// is the vendor read, with the route's read-ahead keys and beside its
// page queries and its window, when the path names the token's own
// vendor; the token's first request in a process waits for one round
// trip more than a vouched one.
func (s *Server) admitChecked(ctx context.Context, c *Call, rt Route, raw, vendorID string) (auth.Principal, error) {
	t, err := s.svc.Auth.Check(ctx, raw)
	if err != nil {
		return auth.Principal{}, err
	}
	if vendorID == "" || vendorID != t.VendorID {
		// No vendor in the path (GET /vendors), or another one (404): the
		// token's vendor is read and checked, and only then its window spent.
		p, _, err := s.svc.Auth.Grant(ctx, t, vendorID, nil)
		if err != nil {
			return auth.Principal{}, err
		}
		s.spendRate(ctx, c, rt, p.Vendor.ID)
		return p, nil
	}
	c.tokenID = t.ID
	ahead, pages := s.startBeside(ctx, c, rt, vendorID)
	p, items, err := s.svc.Auth.Grant(ctx, t, vendorID, ahead)
	joinAll(pages)
	if err != nil {
		// The vendor's owner is no longer the token's (a credential that
		// was genuine until then: 401), or the store failed (503).
		s.giveBack(ctx, c, rt, vendorID)
		return auth.Principal{}, err
	}
	c.view.gate.ahead.set(append(ahead, datamodel.VendorKey(vendorID)), items, pages)
	c.readReceivers(vendorID, ahead, items)
	return p, nil
}

// readReceivers keeps what the admission batch read of the vendor's
// subscription counts (a write's: startBeside), for the request's
// transactions (pipeline.Pending.Mark writes no marker for an event
// no subscription could receive).
func (c *Call) readReceivers(vendorID string, keys []store.Key, items []store.Item) {
	k := datamodel.SubscriptionCountKey(vendorID)
	for i, have := range keys {
		if have == k && i < len(items) {
			c.receivers, c.hasReceivers = pipeline.ReceiversOf(vendorID, items[i]), true
			return
		}
	}
}

// startPages starts the queries a list route declares, beside the
// credentials' batch, on the ungated store (the request's first query,
// which the rate decision does not hold back). They run only for a
// token this process has authenticated for the path's vendor
// (admitVouched) or one just authenticated for it (admitChecked), in that
// vendor's partition, each at most one page (limit+1 items)
// long; what they read reaches the handler only after admission, never
// on a refusal.
func (s *Server) startPages(ctx context.Context, c *Call, rt Route) []*readahead.Pending {
	if rt.PageAhead == nil {
		return nil
	}
	var pages []*readahead.Pending
	pk := datamodel.VendorPartition(c.R.PathValue("vendor_id"))
	for _, q := range rt.PageAhead(c) {
		if q.PK == pk && q.Limit <= maxPageLimit+1 {
			pages = append(pages, readahead.Start(ctx, s.deps.Store, q))
		}
	}
	return pages
}

// joinAll marks the admission batch, made beside pages, as ended: it and
// the page queries are one wait.
func joinAll(pages []*readahead.Pending) {
	for _, p := range pages {
		p.Join()
	}
}

// giveBack returns the unit a refused credential's request spent of the
// path vendor's window beside its check, and forgets the request's rate
// decision: the refusal is the credential's (401), never the window's
// 429, and carries no rate headers.
func (s *Server) giveBack(ctx context.Context, c *Call, rt Route, vendorID string) {
	g := c.view.gate
	c.view.gate = nil
	if err := g.wait(); err != nil {
		return // nothing was spent
	}
	if err := s.svc.Limiter.GiveBack(ctx, vendorID, classOf(rt), g.status); err != nil {
		c.logger().WarnContext(ctx, "rate window unit not given back", "error", err)
	}
}

// admitDiscovery admits a discovery credential, to its own routes only.
func (s *Server) admitDiscovery(ctx context.Context, c *Call, rt Route, raw string) error {
	d, err := s.svc.Discovery.Authenticate(ctx, raw)
	if err != nil {
		return err
	}
	c.logWith(slog.String("vendor_id", d.VendorID), slog.String("pairing_id", d.PairingID))
	if rt.Credential != DiscoveryCredential {
		c.W.Header().Set("WWW-Authenticate", `Bearer realm="moku", error="insufficient_scope"`)
		return errs.E(errs.CodeInsufficientScope, "A store-plugin discovery credential reaches only the /store-pairings/current routes of its own pairing.")
	}
	c.Discovery = d
	// The pairing's own allowance, of the vendor's size: a plugin, paired
	// or not yet accepted, never spends the seller's window.
	class := classOf(rt)
	s.startRate(ctx, c, func(ctx context.Context) (ratelimit.Status, error) {
		return s.svc.Limiter.TakeFrom(roundtrip.Beside(ctx), datamodel.PairingPartition(d.PairingID), "store pairing's", class, s.svc.Limiter.Limit(class))
	})
	return nil
}

// admitPublic decides a throttled public route's per-client window before
// its handler does any work: there is no credential to answer for it.
func (s *Server) admitPublic(ctx context.Context, c *Call, rt Route) error {
	if rt.Throttle == "" {
		return nil
	}
	limit := s.deps.Config.RatePublic
	if rt.Throttle == ratelimit.Exchange {
		limit = s.deps.Config.RateExchange
	}
	pk := ratelimit.ClientPartition(s.clientAddr(c.R))
	s.startRate(ctx, c, func(ctx context.Context) (ratelimit.Status, error) {
		return s.svc.Limiter.TakeFrom(ctx, pk, "client's", rt.Throttle, limit)
	})
	return c.settleRate()
}

func classOf(rt Route) ratelimit.Class {
	if rt.Method != http.MethodGet && rt.Method != http.MethodHead {
		return ratelimit.Write
	}
	return ratelimit.Read
}

// spendRate starts the vendor's rate decision for the request; a unit of
// the process's lease decides it at once.
func (s *Server) spendRate(ctx context.Context, c *Call, rt Route, vendorID string) {
	class := classOf(rt)
	if st, ok := s.svc.Limiter.TakeLeased(vendorID, class); ok {
		g := &rateGate{done: make(chan struct{}), status: st}
		close(g.done)
		c.view.gate = g
		return
	}
	s.startRate(ctx, c, func(ctx context.Context) (ratelimit.Status, error) {
		return s.svc.Limiter.Take(roundtrip.Beside(ctx), vendorID, class)
	})
}

// startRate starts the request's rate decision beside its handler; the
// request's view of the store (Call.view) holds it, so that the services
// its handler calls wait for it.
func (s *Server) startRate(ctx context.Context, c *Call, take func(context.Context) (ratelimit.Status, error)) {
	c.view.gate = startGate(ctx, take)
}

// settleRate waits for the request's rate decision, once, before anything
// is sent: it sets the RateLimit headers and returns a refusal that
// replaces whatever the handler produced.
func (c *Call) settleRate() error {
	if c.view.gate == nil {
		return nil
	}
	var err error
	c.view.gate.once.Do(func() {
		err = c.view.gate.wait()
		if st := c.view.gate.status; st.Limit > 0 {
			// Set as h.Set would, the three values in one allocation.
			v := []string{itoa(st.Limit), itoa(st.Remaining), itoa(int(st.Reset.Unix()))}
			h := c.W.Header()
			h["Ratelimit-Limit"], h["Ratelimit-Remaining"], h["Ratelimit-Reset"] = v[0:1:1], v[1:2:2], v[2:3:3]
		}
	})
	return err
}
