package httpapi

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/openapi"
)

// goodParam is a value the document allows for p: the parameters whose
// schema sets a pattern are named here, and the test fails on a pattern
// it has no value for.
func goodParam(t *testing.T, p openapi.Parameter) string {
	t.Helper()
	v := "x"
	switch {
	case p.Integer && p.Minimum != nil:
		v = strconv.FormatInt(*p.Minimum, 10)
	case p.Integer:
		v = "1"
	case p.Enum != nil:
		v = p.Enum[0]
	case p.Name == "sha256":
		v = strings.Repeat("a", 64)
	case p.Name == "file":
		v = strings.Repeat("a", 64) + ".webp"
	case p.Name == "connection_id":
		v = "conn_x"
	}
	if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(v) {
		t.Fatalf("%s: no value matching %s: add one to goodParam", p.Name, p.Pattern)
	}
	return v
}

// badParams are values just past what the document allows of p, each
// with what it breaks.
func badParams(t *testing.T, p openapi.Parameter) map[string]string {
	good := goodParam(t, p)
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
	e := newEnv(t, apitest.SQLite, apitest.Options{Config: func(c *config.Config) {
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
		if rt.Credential == DiscoveryCredential {
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
				val := goodParam(t, q)
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
					if param.Name == "page_after" {
						code = "INVALID_CURSOR"
					}
					pr := e.Do(req).WantProblem(t, http.StatusBadRequest, code)
					if !strings.HasPrefix(pr.Detail, param.Name+": ") {
						t.Fatalf("detail %q does not name %s", pr.Detail, param.Name)
					}
					if first && rt.Scopes != nil {
						// The platform rules come first.
						req.Token = ""
						e.Do(req).WantProblem(t, http.StatusUnauthorized, "UNAUTHENTICATED")
						if rt.Credential == TokenCredential && len(rt.Scopes) > 0 && !slices.Contains(rt.Scopes, auth.VendorsRead) {
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

// TestParamChecksAllowTheLimits: a value at each bound the document sets
// passes the compiled check, so the walk above refuses values for being
// past the limit, not for being there.
func TestParamChecksAllowTheLimits(t *testing.T) {
	checks, err := compileParams(openapi.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for op, pc := range checks {
		for _, c := range pc.params {
			good := goodParam(t, c.Parameter)
			values := []string{good}
			if c.MaxLength > 0 && c.Pattern == "" {
				values = append(values, good+strings.Repeat("é", c.MaxLength-len(good))) // characters, not bytes
			}
			if c.MinLength > 0 && c.Pattern == "" {
				values = append(values, strings.Repeat("m", c.MinLength))
			}
			if c.Integer && c.Maximum != nil {
				values = append(values, strconv.FormatInt(*c.Maximum, 10))
			}
			for _, e := range c.Enum {
				values = append(values, e)
			}
			for _, v := range values {
				n++
				if err := c.check(v); err != nil {
					t.Errorf("%s %s: %.40q refused: %v", op, c.Name, v, err)
				}
			}
		}
	}
	if n < 300 {
		t.Fatalf("only %d values checked", n)
	}
}

// FuzzParamChecks drives the document's parameter checks with client
// values: nothing panics, a value accepted is within every bound its
// schema sets, and a refusal is a 400 naming the parameter.
func FuzzParamChecks(f *testing.F) {
	for _, seed := range []string{"", "x", "conn_x", "not a conn id!", "0", "100", "101", "-1", "1e2", " 1", "open", "OPEN",
		strings.Repeat("a", 64), strings.Repeat("a", 64) + ".webp", strings.Repeat("é", 161), "\xff\xfe", strings.Repeat("c", 1001)} {
		f.Add(seed)
	}
	checks, err := compileParams(openapi.Parameters())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for op, pc := range checks {
			for _, c := range pc.params {
				err := c.check(v)
				if err != nil {
					e := errs.As(err)
					if StatusOf(e.Kind) != http.StatusBadRequest || !strings.HasPrefix(e.Detail, c.Name+": ") {
						t.Fatalf("%s %s: %q refused with %v", op, c.Name, v, err)
					}
					continue
				}
				n := utf8.RuneCountInString(v)
				switch {
				case c.Integer:
					i, perr := strconv.ParseInt(v, 10, 64)
					if perr != nil || c.Minimum != nil && i < *c.Minimum || c.Maximum != nil && i > *c.Maximum {
						t.Fatalf("%s %s: %q accepted as an integer", op, c.Name, v)
					}
				case !utf8.ValidString(v), n < c.MinLength, c.MaxLength > 0 && n > c.MaxLength,
					c.pattern != nil && !c.pattern.MatchString(v), c.Enum != nil && !slices.Contains(c.Enum, v):
					t.Fatalf("%s %s: %q accepted", op, c.Name, v)
				}
			}
		}
	})
}
