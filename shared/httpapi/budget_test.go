package httpapi_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// roundTrips records the store round trips of each operation.
type roundTrips struct {
	mu   sync.Mutex
	last map[string]int64
}

func (r *roundTrips) observe(o httpapi.Observation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last[o.Operation] = o.RoundTrips
}

func (r *roundTrips) of(op string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[op]
}

// TestRoundTripBudgets pins the store round trips per operation (DESIGN.md:
// a read at most 2 sequential round trips beyond the token lookup, a write
// at most 3), so that they cannot creep up unnoticed.
func TestRoundTripBudgets(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := newEnv(t, kind, apitest.Options{Observe: rt.observe})
		budgets := []struct {
			op   string
			req  apitest.Req
			want int64
		}{
			// Token and vendor in one batch read, then the rate window.
			{"getVendor", apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: e.Token}, 2},
			// Token, then its vendor, then the rate window.
			{"listVendors", apitest.Req{Path: "/vendors", Token: e.Token}, 3},
			{"getOpenAPI", apitest.Req{Path: "/openapi.json"}, 0},
			// Token and vendor, rate window, then the mutation with its receipt.
			{"createWidget", apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
				Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": "budget-key-1"}}, 3},
		}
		for _, b := range budgets {
			r := e.Do(b.req)
			if r.Status >= 300 {
				t.Fatalf("%s: %d %s", b.op, r.Status, r.Body)
			}
			if got := rt.of(b.op); got != b.want {
				t.Errorf("%s made %d store round trips, budget %d", b.op, got, b.want)
			}
		}
	})
}
