package httpapi

import (
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
)

// EdgeHeader carries the edge's secret (config.EdgeSecret) from CloudFront
// to the origin: the deployed stack adds it to every origin request
// (infra/stack/edge.go), so a request without it did not come through the
// edge's web ACL.
const EdgeHeader = "X-Sellerapi-Edge"

// ViewerAddressHeader is where CloudFront tells the origin the viewer's
// address and port ("198.51.100.7:443", IPv6 unbracketed).
const ViewerAddressHeader = "CloudFront-Viewer-Address"

// viaEdge reports whether r may be served: always when no edge secret is
// configured, else only with exactly one EdgeHeader holding the secret.
func (s *Server) viaEdge(r *http.Request) bool {
	want := s.deps.Config.EdgeSecret
	if want == "" {
		return true
	}
	got := r.Header.Values(EdgeHeader)
	return len(got) == 1 && subtle.ConstantTimeCompare([]byte(got[0]), []byte(want)) == 1
}

// refuseOffEdge answers a request that bypassed the edge: 403, before any
// route, credential or store is looked at.
func (s *Server) refuseOffEdge(w http.ResponseWriter, r *http.Request) {
	ctx, c := s.newCall(w, r, Route{})
	defer c.finish(ctx)
	c.fail(ctx, errs.Ef(errs.CodeInsufficientScope, "This API is served only through its edge at %s; its origin refuses requests that did not pass the edge.", s.deps.Config.BaseURL))
}

// clientAddr is the address a public route's per-client window is kept
// for. Behind the edge (an edge secret configured, and checked by
// viaEdge before any route runs) the peer is a CloudFront server, so the
// viewer address CloudFront reports is the client's; without a readable
// one the peer stands in. Without an edge, forwarding headers are not
// trusted: the peer locally, the caller's source IP as API Gateway
// reports it behind the Lambda proxy (which sets RemoteAddr from it).
func (s *Server) clientAddr(r *http.Request) netip.Addr {
	if s.deps.Config.EdgeSecret != "" {
		if v := r.Header.Values(ViewerAddressHeader); len(v) == 1 {
			if a, ok := viewerAddr(v[0]); ok {
				return a
			}
		}
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr()
	}
	a, _ := netip.ParseAddr(r.RemoteAddr)
	return a
}

// viewerAddr reads CloudFront-Viewer-Address: an address and a port
// joined by the last colon, IPv6 unbracketed ("2001:db8::1:443") or
// bracketed.
func viewerAddr(v string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(v); err == nil {
		return ap.Addr(), true
	}
	i := strings.LastIndexByte(v, ':')
	if i < 0 || i == len(v)-1 || strings.Trim(v[i+1:], "0123456789") != "" || len(v)-i-1 > 5 {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(v[:i])
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, false
	}
	return a, true
}
