package main

import (
	"encoding/base64"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
)

var testRoutes = []Route{
	{Key: "GET /v1/vendors/{vendor_id}", Method: "GET", Path: "/v1/vendors/{vendor_id}", Function: "vendors"},
	{Key: "ANY /v1/vendors/{vendor_id}", Method: "ANY", Path: "/v1/vendors/{vendor_id}", Function: "vendors"},
	{Key: "GET /v1/vendors/{vendor_id}/products/{product_id}", Method: "GET", Path: "/v1/vendors/{vendor_id}/products/{product_id}", Function: "products"},
	{Key: "GET /v1/vendors/{vendor_id}/products/export", Method: "GET", Path: "/v1/vendors/{vendor_id}/products/export", Function: "exports"},
	{Key: "POST /v1/vendors/{vendor_id}/products", Method: "POST", Path: "/v1/vendors/{vendor_id}/products", Function: "products"},
	{Key: "$default", Function: "catchall"},
}

// TestMatch: API Gateway's choice of route: an exact method before ANY, a
// literal segment before a variable, $default for everything else.
func TestMatch(t *testing.T) {
	g := &Gateway{Routes: testRoutes}
	for _, c := range []struct {
		method, path, key string
		params            map[string]string
	}{
		{"GET", "/v1/vendors/ven_1", "GET /v1/vendors/{vendor_id}", map[string]string{"vendor_id": "ven_1"}},
		{"DELETE", "/v1/vendors/ven_1", "ANY /v1/vendors/{vendor_id}", map[string]string{"vendor_id": "ven_1"}},
		{"GET", "/v1/vendors/ven_1/products/export", "GET /v1/vendors/{vendor_id}/products/export", map[string]string{"vendor_id": "ven_1"}},
		{"GET", "/v1/vendors/ven_1/products/prd_2", "GET /v1/vendors/{vendor_id}/products/{product_id}", map[string]string{"vendor_id": "ven_1", "product_id": "prd_2"}},
		{"PUT", "/v1/vendors/ven_1/products", "$default", nil},
		{"GET", "/v1/vendors/", "$default", nil},
		{"GET", "/v1/vendors//products/prd_2", "$default", nil},
		{"GET", "/elsewhere", "$default", nil},
	} {
		r, params, ok := g.match(c.method, c.path)
		if !ok || r.Key != c.key || len(params) != len(c.params) {
			t.Errorf("%s %s: route %q %v, want %q %v", c.method, c.path, r.Key, params, c.key, c.params)
			continue
		}
		for k, v := range c.params {
			if params[k] != v {
				t.Errorf("%s %s: %s=%q, want %q", c.method, c.path, k, params[k], v)
			}
		}
	}
}

// TestEvent: the payload 2.0 event carries the raw path and query, the
// lower-cased headers, the route and its parameters, and a body that is not
// text base64-encoded.
func TestEvent(t *testing.T) {
	r := httptest.NewRequest("PUT", "http://api.test/v1/vendors/ven_1/media/abc?x=1&x=2", strings.NewReader("\x89PNG\x00"))
	r.Header.Set("Content-Type", "image/png")
	r.Header.Set("X-Custom", "a")
	r.Header.Add("X-Custom", "b")
	ev := event(r, []byte("\x89PNG\x00"), testRoutes[1], map[string]string{"vendor_id": "ven_1"}, "req-1", clocktest.Date(2026, 3, 4, 10, 0, 0))
	if ev.Version != "2.0" || ev.RouteKey != "ANY /v1/vendors/{vendor_id}" || ev.RawPath != "/v1/vendors/ven_1/media/abc" || ev.RawQueryString != "x=1&x=2" {
		t.Fatalf("event %+v", ev)
	}
	if ev.Headers["x-custom"] != "a,b" || ev.QueryStringParameters["x"] != "1,2" || ev.PathParameters["vendor_id"] != "ven_1" || ev.RequestContext.HTTP.Method != "PUT" {
		t.Fatalf("event %+v", ev)
	}
	if b, _ := base64.StdEncoding.DecodeString(ev.Body); !ev.IsBase64Encoded || string(b) != "\x89PNG\x00" {
		t.Fatalf("binary body %q (base64 %v)", ev.Body, ev.IsBase64Encoded)
	}
	j := httptest.NewRequest("POST", "http://api.test/v1/vendors/ven_1/products", strings.NewReader(`{"a":1}`))
	j.Header.Set("Content-Type", "application/json")
	if ev := event(j, []byte(`{"a":1}`), testRoutes[4], nil, "req-2", time.Now()); ev.IsBase64Encoded || ev.Body != `{"a":1}` {
		t.Fatalf("JSON body %q (base64 %v)", ev.Body, ev.IsBase64Encoded)
	}
}

// FuzzMatch: any method and path finds a route (at worst $default), and
// the parameters it extracts are the path's own segments.
func FuzzMatch(f *testing.F) {
	for _, s := range []string{"/v1/vendors/ven_1", "/v1/vendors/ven_1/products/export", "//", "", "/v1/vendors/{vendor_id}"} {
		f.Add("GET", s)
	}
	g := &Gateway{Routes: testRoutes}
	f.Fuzz(func(t *testing.T, method, path string) {
		r, params, ok := g.match(method, path)
		if !ok {
			t.Fatalf("no route for %s %q", method, path)
		}
		for _, v := range params {
			if v == "" || strings.Contains(v, "/") || !strings.Contains(path, v) {
				t.Fatalf("%s %q: route %s parameter %q", method, path, r.Key, v)
			}
		}
	})
}
