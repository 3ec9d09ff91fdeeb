package httpapi_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

func wantRateHeaders(t *testing.T, r *apitest.Resp, limit, remaining int) {
	t.Helper()
	if got := r.Header.Get("RateLimit-Limit"); got != strconv.Itoa(limit) {
		t.Fatalf("RateLimit-Limit %q, want %d (status %d %s)", got, limit, r.Status, r.Body)
	}
	if got := r.Header.Get("RateLimit-Remaining"); got != strconv.Itoa(remaining) {
		t.Fatalf("RateLimit-Remaining %q, want %d", got, remaining)
	}
	if r.Header.Get("RateLimit-Reset") == "" {
		t.Fatal("no RateLimit-Reset")
	}
}

// TestPublicRoutesAreThrottledPerClient reproduces finding 9 of issue 17:
// 500 unauthenticated exchanges in a row met no 429 and no rate headers.
// The exchange and the media files now spend a per-client window before
// any work: over it, 429 with Retry-After and the rate headers.
func TestPublicRoutesAreThrottledPerClient(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Groups: []httpapi.Group{httpapi.Products, httpapi.Connections, httpapi.StorePairings, httpapi.Media},
			Config: func(c *config.Config) { c.RateExchange, c.RatePublic = 3, 2 }})
		for i := 0; i < 3; i++ {
			r := exchange(e, "WRONG-CODE-"+strconv.Itoa(i))
			if r.Status == http.StatusTooManyRequests || r.Status >= 500 {
				t.Fatalf("exchange %d: %d %s", i, r.Status, r.Body)
			}
		}
		r := exchange(e, "WRONG-CODE-9")
		r.WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		wantRateHeaders(t, r, 3, 0)
		// A valid code is refused too until the window resets: guessing is capped.
		pr := createPairing(t, e, "public-rate-pairing")
		exchange(e, *pr.Data.Code).WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		nextWindow(e)
		if r := exchange(e, *pr.Data.Code); r.Status != http.StatusOK {
			t.Fatalf("exchange in the next window: %d %s", r.Status, r.Body)
		}

		// Media files: their own per-client window.
		file := "/media/" + strings.Repeat("0", 64) + ".webp"
		r = e.Do(apitest.Req{Path: file})
		r.WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		e.Do(apitest.Req{Path: file}).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		r = e.Do(apitest.Req{Path: file})
		r.WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		wantRateHeaders(t, r, 2, 0)
		// The static contract costs nothing and is not throttled.
		for i := 0; i < 4; i++ {
			if r := e.Do(apitest.Req{Path: "/openapi.json"}); r.Status != http.StatusOK {
				t.Fatalf("openapi: %d", r.Status)
			}
		}
	})
}

// TestDiscoverySpendsThePairingsAllowance: a plugin's discovery credential
// spends its pairing's own window, never the seller's read window.
func TestDiscoverySpendsThePairingsAllowance(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Groups: []httpapi.Group{httpapi.Products, httpapi.Connections, httpapi.StorePairings},
			Config: func(c *config.Config) { c.RateReads = 2 }})
		pr := createPairing(t, e, "discovery-rate-pairing")
		token := mustExchange(t, e, *pr.Data.Code)
		plugin := func() *apitest.Resp { return e.Do(apitest.Req{Path: "/store-pairings/current", Token: token}) }
		for i := 0; i < 2; i++ {
			if r := plugin(); r.Status != http.StatusOK {
				t.Fatalf("plugin read %d: %d %s", i, r.Status, r.Body)
			}
		}
		plugin().WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		// The seller's reads are all still there.
		for i := 0; i < 2; i++ {
			r := e.Get("/vendors/" + e.Vendor.ID)
			if r.Status != http.StatusOK {
				t.Fatalf("seller read %d after the plugin's: %d %s", i, r.Status, r.Body)
			}
			wantRateHeaders(t, r, 2, 1-i)
		}
	})
}
