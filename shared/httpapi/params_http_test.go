package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/openapi"
)

// badParams are values just past what the document allows of p, each
// with what it breaks.
func badParams(t *testing.T, p openapi.Parameter) map[string]string {
	good := httpapi.GoodParam(t, p)
	bad := map[string]string{}
	if p.Integer {
		if p.Minimum != nil {
			bad["below minimum"] = strconv.FormatInt(*p.Minimum-1, 10)
		}
		if p.Maximum != nil {
			bad["above maximum"] = strconv.FormatInt(*p.Maximum+1, 10)
		}
		bad["not an integer"] = good + "x"
		return bad
	}
	if p.Enum != nil {
		bad["outside the enum"] = p.Enum[0] + "_x"
		bad["empty"] = ""
	}
	if p.MaxLength > 0 {
		bad["too long"] = good + strings.Repeat("a", p.MaxLength+1-len(good))
	}
	if p.MinLength > 0 {
		bad["empty"] = ""
	}
	if p.Pattern != "" {
		bad["failing the pattern"] = "!" + good[1:]
	}
	return bad
}

// TestDocumentedParametersChecked walks the document's operations and
// sends each constrained path and query parameter a value just past its
// limit (one character too long, empty, failing its pattern, outside its
// enum, an integer out of range) through the real HTTP path: every route
// answers 400 problem+json naming the parameter, before its handler. The
// path's vendor_id is authorized by admission and answers 404, as a vendor
// not granted does. A bad parameter never comes before the platform rules:
// without a credential it is 401, without the scope 403.
func TestDocumentedParametersChecked(t *testing.T) {
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, Config: func(c *config.Config) { // every group
		c.RateReads, c.RateWrites, c.RatePublic = 1_000_000, 1_000_000, 1_000_000
	}})
	p := createPairing(t, e, "params-pairing")
	discovery := mustExchange(t, e, *p.Data.Code)
	none := e.NewToken(e.Vendor.ID, auth.VendorsRead)

	table := openapi.Parameters()
	checked := map[string]int{}
	for _, rt := range e.Server.Routes() {
		params, ok := table[rt.Operation]
		if !ok {
			continue
		}
		token := e.Token
		if rt.Credential == httpapi.DiscoveryCredential {
			token = discovery
		}
		if rt.Scopes == nil {
			token = ""
		}
		// request sends the route's method with every parameter good but
		// name, which is v.
		request := func(name, v string, tok string) apitest.Req {
			path := rt.Path
			query := url.Values{}
			for _, q := range params {
				val := httpapi.GoodParam(t, q)
				if q.Name == name {
					val = v
				} else if q.In == "query" {
					continue
				}
				switch q.In {
				case "path":
					if q.Name == "vendor_id" && q.Name != name {
						val = e.Vendor.ID
					}
					path = strings.Replace(path, "{"+q.Name+"}", url.PathEscape(val), 1)
				case "query":
					query.Set(q.Name, val)
				}
			}
			if len(query) > 0 {
				path += "?" + query.Encode()
			}
			return apitest.Req{Method: rt.Method, Path: path, Token: tok}
		}
		first := true
		for _, param := range params {
			for what, v := range badParams(t, param) {
				if param.In == "path" && v == "" {
					continue // an empty segment names another route
				}
				t.Run(rt.Operation+"/"+param.Name+"/"+what, func(t *testing.T) {
					req := request(param.Name, v, token)
					if param.In == "path" && param.Name == "vendor_id" {
						e.Do(req).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
						return
					}
					code := "INVALID_PARAMETER"
					if param.Code != "" {
						code = param.Code // the operation's own (x-error-code)
					}
					pr := e.Do(req).WantProblem(t, http.StatusBadRequest, code)
					if !strings.HasPrefix(pr.Detail, param.Name+": ") {
						t.Fatalf("detail %q does not name %s", pr.Detail, param.Name)
					}
					if first && rt.Scopes != nil {
						// The platform rules come first.
						req.Token = ""
						e.Do(req).WantProblem(t, http.StatusUnauthorized, "UNAUTHENTICATED")
						if rt.Credential == httpapi.TokenCredential && len(rt.Scopes) > 0 && !slices.Contains(rt.Scopes, auth.VendorsRead) {
							req.Token = none
							e.Do(req).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
						}
					}
					first = false
				})
				checked[rt.Operation]++
			}
		}
	}
	// The list routes the issue found accepting filters past their limits.
	for _, op := range []string{"listListings", "listReservations", "listExternalOrders", "listSellerOrders", "listSyncJobs", "listConflicts", "listEvents", "listStockEffects"} {
		if checked[op] == 0 {
			t.Errorf("%s: no parameter checked", op)
		}
	}
	// Every mounted list route with a documented query parameter was sent
	// bad values.
	for op, params := range table {
		for _, p := range params {
			if p.In == "query" && checked[op] == 0 {
				t.Errorf("%s: its query parameters were not checked (is the route mounted?)", op)
				break
			}
		}
	}
}
