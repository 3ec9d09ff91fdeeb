// Package lambdatest drives a lambdaapi.Handler in tests the way Lambda
// does: with a sample event from the repository's events/ folder, its
// {{KEY}} placeholders filled in, and a store holding a vendor and a token
// to fill them with. Assertions about a group's behaviour stay in the
// function's own tests.
package lambdatest

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// Fixture is a store with one vendor and a token for it with every scope.
type Fixture struct {
	Store  store.Store
	Vendor account.Vendor
	Token  string
	// KeyFile is the local master key the store's secrets are sealed
	// under (config.Config.KeyFile), in the test's directory: every
	// function built over the fixture shares it.
	KeyFile string
}

// SQLite opens an embedded store in a fresh directory and seeds it.
func SQLite(t testing.TB) Fixture {
	t.Helper()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return Seed(t, s)
}

// Seed creates the vendor "Fjord Outfitters" (slug fjord-outfitters) and a
// token with every scope in s.
func Seed(t testing.TB, s store.Store) Fixture {
	t.Helper()
	ctx := t.Context()
	c := clock.System{}
	v, err := account.Service{Store: s, Clock: c}.Create(ctx, "Fjord Outfitters", "fjord-outfitters")
	if err != nil {
		t.Fatalf("create vendor: %v", err)
	}
	tok, err := auth.Service{Store: s, Clock: c}.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	return Fixture{Store: s, Vendor: v, Token: tok.Token, KeyFile: filepath.Join(t.TempDir(), "master.key")}
}

// Vars are the placeholders the fixture fills: TOKEN and VENDOR_ID. The map
// is fresh, so a test may add its own keys.
func (f Fixture) Vars() map[string]string {
	return map[string]string{"TOKEN": f.Token, "VENDOR_ID": f.Vendor.ID}
}

// Handler builds the handler serving groups exactly as a group's main
// does (lambdaapi.Main), on f's store, logging to the test's output.
func (f Fixture) Handler(t testing.TB, cfg config.Config, groups ...httpapi.Group) lambdaapi.Handler {
	t.Helper()
	if cfg.KeyFile == "" {
		cfg.KeyFile = f.KeyFile
	}
	h, err := lambdaapi.New(t.Context(), cfg, groups, app.WithStore(f.Store), app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatalf("lambdaapi.New(%v): %v", groups, err)
	}
	return h
}

// Invoke sends h the sample event at path with the fixture's Vars and
// extra; a key of extra whose value is empty is left unfilled.
func (f Fixture) Invoke(t testing.TB, h lambdaapi.Handler, path string, extra map[string]string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	vars := f.Vars()
	for k, v := range extra {
		if v != "" {
			vars[k] = v
		}
	}
	return Invoke(t, h, Event(t, path, vars))
}

var placeholder = regexp.MustCompile(`\{\{[^}]*\}\}`)

// Event reads the sample event at path, relative to the repository's
// events/ folder (say "vendors/list-vendors.json"), replaces each {{KEY}}
// with vars[KEY] by plain text substitution, as events/README.md describes,
// and decodes it. A placeholder left unfilled fails the test.
func Event(t testing.TB, path string, vars map[string]string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	for k, v := range vars {
		raw = strings.ReplaceAll(raw, "{{"+k+"}}", v)
	}
	if strings.Contains(raw, "{{") {
		t.Fatalf("%s: placeholders left after substitution: %q", path, placeholder.FindAllString(raw, -1))
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return ev
}

// repoRoot is the nearest directory above the test's working directory (its
// package directory) that holds go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("lambdatest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Invoke calls h as Lambda does, with the test's context. JSON must travel
// as text, so a base64-encoded response body fails the test.
func Invoke(t testing.TB, h lambdaapi.Handler, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := h(t.Context(), ev)
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	if resp.IsBase64Encoded {
		t.Fatalf("response body is base64-encoded; JSON should travel as text")
	}
	return resp
}

// Header reads a response header whatever its case; the adapter keeps Go's
// canonical form (Ratelimit-Limit), API Gateway matches case-insensitively.
func Header(resp events.APIGatewayV2HTTPResponse, name string) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// WantStatus fails the test unless resp has status; every response, error
// or not, must also carry an X-Request-Id.
func WantStatus(t testing.TB, resp events.APIGatewayV2HTTPResponse, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body: %s", resp.StatusCode, status, resp.Body)
	}
	if Header(resp, "X-Request-Id") == "" {
		t.Errorf("no X-Request-Id header: %v", resp.Headers)
	}
}

// Decode unmarshals a JSON response body into v.
func Decode(t testing.TB, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
}

// Problem is the part of a problem+json body every error carries.
type Problem struct {
	Status    int    `json:"status"`
	Code      string `json:"code"`
	RequestID string `json:"request_id"`
}

// WantProblem fails the test unless resp is an application/problem+json
// error with status, a code, and the request id of its X-Request-Id header.
func WantProblem(t testing.TB, resp events.APIGatewayV2HTTPResponse, status int) Problem {
	t.Helper()
	WantStatus(t, resp, status)
	if ct := Header(resp, "Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p Problem
	Decode(t, resp.Body, &p)
	if p.Status != status || p.Code == "" {
		t.Errorf("problem = %+v, want status %d and a code", p, status)
	}
	if rid := Header(resp, "X-Request-Id"); p.RequestID != rid {
		t.Errorf("request_id = %q, X-Request-Id = %q; want them equal", p.RequestID, rid)
	}
	return p
}

// ServesOnly is the test of an operation group's Lambda: it builds the
// handler the group's main builds, on an embedded store, sends it the
// group's sample event (its placeholders from Vars and extra) and wants
// status; then a sample of each of a few other groups must be 404, because
// only this group is mounted (API Gateway routes the others to their own
// functions).
func ServesOnly(t *testing.T, group httpapi.Group, sample string, status int, extra map[string]string) {
	t.Helper()
	// The stack deploys functions/<group name>: a function that serves
	// another group's name would be deployed under the wrong routes.
	if wd, err := os.Getwd(); err != nil || filepath.Base(wd) != group.Name {
		t.Fatalf("functions/%s serves group %q (%v): a group's function is its folder", filepath.Base(wd), group.Name, err)
	}
	fn := OnSQLite(t, group)
	vars := fn.Vars()
	maps.Copy(vars, extra)
	WantStatus(t, Invoke(t, fn.Serve, Event(t, sample, vars)), status)
	for _, other := range []string{"products/list-products.json", "inventory/list-inventory-items.json",
		"connections/list-connections.json", "vendors/get-vendor.json"} {
		if !strings.HasPrefix(other, group.Name+"/") {
			WantProblem(t, Invoke(t, fn.Serve, Event(t, other, vars)), http.StatusNotFound)
		}
	}
}
