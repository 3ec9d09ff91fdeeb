package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// rawDo sends a request built by hand, for what apitest.Req cannot say:
// repeated headers, raw paths.
func rawDo(t *testing.T, e *apitest.Env, method, path string, headers http.Header, body []byte) *apitest.Resp {
	t.Helper()
	req, err := http.NewRequest(method, e.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = headers
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &apitest.Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

// Bodies encoding/json would accept by guessing are refused whole, and
// nothing changes: duplicate properties (the last used to win), invalid
// UTF-8 (stored as U+FFFD), lone surrogate escapes, NUL in a string.
func TestStrictJSONBodies(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		mustCreate(t, e, "strict-key-0", simpleProduct("strict"))
		id := firstItem(t, e)
		adjustPath := "/vendors/" + e.Vendor.ID + "/inventory-items/" + id + "/adjustments"
		for i, tc := range []struct {
			name, body, detail string
		}{
			{"duplicate key", `{"target_on_hand":1,"expected_version":1,"target_on_hand":9}`, `"target_on_hand" appears more than once`},
			{"duplicate key in another case", `{"target_on_hand":1,"expected_version":1,"TARGET_ON_HAND":9}`, "appears more than once"},
			{"invalid utf-8", "{\"target_on_hand\":1,\"expected_version\":1,\"authority_connection_id\":\"caf\xe9\"}", "invalid UTF-8"},
			{"nul", `{"target_on_hand":1,"expected_version":1,"authority_connection_id":"a\u0000b"}`, "NUL"},
			{"lone surrogate", `{"target_on_hand":1,"expected_version":1,"authority_connection_id":"\ud800"}`, "surrogate"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				h := http.Header{"Authorization": {"Bearer " + e.Token}, "Content-Type": {"application/json"}, "Idempotency-Key": {"strict-adjust-" + string(rune('a'+i))}}
				p := rawDo(t, e, http.MethodPost, adjustPath, h, []byte(tc.body)).WantProblem(t, 400, "INVALID_JSON")
				if !strings.Contains(p.Detail, tc.detail) {
					t.Errorf("detail %q does not mention %q", p.Detail, tc.detail)
				}
			})
		}
		// A product name with a NUL is refused too: every group's bodies
		// pass the same check.
		body := `{"kind":"simple","name":"Linen\u0000shirt","slug":"nul-shirt","price":4500,"category":"apparel","sku":"NUL-1"}`
		h := http.Header{"Authorization": {"Bearer " + e.Token}, "Content-Type": {"application/json"}, "Idempotency-Key": {"strict-product-1"}}
		rawDo(t, e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/products", h, []byte(body)).WantProblem(t, 400, "INVALID_JSON")

		// Two Idempotency-Key headers: refused, whichever order a proxy kept.
		h = http.Header{"Authorization": {"Bearer " + e.Token}, "Content-Type": {"application/json"}, "Idempotency-Key": {"strict-two-1", "strict-two-2"}}
		p := rawDo(t, e, http.MethodPost, adjustPath, h, []byte(`{"target_on_hand":9,"expected_version":1}`)).WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")
		if !strings.Contains(p.Detail, "once") {
			t.Errorf("two keys: %q", p.Detail)
		}
		// Two Authorization headers are no credential.
		h = http.Header{"Authorization": {"Bearer " + e.Token, "Bearer " + e.Token}}
		rawDo(t, e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/inventory-items", h, nil).WantProblem(t, 401, "UNAUTHENTICATED")

		// Nothing changed: the item is still at its first version, on hand 0.
		var got itemBody
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+id).JSON(t, &got)
		if got.Data.Version != 1 || got.Data.OnHand != 0 {
			t.Fatalf("after refused requests: %+v", got.Data)
		}
		// The well-formed request still works.
		h = http.Header{"Authorization": {"Bearer " + e.Token}, "Content-Type": {"application/json"}, "Idempotency-Key": {"strict-good-1"}}
		if r := rawDo(t, e, http.MethodPost, adjustPath, h, []byte(`{"target_on_hand":9,"expected_version":1}`)); r.Status != 200 {
			t.Fatalf("valid adjustment: %d %s", r.Status, r.Body)
		}
	})
}

// A path with ".", ".." or empty segments is answered with problem+json,
// not with the mux's text/html redirect to a path the client did not name.
func TestNonCanonicalPaths(t *testing.T) {
	e := catalogEnv(t, apitest.SQLite)
	auth := http.Header{"Authorization": {"Bearer " + e.Token}}
	for _, p := range []string{
		"/vendors/" + e.Vendor.ID + "/../" + e.Vendor.ID + "/products",
		"/vendors/" + e.Vendor.ID + "/./products",
		"/vendors//" + e.Vendor.ID + "/products",
		"/vendors/" + e.Vendor.ID + "/products/..",
		"/../v1/vendors/" + e.Vendor.ID,
		"/vendors/" + e.Vendor.ID + "/%2e%2e/" + e.Vendor.ID + "/products",
	} {
		r := rawDo(t, e, http.MethodGet, p, auth.Clone(), nil)
		if r.Status != 400 || r.Header.Get("Content-Type") != "application/problem+json" || r.Header.Get("Location") != "" {
			t.Errorf("GET %s: %d %s %q, want a 400 problem+json", p, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
	if r := rawDo(t, e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/products", auth.Clone(), nil); r.Status != 200 {
		t.Fatalf("canonical path: %d %s", r.Status, r.Body)
	}
}
