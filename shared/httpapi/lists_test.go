package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// seedEvents writes n events of typ straight into the vendor's log.
func seedEvents(t *testing.T, e *apitest.Env, typ string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += store.MaxTransactOps {
		var ops []store.Op
		for j := i; j < min(n, i+store.MaxTransactOps); j++ {
			// The data its type documents: the harness checks every event
			// against the published schema of its type.
			op, err := event.Op(event.New(e.Clock.Now(), e.Vendor.ID, typ, "product", "prd_x", map[string]any{"revision": j + 2}))
			if err != nil {
				t.Fatal(err)
			}
			ops = append(ops, op)
		}
		if err := e.Store.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFilteredListScanIsBounded reproduces finding 5 of issue 17: a filter
// that matches none of thousands of events used to walk the whole log in
// one request. Each page now reads a bounded number of items, answers
// what it found (here nothing) with a cursor to go on, and the walk ends.
func TestFilteredListScanIsBounded(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe,
			Config: func(c *config.Config) { c.RateReads = 1000 }})
		const n = 1600
		seedEvents(t, e, event.ProductUpdated, n)
		path := "/vendors/" + e.Vendor.ID + "/events?type=" + event.ConflictDismissed + "&limit=10"
		pages, cursor := 0, ""
		for {
			p := path
			if cursor != "" {
				p += "&page_after=" + cursor
			}
			res := e.Get(p)
			if res.Status != http.StatusOK {
				t.Fatalf("page %d: status %d %s", pages, res.Status, res.Body)
			}
			var page struct {
				Data []event.Event
				Page httpapi.Page
			}
			res.JSON(t, &page)
			if len(page.Data) != 0 {
				t.Fatalf("page %d: %d events of a type that never occurred", pages, len(page.Data))
			}
			if n := rt.of("listEvents"); n > 10 {
				t.Fatalf("page %d: %d store round trips", pages, n)
			}
			pages++
			if page.Page.NextCursor == nil {
				break
			}
			if pages > n/store.MaxScan+2 {
				t.Fatalf("%d pages and still a cursor", pages)
			}
			cursor = *page.Page.NextCursor
		}
		if pages < n/store.MaxScan {
			t.Fatalf("%d pages read %d events within the bound of %d a page?", pages, n, store.MaxScan)
		}
	})
}

// TestRateRefusalComesBeforeTheScan: a list request over the read
// allowance is refused without walking the log: its round trips are the
// admission's and at most one query, not the scan's.
func TestRateRefusalComesBeforeTheScan(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe,
			Config: func(c *config.Config) { c.RateReads = 2 }})
		seedEvents(t, e, event.ProductUpdated, 1200)
		path := "/vendors/" + e.Vendor.ID + "/events?type=" + event.ConflictDismissed + "&limit=1"
		var scan int64
		for i := 0; i < 2; i++ {
			if res := e.Get(path); res.Status != http.StatusOK {
				t.Fatalf("admitted request %d: status %d %s", i, res.Status, res.Body)
			}
			scan = rt.of("listEvents")
		}
		res := e.Get(path)
		res.WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		if res.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		refused := rt.of("listEvents")
		if refused > 3 || refused >= scan {
			t.Fatalf("the refused request made %d round trips; an admitted scan makes %d", refused, scan)
		}
	})
}
