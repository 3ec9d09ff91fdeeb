package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// pathParam is a net/http wildcard of a route's path.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// TestElsewhereAnswersWrongMethodsAsTheOwnerDoes: the function behind API
// Gateway's $default route (the vendors group, with every group's paths
// known, as app.Mounted mounts it) answers each method a path does not
// take exactly as the server of every group does: 405, the same Allow,
// METHOD_NOT_ALLOWED. A method the path does take, which only its own
// function serves, is 404 as an unknown path, and so is a path no group
// has. Its own routes are served and listed; the others are not listed.
func TestElsewhereAnswersWrongMethodsAsTheOwnerDoes(t *testing.T) {
	all := apitest.New(t, apitest.Options{})
	catchAll := apitest.New(t, apitest.Options{Groups: app.Mounted(httpapi.Vendors)})
	vendorsOnly := apitest.New(t, apitest.Options{Groups: []httpapi.Group{httpapi.Vendors}})
	if got, want := len(catchAll.Server.Routes()), len(vendorsOnly.Server.Routes()); got != want {
		t.Errorf("the catch-all lists %d routes, want the vendors group's %d", got, want)
	}
	methods := map[string][]string{} // path → its methods
	var paths []string
	for _, r := range all.Server.Routes() {
		if _, ok := methods[r.Path]; !ok {
			paths = append(paths, r.Path)
		}
		methods[r.Path] = append(methods[r.Path], r.Method)
	}
	own := map[string]bool{}
	for _, r := range vendorsOnly.Server.Routes() {
		own[r.Method+" "+r.Path] = true
	}
	wrong := 0
	for _, p := range paths {
		path := pathParam.ReplaceAllString(p, "x1")
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
			switch {
			case own[m+" "+p]:
				if got := catchAll.Do(apitest.Req{Method: m, Path: path, Token: catchAll.Token}); got.Status == http.StatusMethodNotAllowed {
					t.Errorf("%s %s: its own route answered 405", m, p)
				}
			case slices.Contains(methods[p], m):
				// API Gateway sends these to the path's function; only a
				// path it matches differently from net/http reaches the
				// catch-all, which answers as before it knew the path.
				// Sent past the contract check: no operation documents a
				// 404 it cannot meet through the gateway.
				rec := httptest.NewRecorder()
				catchAll.Server.ServeHTTP(rec, httptest.NewRequest(m, "/v1"+path, nil))
				if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"code":"NOT_FOUND"`) {
					t.Errorf("%s %s: %d %s, want 404 NOT_FOUND", m, p, rec.Code, rec.Body)
				}
			default:
				got := catchAll.Do(apitest.Req{Method: m, Path: path, Token: catchAll.Token})
				wrong++
				want := all.Do(apitest.Req{Method: m, Path: path, Token: all.Token})
				if want.Status != http.StatusMethodNotAllowed || got.Status != want.Status || got.Header.Get("Allow") != want.Header.Get("Allow") {
					t.Errorf("%s %s: the catch-all answered %d, Allow %q; the owner %d, Allow %q", m, p, got.Status, got.Header.Get("Allow"), want.Status, want.Header.Get("Allow"))
				}
				if m != http.MethodHead {
					got.WantProblem(t, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
				}
			}
		}
	}
	if wrong < len(paths) {
		t.Errorf("only %d wrong methods over %d paths", wrong, len(paths))
	}
	catchAll.Do(apitest.Req{Method: http.MethodPut, Path: "/vendors/x1/no-such-thing", Token: catchAll.Token}).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
}
