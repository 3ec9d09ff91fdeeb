package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

var edgeSecret = strings.Repeat("e", config.MinEdgeSecret)

// TestOnlyTheEdgeReachesTheOrigin: with an edge secret configured (the
// deployed stack's edge, infra/stack/edge.go), a request without the
// secret, with a wrong one or with two is refused with 403 problem+json
// before any route runs, public or not; with it the request is served.
func TestOnlyTheEdgeReachesTheOrigin(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{Groups: []httpapi.Group{httpapi.StorePairings},
		Config:  func(c *config.Config) { c.EdgeSecret = edgeSecret },
		Headers: map[string]string{httpapi.EdgeHeader: edgeSecret}})
	vendor := "/vendors/" + e.Vendor.ID
	if r := e.Get(vendor); r.Status != http.StatusOK {
		t.Fatalf("through the edge: %d %s", r.Status, r.Body)
	}
	for name, h := range map[string]http.Header{
		"missing": {},
		"wrong":   {http.CanonicalHeaderKey(httpapi.EdgeHeader): {edgeSecret[1:] + "x"}},
		"prefix":  {http.CanonicalHeaderKey(httpapi.EdgeHeader): {edgeSecret[:len(edgeSecret)-1]}},
		"twice":   {http.CanonicalHeaderKey(httpapi.EdgeHeader): {edgeSecret, edgeSecret}},
	} {
		// Straight to the server: what the origin answers off the edge is
		// not the contract's (clients use the base URL, which is the edge).
		for _, path := range []string{vendor, "/store-pairings/exchange", "/openapi.json", "/no-such-path", "/./not-canonical"} {
			req := httptest.NewRequest(http.MethodGet, e.URL+path, nil)
			req.Header = h.Clone()
			req.Header.Set("Authorization", "Bearer "+e.Token)
			rec := httptest.NewRecorder()
			e.Server.ServeHTTP(rec, req)
			if rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/problem+json" || !strings.Contains(rec.Body.String(), `"code":"INSUFFICIENT_SCOPE"`) {
				t.Errorf("%s secret, GET %s: %d %s %s, want 403 problem+json", name, path, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
			}
		}
	}
	r := e.Do(apitest.Req{Path: vendor, Token: e.Token, Headers: map[string]string{httpapi.EdgeHeader: "not-the-secret"}})
	r.WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
	if !strings.Contains(string(r.Body), "edge") {
		t.Errorf("the refusal does not say why: %s", r.Body)
	}
}

// TestBehindTheEdgeAClientIsItsViewerAddress: behind the edge every peer is
// a CloudFront server, so the per-client window of a public route is kept
// for the viewer address CloudFront reports (an IPv6 viewer's /64); without
// an edge that header is anyone's to forge and is ignored.
func TestBehindTheEdgeAClientIsItsViewerAddress(t *testing.T) {
	viewer := func(addr string) map[string]string { return map[string]string{httpapi.ViewerAddressHeader: addr} }
	exchangeAs := func(e *apitest.Env, h map[string]string) *apitest.Resp {
		return e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/exchange", Body: map[string]any{"code": "WRONG-CODE"}, Headers: h})
	}
	limited := func(t *testing.T, r *apitest.Resp, want bool, what string) {
		t.Helper()
		if got := r.Status == http.StatusTooManyRequests; got != want {
			t.Fatalf("%s: %d %s (want 429: %v)", what, r.Status, r.Body, want)
		}
	}
	t.Run("edge", func(t *testing.T) {
		e := newEnv(t, apitest.SQLite, apitest.Options{Groups: []httpapi.Group{httpapi.StorePairings},
			Config:  func(c *config.Config) { c.EdgeSecret, c.RateExchange = edgeSecret, 1 },
			Headers: map[string]string{httpapi.EdgeHeader: edgeSecret}})
		limited(t, exchangeAs(e, viewer("127.0.0.2:50000")), false, "first viewer's exchange")
		limited(t, exchangeAs(e, viewer("127.0.0.2:50001")), true, "first viewer again, from another port")
		limited(t, exchangeAs(e, viewer("127.0.0.3:50000")), false, "second viewer")
		limited(t, exchangeAs(e, viewer("::1:443")), false, "an IPv6 viewer")
		limited(t, exchangeAs(e, viewer("[::2]:443")), true, "the same /64, bracketed")
		// No readable viewer address: the peer (loopback here) is the client.
		limited(t, exchangeAs(e, viewer("not an address")), false, "unreadable viewer address")
		limited(t, exchangeAs(e, nil), true, "no viewer address: the same peer")
	})
	t.Run("no edge", func(t *testing.T) {
		e := newEnv(t, apitest.SQLite, apitest.Options{Groups: []httpapi.Group{httpapi.StorePairings},
			Config: func(c *config.Config) { c.RateExchange = 1 }})
		limited(t, exchangeAs(e, viewer("127.0.0.2:50000")), false, "first exchange")
		limited(t, exchangeAs(e, viewer("127.0.0.3:50000")), true, "a forged viewer address")
	})
}

// TestViewerAddress: CloudFront's forms, and what is not an address.
func TestViewerAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.2:443":         "127.0.0.2",
		"::1:443":               "::1",
		"2001:db8::7:8:65535":   "2001:db8::7:8",
		"[2001:db8::7]:1":       "2001:db8::7",
		"::ffff:127.0.0.2:80":   "::ffff:127.0.0.2",
		"127.0.0.2":             "",
		"127.0.0.2:":            "",
		"127.0.0.2:port":        "",
		"127.0.0.2:123456":      "",
		"fe80::1%eth0:443":      "",
		"":                      "",
		":443":                  "",
		"1:2:3:4:5:6:7:8:9:443": "",
	} {
		got := httpapi.ViewerAddr(in)
		if got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// FuzzViewerAddr: any header value is refused or read as an address
// without a zone that reads back the same with a port, never a panic.
func FuzzViewerAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.2:443", "::1:443", "[::1]:443", "fe80::1%eth0:443", "::ffff:1.2.3.4:1", ":", "a:b:c", "999.0.0.1:1", "0000::1:443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := httpapi.ViewerAddr(s)
		if got == "" {
			return
		}
		if strings.Contains(got, "%") {
			t.Fatalf("%q read with a zone: %q", s, got)
		}
		if again := httpapi.ViewerAddr(got + ":1"); again != got {
			t.Fatalf("%q read as %q, which reads back as %q", s, got, again)
		}
	})
}
