package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// appendEvent commits one event stamped at stamp (its writer's clock when
// it built the event), whatever the clock says when it commits.
func appendEvent(t *testing.T, e *apitest.Env, stamp time.Time, typ string, revision int) string {
	t.Helper()
	data := map[string]any{"revision": revision}
	switch typ {
	case event.ProductCreated:
		data["inventory_item_ids"] = []string{}
	case event.ProductPublished:
		data["status"] = "published"
	}
	ev := event.New(stamp, e.Vendor.ID, typ, "product", "prd_x", data)
	op, err := event.Op(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Transact(context.Background(), op); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

// follow reads the log oldest first from after (a last-seen event id, ""
// for the start), following cursors, and returns the ids in order.
func follow(t *testing.T, e *apitest.Env, after, filters string) []string {
	t.Helper()
	path := "/vendors/" + e.Vendor.ID + "/events?order=asc&limit=2" + filters
	if after != "" {
		path += "&after=" + after
	}
	pages, _ := e.Walk(t, path)
	return slices.Concat(pages...)
}

// TestFollowTheLogWithoutGaps: two writers stamp their events in one order
// and commit them in the other, as concurrent requests can. A follower
// reading oldest first never shows the later-stamped event before the
// earlier one has committed: the list shows only events older than the
// settle horizon, so the position it resumes from (the last id it saw)
// never lies past an event still to commit. Resuming from that id later
// finds exactly what followed, in id order, across pages.
func TestFollowTheLogWithoutGaps(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := apitest.New(t, apitest.Options{Store: kind})
		t0 := e.Clock.Now()
		old := []string{
			appendEvent(t, e, t0, event.ProductCreated, 1),
			appendEvent(t, e, t0.Add(time.Millisecond), event.ProductUpdated, 2),
			appendEvent(t, e, t0.Add(2*time.Millisecond), event.ProductPublished, 3),
		}
		e.Clock.Advance(event.Settle + time.Second)
		if got := follow(t, e, "", ""); !slices.Equal(got, old) {
			t.Fatalf("the settled log oldest first: %v, want %v", got, old)
		}
		last := old[len(old)-1]

		// Writer A stamps first and commits second; B stamps later and
		// commits first.
		stampA := e.Clock.Now()
		stampB := stampA.Add(3 * time.Millisecond)
		e.Clock.Advance(5 * time.Millisecond)
		b := appendEvent(t, e, stampB, event.ProductUpdated, 4)
		if got := follow(t, e, last, ""); len(got) != 0 {
			t.Fatalf("an unsettled event is shown before an earlier one commits: %v", got)
		}
		// The newest-first list shows everything at once, as before.
		if pages, _ := e.Walk(t, "/vendors/"+e.Vendor.ID+"/events?limit=100"); pages[0][0] != b {
			t.Fatalf("newest first: %v", pages)
		}
		a := appendEvent(t, e, stampA, event.ProductUpdated, 5)
		e.Clock.Advance(event.Settle)
		if got := follow(t, e, last, ""); !slices.Equal(got, []string{a, b}) {
			t.Fatalf("resumed after %s: %v, want %v", last, got, []string{a, b})
		}
		// after is a position: newest first it lists what is older.
		if pages, _ := e.Walk(t, "/vendors/"+e.Vendor.ID+"/events?limit=100&after="+old[2]); !slices.Equal(pages[0], []string{old[1], old[0]}) {
			t.Fatalf("newest first after %s: %v", old[2], pages)
		}
		// Several types, as one comma list.
		if got := follow(t, e, "", "&type="+event.ProductCreated+","+event.ProductPublished); !slices.Equal(got, []string{old[0], old[2]}) {
			t.Fatalf("two types: %v", got)
		}
		if got := follow(t, e, old[0], "&type="+event.ProductUpdated+","+event.ProductUpdated); !slices.Equal(got, []string{old[1], a, b}) {
			t.Fatalf("a type named twice: %v", got)
		}
	})
}

// TestFollowUnderConcurrentWriters: writers commit events while a follower
// polls oldest first from its last id and the clock moves on. Each writer
// stamps its event, and the clock may pass while it has not committed,
// but never by Settle (as every writer's deadline ensures in the service):
// the clock's driver moves it only while every uncommitted stamp stays
// younger than that. Once the writers are done and the log has settled,
// the follower has seen every event exactly once, in id order.
func TestFollowUnderConcurrentWriters(t *testing.T) {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.RateReads = 1 << 20 }})
	const writers, each = 4, 15
	var mu sync.Mutex
	inFlight := map[int]time.Time{}
	var written []string
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				stamp := e.Clock.Now()
				inFlight[w] = stamp
				mu.Unlock()
				ev := event.New(stamp, e.Vendor.ID, event.ProductUpdated, "product", "prd_x", map[string]any{"revision": i + 2})
				op, err := event.Op(ev)
				if err == nil {
					err = e.Store.Transact(context.Background(), op)
				}
				mu.Lock()
				delete(inFlight, w)
				if err == nil {
					written = append(written, ev.ID)
				}
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	// The driver: a second at a time, while no uncommitted stamp would
	// become older than half of Settle.
	tick := func() {
		mu.Lock()
		defer mu.Unlock()
		next := e.Clock.Now().Add(time.Second)
		for _, s := range inFlight {
			if next.Sub(s) > event.Settle/2 {
				return
			}
		}
		e.Clock.Advance(time.Second)
	}
	var seen []string
	poll := func() {
		after := ""
		if len(seen) > 0 {
			after = seen[len(seen)-1]
		}
		seen = append(seen, follow(t, e, after, "")...)
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			tick()
			poll()
		}
	}
	e.Clock.Advance(event.Settle + time.Second)
	poll()
	slices.Sort(written)
	if !slices.Equal(seen, written) {
		t.Fatalf("the follower saw %d events, %d written:\nseen    %v\nwritten %v", len(seen), len(written), seen, written)
	}
}

// TestFollowRefusals: what the list parameters refuse, with 400 and no
// page; the scope and the vendor are checked as on every list.
func TestFollowRefusals(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	base := "/vendors/" + e.Vendor.ID + "/events?"
	for q, want := range map[string]string{
		"type=product.teleported":                           "type",
		"type=product.created,product.teleported":           "type",
		"type=product.created&type=product.updated":         "type",
		"type=product.created,":                             "type",
		"order=up":                                          "order",
		"after=evt_x":                                       "after",
		"after=prd_0123456789abcdefghijklmnop":              "after",
		"after=" + url.QueryEscape(strings.Repeat("é", 30)): "after",
	} {
		p := e.Get(base+q).WantProblem(t, http.StatusBadRequest, "INVALID_PARAMETER")
		if !strings.HasPrefix(p.Detail, want+":") {
			t.Errorf("%s: detail %q does not name %s", q, p.Detail, want)
		}
	}
	// A cursor is bound to its order, types and start.
	appendEvent(t, e, e.Clock.Now(), event.ProductCreated, 1)
	appendEvent(t, e, e.Clock.Now().Add(time.Millisecond), event.ProductCreated, 1)
	e.Clock.Advance(event.Settle + time.Second)
	_, cursors := e.Walk(t, base+"order=asc&limit=1")
	if len(cursors) == 0 {
		t.Fatal("no cursor")
	}
	e.Get(base+"limit=1&page_after="+url.QueryEscape(cursors[0])).WantProblem(t, http.StatusBadRequest, "INVALID_CURSOR")
	e.Get(base+"order=asc&limit=1&type=product.created&page_after="+url.QueryEscape(cursors[0])).WantProblem(t, http.StatusBadRequest, "INVALID_CURSOR")
	reader := e.NewToken(e.Vendor.ID, auth.ProductsRead)
	e.Do(apitest.Req{Path: base + "order=asc", Token: reader}).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
	e.Get("/vendors/ven_nobody/events?order=asc").WantProblem(t, http.StatusNotFound, "NOT_FOUND")
}

// TestFollowPageBudget: an oldest-first page from an event id, with types,
// costs one sequential store round trip like every list page (its query
// starts beside the admission batch), on both stores, and so does the
// cursor page after it.
func TestFollowPageBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe})
		first := appendEvent(t, e, e.Clock.Now(), event.ProductCreated, 1)
		for i := range 6 {
			appendEvent(t, e, e.Clock.Now().Add(time.Duration(i+1)*time.Millisecond), event.ProductUpdated, i+2)
		}
		e.Clock.Advance(event.Settle + time.Second)
		// A first request warms what admission keeps (the token, the rate
		// window's lease), as in TestListPageBudgets.
		if res := e.Get("/vendors/" + e.Vendor.ID + "/events?limit=1"); res.Status != http.StatusOK {
			t.Fatal(res.Status)
		}
		for _, query := range []string{"order=asc&limit=2", "limit=2&after=" + first, "order=asc&limit=2&after=" + first,
			"order=asc&limit=2&type=product.updated,product.published&after=" + first} {
			path := "/vendors/" + e.Vendor.ID + "/events?" + query
			for n, page := 0, path; page != "" && n < 3; n++ {
				res := e.Get(page)
				if res.Status != http.StatusOK {
					t.Fatalf("%s: %d %s", page, res.Status, res.Body)
				}
				if got := rt.of("listEvents"); got != 1 {
					t.Errorf("%s page %d: %d sequential store round trips, budget 1", query, n+1, got)
				}
				var body struct {
					Page struct{ NextCursor *string } `json:"page"`
				}
				res.JSON(t, &body)
				page = ""
				if body.Page.NextCursor != nil {
					page = path + "&page_after=" + url.QueryEscape(*body.Page.NextCursor)
				}
			}
		}
	})
}
