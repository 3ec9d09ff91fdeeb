package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// widgets is a small group used only by these tests to exercise the shared
// list, body and idempotency mechanisms over real HTTP.
func widgets(st func() store.Store) httpapi.Group {
	return httpapi.Group{Name: "widgets", Routes: func(s *httpapi.Server) []httpapi.Route {
		return []httpapi.Route{
			{Method: http.MethodGet, Path: "/vendors/{vendor_id}/widgets", Operation: "listWidgets", Scopes: []auth.Scope{auth.ProductsRead},
				Handle: func(ctx context.Context, c *httpapi.Call) error {
					c.AllowFilters("color")
					color := c.R.URL.Query().Get("color")
					pr, err := c.PageParams(ctx, "widgets", "color="+color)
					if err != nil {
						return err
					}
					var out []json.RawMessage
					after := pr.After
					last := ""
					for len(out) < pr.Limit+1 {
						items, err := st().Query(ctx, store.Query{PK: datamodel.VendorPartition(c.Principal.Vendor.ID), Prefix: "WIDGET#", After: after, Limit: pr.Limit + 1})
						if err != nil {
							return errs.Unavailablef(err, "widgets could not be read")
						}
						for _, it := range items {
							var w struct{ Color string }
							json.Unmarshal(it.Data, &w)
							if color == "" || w.Color == color {
								out = append(out, it.Data)
								if len(out) <= pr.Limit {
									last = it.SK
								}
							}
						}
						if len(items) < pr.Limit+1 {
							break
						}
						after = items[len(items)-1].SK
					}
					more := len(out) > pr.Limit
					if more {
						out = out[:pr.Limit]
					}
					return httpapi.ListPage(ctx, c, pr, store.PageOf[json.RawMessage]{Items: out, Last: last, More: more})
				}},
			{Method: http.MethodPost, Path: "/vendors/{vendor_id}/widgets", Operation: "createWidget", Scopes: []auth.Scope{auth.ProductsWrite},
				Handle: func(ctx context.Context, c *httpapi.Call) error {
					body, err := c.Body(4096)
					if err != nil {
						return err
					}
					var in struct {
						Name  string `json:"name"`
						Qty   int    `json:"qty"`
						Color string `json:"color"`
					}
					if err := httpapi.DecodeStrict(body, &in); err != nil {
						return err
					}
					if in.Name == "" {
						return errs.E(errs.CodeInvalidRequest, "name: is required")
					}
					return c.Mutate(ctx, "widgets.create", idempotency.ProductKeyPattern, body, func(ctx context.Context) (idempotency.Mutation, error) {
						id := ids.Sortable("wid", time.Now())
						w := map[string]any{"id": id, "name": in.Name, "qty": in.Qty, "color": in.Color}
						data, _ := json.Marshal(w)
						it := store.Item{PK: datamodel.VendorPartition(c.Principal.Vendor.ID), SK: "WIDGET#" + id, Version: 1, Data: data}
						return idempotency.Mutation{Ops: []store.Op{store.Put(it, store.IfAbsent())}, Status: http.StatusCreated, Body: httpapi.Envelope(w)}, nil
					})
				}},
		}
	}}
}

func newEnv(t *testing.T, kind apitest.StoreKind, o apitest.Options) *apitest.Env {
	var env *apitest.Env
	o.Store = kind
	o.Groups = append([]httpapi.Group{httpapi.Vendors, widgets(func() store.Store { return env.Store })}, o.Groups...)
	env = apitest.New(t, o)
	return env
}

func TestVendorRoutes(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{})
		r := e.Get("/vendors")
		if r.Status != 200 {
			t.Fatalf("GET /vendors = %d %s", r.Status, r.Body)
		}
		var list struct {
			Data []map[string]any `json:"data"`
		}
		r.JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0]["id"] != e.Vendor.ID || list.Data[0]["name"] != "Acme Goods" || list.Data[0]["slug"] != "acme-goods" || len(list.Data[0]) != 3 {
			t.Fatalf("vendor list = %s", r.Body)
		}
		r = e.Get("/vendors/" + e.Vendor.ID)
		var one struct {
			Data map[string]any `json:"data"`
		}
		r.JSON(t, &one)
		if r.Status != 200 || one.Data["id"] != e.Vendor.ID || len(one.Data) != 3 {
			t.Fatalf("GET vendor = %d %s", r.Status, r.Body)
		}
		for _, h := range []string{"X-Request-Id", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
			if r.Header.Get(h) == "" {
				t.Errorf("missing header %s", h)
			}
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		// Another vendor exists but is not granted to this token.
		other, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other")
		if err != nil {
			t.Fatal(err)
		}
		e.Get("/vendors/"+other.ID).WantProblem(t, 404, "NOT_FOUND")
		e.Get("/vendors/ven_doesnotexist").WantProblem(t, 404, "NOT_FOUND")
		e.Get("/vendors/"+strings.Repeat("x", 129)).WantProblem(t, 404, "NOT_FOUND")
	})
}

func TestRequestIDOnEveryResponse(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{})
	seen := map[string]bool{}
	for _, r := range []*apitest.Resp{
		e.Get("/vendors"),
		e.Do(apitest.Req{Path: "/vendors"}),
		e.Do(apitest.Req{Path: "/nope", Token: e.Token}),
		e.Do(apitest.Req{Path: "/"}),
		e.Do(apitest.Req{Method: http.MethodDelete, Path: "/vendors", Token: e.Token}),
		e.Do(apitest.Req{Path: "/openapi.json"}),
	} {
		id := r.Header.Get("X-Request-Id")
		if !strings.HasPrefix(id, "req_") || seen[id] {
			t.Fatalf("X-Request-Id %q missing or repeated (status %d)", id, r.Status)
		}
		seen[id] = true
	}
	e.Do(apitest.Req{Path: "/nope"}).WantProblem(t, 404, "NOT_FOUND")
	r := e.Do(apitest.Req{Method: http.MethodDelete, Path: "/vendors", Token: e.Token})
	r.WantProblem(t, 405, "METHOD_NOT_ALLOWED")
	if r.Header.Get("Allow") != "GET" {
		t.Fatalf("Allow = %q", r.Header.Get("Allow"))
	}
}

func TestProblemType(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{Config: func(c *config.Config) { c.ErrorsURL = "https://errors.example.com/v1" }})
	p := e.Do(apitest.Req{Path: "/vendors"}).WantProblem(t, 401, "UNAUTHENTICATED")
	if p.Type != "https://errors.example.com/v1#unauthenticated" || p.Title == "" || p.Detail == "" {
		t.Fatalf("problem = %+v", p)
	}
}

func TestAuthentication(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{})
		ctx := context.Background()
		tokens := auth.Service{Store: e.Store, Clock: e.Clock}

		expiring, err := tokens.Issue(ctx, e.Vendor.ID, auth.AllScopes(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		revoked, _ := tokens.Issue(ctx, e.Vendor.ID, auth.AllScopes(), 0)
		if _, err := tokens.Revoke(ctx, revoked.ID); err != nil {
			t.Fatal(err)
		}
		wrongSecret := e.Token[:len(e.Token)-4] + "aaaa"
		if wrongSecret == e.Token {
			wrongSecret = e.Token[:len(e.Token)-4] + "bbbb"
		}
		cases := map[string]apitest.Req{
			"missing":       {Path: "/vendors"},
			"not bearer":    {Path: "/vendors", Headers: map[string]string{"Authorization": "Basic " + e.Token}},
			"malformed":     {Path: "/vendors", Token: "not-a-token"},
			"unknown":       {Path: "/vendors", Token: "mkpat_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52)},
			"wrong secret":  {Path: "/vendors", Token: wrongSecret},
			"revoked":       {Path: "/vendors", Token: revoked.Token},
			"revoked, path": {Path: "/vendors/" + e.Vendor.ID, Token: revoked.Token},
		}
		for name, req := range cases {
			r := e.Do(req)
			r.WantProblem(t, 401, "UNAUTHENTICATED")
			if !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: WWW-Authenticate = %q", name, r.Header.Get("WWW-Authenticate"))
			}
			if r.Header.Get("RateLimit-Limit") != "" {
				t.Errorf("%s: rate headers on a 401", name)
			}
		}
		if r := e.Do(apitest.Req{Path: "/vendors", Token: expiring.Token}); r.Status != 200 {
			t.Fatalf("live expiring token: %d", r.Status)
		}
		e.Clock.Advance(time.Hour)
		e.Do(apitest.Req{Path: "/vendors", Token: expiring.Token}).WantProblem(t, 401, "UNAUTHENTICATED")

		// A token stops working when the vendor's ownership moves.
		if _, err := (account.Service{Store: e.Store, Clock: e.Clock}).TransferOwner(ctx, e.Vendor.ID, ""); err != nil {
			t.Fatal(err)
		}
		e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: e.Token}).WantProblem(t, 401, "UNAUTHENTICATED")
		fresh := e.NewToken(e.Vendor.ID, auth.VendorsRead)
		if r := e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID, Token: fresh}); r.Status != 200 {
			t.Fatalf("token of the new owner: %d %s", r.Status, r.Body)
		}
	})
}

func TestScopes(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{})
	noVendors := e.NewToken(e.Vendor.ID, auth.ProductsRead)
	r := e.Do(apitest.Req{Path: "/vendors", Token: noVendors})
	p := r.WantProblem(t, 403, "INSUFFICIENT_SCOPE")
	if !strings.Contains(p.Detail, "vendors.read") || !strings.Contains(r.Header.Get("WWW-Authenticate"), "insufficient_scope") {
		t.Fatalf("403 detail %q, header %q", p.Detail, r.Header.Get("WWW-Authenticate"))
	}
	// A vendor not granted is 404 even without the scope: grants come first.
	other, _ := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other")
	e.Do(apitest.Req{Path: "/vendors/" + other.ID, Token: noVendors}).WantProblem(t, 404, "NOT_FOUND")
}

func TestRateWindows(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Config: func(c *config.Config) { c.RateReads, c.RateWrites = 3, 2 }})
		second := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		reset := apitest.Start.Truncate(time.Minute).Add(time.Minute).Unix()
		for i, tok := range []string{e.Token, second, e.Token} {
			r := e.Do(apitest.Req{Path: "/vendors", Token: tok})
			if r.Status != 200 {
				t.Fatalf("read %d: %d", i, r.Status)
			}
			if got := r.Header.Get("RateLimit-Remaining"); got != fmt.Sprint(2-i) {
				t.Fatalf("read %d: RateLimit-Remaining %s", i, got)
			}
			if r.Header.Get("RateLimit-Limit") != "3" || r.Header.Get("RateLimit-Reset") != fmt.Sprint(reset) {
				t.Fatalf("read %d: headers %v", i, r.Header)
			}
		}
		// The window is the vendor's: a replacement token does not reset it.
		third := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		r := e.Do(apitest.Req{Path: "/vendors", Token: third})
		r.WantProblem(t, 429, "RATE_LIMITED")
		if r.Header.Get("Retry-After") != "30" {
			t.Fatalf("Retry-After = %q, want 30", r.Header.Get("Retry-After"))
		}
		// Writes have their own allowance.
		for i := 0; i < 2; i++ {
			r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
				Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("write-key-%d", i)}})
			if r.Status != 201 || r.Header.Get("RateLimit-Limit") != "2" {
				t.Fatalf("write %d: %d %s %v", i, r.Status, r.Body, r.Header)
			}
		}
		e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
			Body: map[string]any{"name": "w"}, Headers: map[string]string{"Idempotency-Key": "write-key-x"}}).WantProblem(t, 429, "RATE_LIMITED")
		// A new window admits again.
		e.Clock.Advance(30 * time.Second)
		if r := e.Get("/vendors"); r.Status != 200 || r.Header.Get("RateLimit-Remaining") != "2" {
			t.Fatalf("after reset: %d %v", r.Status, r.Header)
		}
	})
}

func TestRateWindowConcurrent(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{Config: func(c *config.Config) { c.RateReads = 10 }})
	counts := apitest.Statuses(apitest.Race(25, func(int) *apitest.Resp { return e.Get("/vendors") }))
	if counts[200] != 10 || counts[429] != 15 {
		t.Fatalf("statuses %v, want 10 OK and 15 rate limited", counts)
	}
}

// failing is a store whose reads and writes fail, as an outage would.
type failing struct {
	store.Store
	fail func() bool
	slow time.Duration
}

var errOutage = errors.New("simulated outage")

func (f failing) wait(ctx context.Context) error {
	if f.slow > 0 {
		select {
		case <-time.After(f.slow):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.fail() {
		return errOutage
	}
	return nil
}

func (f failing) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	return f.Store.GetMany(ctx, keys)
}

func (f failing) Increment(ctx context.Context, k store.Key, attr string, d, below, exp int64) (int64, error) {
	if err := f.wait(ctx); err != nil {
		return 0, err
	}
	return f.Store.Increment(ctx, k, attr, d, below, exp)
}

func TestFailsClosed(t *testing.T) {
	var broken bool
	var mu sync.Mutex
	isBroken := func() bool { mu.Lock(); defer mu.Unlock(); return broken }
	e := newEnv(t, apitest.SQLite, apitest.Options{WrapStore: func(s store.Store) store.Store { return failing{Store: s, fail: isBroken} }})
	if r := e.Get("/vendors"); r.Status != 200 {
		t.Fatalf("healthy: %d", r.Status)
	}
	mu.Lock()
	broken = true
	mu.Unlock()
	r := e.Get("/vendors")
	p := r.WantProblem(t, 503, "SERVICE_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" || strings.Contains(p.Detail, "simulated") {
		t.Fatalf("503 without Retry-After or leaking internals: %v %+v", r.Header, p)
	}
	if !strings.Contains(e.Logs.String(), "simulated outage") {
		t.Fatal("the cause is not logged")
	}
}

func TestFailsClosedOnTimeout(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{
		Config: func(c *config.Config) { c.StoreTimeout = 50 * time.Millisecond },
		WrapStore: func(s store.Store) store.Store {
			return failing{Store: s, fail: func() bool { return false }, slow: time.Second}
		},
	})
	r := e.Get("/vendors")
	r.WantProblem(t, 503, "SERVICE_UNAVAILABLE")
	if r.Header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
}

func createWidget(e *apitest.Env, key string, body any) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: e.Token,
		Body: body, Headers: map[string]string{"Idempotency-Key": key}})
}

func countWidgets(t *testing.T, e *apitest.Env) int {
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: "WIDGET#", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(items)
}

// TestJSONBodies sends the malformed bodies of the contract to real
// create routes, each through the parser that route uses (c.Body and the
// group's fields parser), and checks the problem and that nothing was
// written.
func TestJSONBodies(t *testing.T) {
	e := catalogEnv(t, apitest.SQLite)
	// Each route with a valid body as JSON text, and a field whose type the
	// route checks.
	routes := []struct {
		name, path, valid, typed string
	}{
		{"products", "/products", mustJSON(t, simpleProduct("shirt")), "price"},
		{"connections", "/connections", mustJSON(t, connectionBody("marketplace_a", destinationRoles)), "display_name"},
	}
	for _, rt := range routes {
		valid := strings.TrimSuffix(rt.valid, "}")
		cases := []struct {
			name, body, ctype, code, detail string
		}{
			{"malformed", rt.valid[:len(rt.valid)-1], "application/json", "INVALID_JSON", "body"},
			{"not an object", `["x"]`, "application/json", "INVALID_REQUEST", "object"},
			{"unknown property", valid + `,"colour":"red"}`, "application/json", "INVALID_REQUEST", "colour"},
			{"wrong type", strings.Replace(rt.valid, `"`+rt.typed+`":`, `"`+rt.typed+`":[true],"x_`+rt.typed+`":`, 1), "application/json", "INVALID_REQUEST", rt.typed},
			{"trailing data", rt.valid + ` {}`, "application/json", "INVALID_JSON", "body"},
			{"duplicate property", valid + `,"` + rt.typed + `":1}`, "application/json", "INVALID_JSON", rt.typed},
			{"too large", valid + `,"x_pad":"` + strings.Repeat("x", 1<<20) + `"}`, "application/json", "REQUEST_BODY_TOO_LARGE", "body"},
			{"wrong content type", rt.valid, "text/plain", "UNSUPPORTED_CONTENT_TYPE", "Content-Type"},
			{"missing field", `{}`, "application/json", "INVALID_REQUEST", ""},
		}
		for i, tc := range cases {
			t.Run(rt.name+"/"+tc.name, func(t *testing.T) {
				r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + rt.path, Token: e.Token, Body: tc.body,
					Headers: map[string]string{"Content-Type": tc.ctype, "Idempotency-Key": fmt.Sprintf("json-case-%02d", i)}})
				p := r.WantProblem(t, 400, tc.code)
				if !strings.Contains(p.Detail, tc.detail) {
					t.Fatalf("detail %q does not name %q", p.Detail, tc.detail)
				}
			})
		}
	}
	for _, prefix := range []string{datamodel.ProductPrefix, datamodel.ConnectionPrefix} {
		items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: prefix, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 0 {
			t.Fatalf("%d %s items written by rejected requests", len(items), prefix)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIdempotencyKeys(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{})
		createWidget(e, "", map[string]any{"name": "a"}).WantProblem(t, 400, "IDEMPOTENCY_KEY_REQUIRED")
		createWidget(e, "short", map[string]any{"name": "a"}).WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")
		createWidget(e, "has space in it", map[string]any{"name": "a"}).WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")
		createWidget(e, strings.Repeat("k", 129), map[string]any{"name": "a"}).WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")

		first := createWidget(e, "key-00000001", map[string]any{"name": "a", "qty": 2})
		if first.Status != 201 || first.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first: %d %v", first.Status, first.Header)
		}
		// The same input, formatted differently, is an exact replay.
		replay := createWidget(e, "key-00000001", `{ "qty": 2, "name": "a" }`)
		if replay.Status != 201 || string(replay.Body) != string(first.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s vs %s", replay.Status, replay.Body, first.Body)
		}
		createWidget(e, "key-00000001", map[string]any{"name": "b"}).WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")
		// Keys are per token: another token's same key is new work.
		other := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/widgets", Token: other,
			Body: map[string]any{"name": "a", "qty": 2}, Headers: map[string]string{"Idempotency-Key": "key-00000001"}})
		if r.Status != 201 || string(r.Body) == string(first.Body) {
			t.Fatalf("other token: %d %s", r.Status, r.Body)
		}
		if n := countWidgets(t, e); n != 2 {
			t.Fatalf("%d widgets, want 2", n)
		}
		// Receipts answer for 30 days at least, then expire.
		e.Clock.Advance(30 * 24 * time.Hour)
		if r := createWidget(e, "key-00000001", map[string]any{"name": "a", "qty": 2}); r.Status != 201 || string(r.Body) != string(first.Body) {
			t.Fatalf("replay after 30 days: %d %s", r.Status, r.Body)
		}
	})
}

func TestIdempotencyConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Config: func(c *config.Config) { c.RateWrites = 1000 }})
		rs := apitest.Race(20, func(int) *apitest.Resp { return createWidget(e, "same-key-1", map[string]any{"name": "same"}) })
		for i, r := range rs {
			if r.Status != 201 || string(r.Body) != string(rs[0].Body) {
				t.Fatalf("response %d: %d %s, want the one original", i, r.Status, r.Body)
			}
		}
		if n := countWidgets(t, e); n != 1 {
			t.Fatalf("%d widgets from one key, want 1", n)
		}
		// The same key with different bodies: one wins, the rest are 409.
		counts := apitest.Statuses(apitest.Race(20, func(i int) *apitest.Resp {
			return createWidget(e, "race-key-2", map[string]any{"name": fmt.Sprintf("w%d", i)})
		}))
		if counts[201] != 1 || counts[409] != 19 {
			t.Fatalf("statuses %v, want one 201 and 19 409", counts)
		}
		if n := countWidgets(t, e); n != 2 {
			t.Fatalf("%d widgets, want 2", n)
		}
	})
}

func TestCursorPages(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Config: func(c *config.Config) { c.RateReads, c.RateWrites = 1000, 1000 }})
		var ops []store.Op
		for i := 0; i < 23; i++ {
			color := "red"
			if i%3 == 0 {
				color = "blue"
			}
			data, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("w%02d", i), "color": color})
			ops = append(ops, store.Put(store.Item{PK: datamodel.VendorPartition(e.Vendor.ID), SK: fmt.Sprintf("WIDGET#%02d", i), Version: 1, Data: data}, store.IfAbsent()))
		}
		if err := e.Store.Transact(context.Background(), ops...); err != nil {
			t.Fatal(err)
		}
		base := "/vendors/" + e.Vendor.ID + "/widgets"
		walk := func(query string, limit int) (ids []string, cursors []string) {
			pages, cursors := e.Walk(t, base+"?limit="+fmt.Sprint(limit)+query)
			for _, page := range pages {
				if len(page) > limit {
					t.Fatalf("page of %d items for limit %d", len(page), limit)
				}
				ids = append(ids, page...)
			}
			return ids, cursors
		}
		got, cursors := walk("", 5)
		if len(got) != 23 || got[0] != "w00" || got[22] != "w22" || len(cursors) != 4 {
			t.Fatalf("walked %v with %d cursors", got, len(cursors))
		}
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("not in stable order: %v", got)
			}
		}
		blue, _ := walk("&color=blue", 3)
		if len(blue) != 8 {
			t.Fatalf("blue walk = %v", blue)
		}
		// Exact page size: no empty trailing page.
		exact, cur := walk("", 23)
		if len(exact) != 23 || len(cur) != 0 {
			t.Fatalf("one full page: %d items, %d cursors", len(exact), len(cur))
		}
		// Default limit is 50.
		r := e.Get(base)
		var page struct{ Data []any }
		r.JSON(t, &page)
		if len(page.Data) != 23 {
			t.Fatalf("default page has %d items", len(page.Data))
		}

		c := cursors[0]
		other := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		bad := []apitest.Req{
			{Path: base + "?limit=0", Token: e.Token},
			{Path: base + "?limit=101", Token: e.Token},
			{Path: base + "?limit=ten", Token: e.Token},
			{Path: base + "?limit=5&limit=6", Token: e.Token},
			{Path: base + "?sort=name", Token: e.Token},
		}
		for _, req := range bad {
			e.Do(req).WantProblem(t, 400, "INVALID_PARAMETER")
		}
		badCursors := []apitest.Req{
			{Path: base + "?page_after=" + c + "x", Token: e.Token},                   // altered
			{Path: base + "?page_after=" + strings.Repeat("a", 1025), Token: e.Token}, // too long
			{Path: base + "?page_after=not-a-cursor", Token: e.Token},                 // garbage
			{Path: base + "?page_after=", Token: e.Token},                             // empty
			{Path: base + "?color=blue&page_after=" + c, Token: e.Token},              // other filters
			{Path: base + "?page_after=" + c, Token: other},                           // other token
		}
		for i, req := range badCursors {
			p := e.Do(req).WantProblem(t, 400, "INVALID_CURSOR")
			if !strings.Contains(p.Detail, "page_after") {
				t.Fatalf("case %d: detail %q", i, p.Detail)
			}
		}
	})
}

func TestCursorBoundToVendor(t *testing.T) {
	// A cursor minted for one vendor is refused for another, even with a
	// token that may read both lists' shapes.
	e := newEnv(t, apitest.SQLite, apitest.Options{})
	ops := []store.Op{}
	for i := 0; i < 3; i++ {
		ops = append(ops, store.Put(store.Item{PK: datamodel.VendorPartition(e.Vendor.ID), SK: fmt.Sprintf("WIDGET#%d", i), Version: 1, Data: []byte(`{}`)}, store.Cond{}))
	}
	e.Store.Transact(context.Background(), ops...)
	r := e.Get("/vendors/" + e.Vendor.ID + "/widgets?limit=1")
	var page struct {
		Page struct {
			NextCursor string `json:"next_cursor"`
		} `json:"page"`
	}
	r.JSON(t, &page)
	other, _ := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other")
	tok := e.NewToken(other.ID, auth.AllScopes()...)
	e.Do(apitest.Req{Path: "/vendors/" + other.ID + "/widgets?page_after=" + page.Page.NextCursor, Token: tok}).WantProblem(t, 400, "INVALID_CURSOR")
}

func TestErrorCatalog(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{})
	r := e.Do(apitest.Req{Path: "/errors"})
	var out struct {
		Data []struct {
			Code   string
			Status int
			Type   string
		}
	}
	r.JSON(t, &out)
	if r.Status != 200 || len(out.Data) != len(errs.Catalog()) {
		t.Fatalf("GET /errors: %d, %d codes", r.Status, len(out.Data))
	}
	for _, c := range out.Data {
		if c.Code != strings.ToUpper(c.Code) || c.Status < 400 || !strings.HasSuffix(c.Type, "#"+strings.ReplaceAll(strings.ToLower(c.Code), "_", "-")) {
			t.Errorf("catalog entry %+v", c)
		}
	}
	_ = app.AllGroups
}
