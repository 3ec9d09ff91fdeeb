package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/vendor"
)

// fixture is a store with one vendor and a token for it, and the Lambda's
// handler over that store.
type fixture struct {
	handler Handler
	vendor  vendor.Vendor
	token   string
}

// seed creates a vendor and a token with every scope in s, then builds the
// handler exactly as main does, on s.
func seed(t *testing.T, cfg config.Config, s store.Store) fixture {
	t.Helper()
	ctx := t.Context()
	c := clock.System{}
	v, err := vendor.Service{Store: s, Clock: c}.Create(ctx, "Fjord Outfitters", "fjord-outfitters")
	if err != nil {
		t.Fatalf("create vendor: %v", err)
	}
	tok, err := auth.Service{Store: s, Clock: c}.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	h, err := newHandler(ctx, cfg, app.WithStore(s), app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	return fixture{handler: h, vendor: v, token: tok.Token}
}

// sqliteFixture is the embedded store in a fresh directory.
func sqliteFixture(t *testing.T) fixture {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	s, err := sqlite.Open(cfg.DataDir)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return seed(t, cfg, s)
}

// event reads a sample event from events/vendors/ and fills in its
// placeholders, as make invoke does.
func (f fixture) event(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "vendors", name))
	if err != nil {
		t.Fatal(err)
	}
	raw := strings.NewReplacer("{{TOKEN}}", f.token, "{{VENDOR_ID}}", f.vendor.ID).Replace(string(b))
	if strings.Contains(raw, "{{") {
		t.Fatalf("%s: a placeholder is left after substitution", name)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal([]byte(raw), &ev); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ev
}

// invoke calls the handler as Lambda does, with a fresh context per call.
func (f fixture) invoke(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	resp, err := f.handler(t.Context(), ev)
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	if resp.IsBase64Encoded {
		t.Fatalf("response body is base64-encoded; JSON should travel as text")
	}
	return resp
}

// header reads a response header whatever its case; the adapter keeps Go's
// canonical form (Ratelimit-Limit), API Gateway matches case-insensitively.
func header(resp events.APIGatewayV2HTTPResponse, name string) string {
	for k, v := range resp.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func wantStatus(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body: %s", resp.StatusCode, status, resp.Body)
	}
	if header(resp, "X-Request-Id") == "" {
		t.Errorf("no X-Request-Id header: %v", resp.Headers)
	}
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
}

func wantVendorList(t *testing.T, f fixture, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	wantStatus(t, resp, http.StatusOK)
	var got struct {
		Data []map[string]any `json:"data"`
	}
	decode(t, resp.Body, &got)
	want := []map[string]any{{"id": f.vendor.ID, "name": "Fjord Outfitters", "slug": "fjord-outfitters"}}
	if !reflect.DeepEqual(got.Data, want) {
		t.Errorf("data = %v, want %v", got.Data, want)
	}
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if header(resp, h) == "" {
			t.Errorf("no %s header: %v", h, resp.Headers)
		}
	}
}

func TestListVendors(t *testing.T) {
	f := sqliteFixture(t)
	wantVendorList(t, f, f.invoke(t, f.event(t, "list-vendors.json")))
}

func TestGetVendor(t *testing.T) {
	f := sqliteFixture(t)
	resp := f.invoke(t, f.event(t, "get-vendor.json"))
	wantStatus(t, resp, http.StatusOK)
	var got struct {
		Data map[string]any `json:"data"`
	}
	decode(t, resp.Body, &got)
	want := map[string]any{"id": f.vendor.ID, "name": "Fjord Outfitters", "slug": "fjord-outfitters"}
	if !reflect.DeepEqual(got.Data, want) {
		t.Errorf("data = %v, want %v", got.Data, want)
	}
}

func TestOpenAPIIsPublic(t *testing.T) {
	f := sqliteFixture(t)
	resp := f.invoke(t, f.event(t, "openapi.json"))
	wantStatus(t, resp, http.StatusOK)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	decode(t, resp.Body, &doc)
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0-beta.2" {
		t.Errorf("openapi %q, info.version %q; want 3.1.0 and 1.0.0-beta.2", doc.OpenAPI, doc.Info.Version)
	}
}

func TestUnknownPathIsProblem(t *testing.T) {
	f := sqliteFixture(t)
	resp := f.invoke(t, f.event(t, "unknown-path.json"))
	wantStatus(t, resp, http.StatusNotFound)
	if ct := header(resp, "Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	var p struct {
		Status    int    `json:"status"`
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	decode(t, resp.Body, &p)
	if p.Status != http.StatusNotFound || p.Code == "" {
		t.Errorf("problem = %+v, want status 404 and a code", p)
	}
	if rid := header(resp, "X-Request-Id"); p.RequestID != rid {
		t.Errorf("request_id = %q, X-Request-Id = %q; want them equal", p.RequestID, rid)
	}
}

func TestListVendorsWithoutValidToken(t *testing.T) {
	f := sqliteFixture(t)
	for _, tc := range []struct {
		name, authorization string
	}{
		{"missing", ""},
		{"not a bearer token", "Basic dXNlcjpwYXNz"},
		{"malformed", "Bearer not-a-token"},
		{"wrong secret", "Bearer " + wrongSecret(f.token)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := f.event(t, "list-vendors.json")
			delete(ev.Headers, "authorization")
			if tc.authorization != "" {
				ev.Headers["authorization"] = tc.authorization
			}
			resp := f.invoke(t, ev)
			wantStatus(t, resp, http.StatusUnauthorized)
			if header(resp, "WWW-Authenticate") == "" {
				t.Errorf("no WWW-Authenticate header: %v", resp.Headers)
			}
			if ct := header(resp, "Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
		})
	}
}

// wrongSecret keeps the token's shape and record id but changes its secret.
func wrongSecret(tok string) string {
	last := byte('a')
	if tok[len(tok)-1] == last {
		last = 'b'
	}
	return tok[:len(tok)-1] + string(last)
}

// TestDynamoDB runs the list event against DynamoDB Local, the store the
// Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func TestDynamoDB(t *testing.T) {
	client, table := ddbtest.NewTable(t)
	cfg := config.Default()
	cfg.Store, cfg.Table = config.StoreDynamoDB, table
	f := seed(t, cfg, dynamodb.New(client, table))
	wantVendorList(t, f, f.invoke(t, f.event(t, "list-vendors.json")))
}

// TestDynamoDBFromEnvironment builds the handler as main does in AWS: the
// configuration from SELLERAPI_* variables and the store opened from it.
func TestDynamoDBFromEnvironment(t *testing.T) {
	client, table := ddbtest.NewTable(t)
	t.Setenv(config.EnvStore, config.StoreDynamoDB)
	t.Setenv(config.EnvTable, table)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	cfg, err := config.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	s := dynamodb.New(client, table)
	v, err := vendor.Service{Store: s, Clock: clock.System{}}.Create(ctx, "Fjord Outfitters", "fjord-outfitters")
	if err != nil {
		t.Fatalf("create vendor: %v", err)
	}
	tok, err := auth.Service{Store: s, Clock: clock.System{}}.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		t.Fatalf("issue token: %v", err)
	}
	h, err := newHandler(ctx, cfg, app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	f := fixture{handler: h, vendor: v, token: tok.Token}
	wantVendorList(t, f, f.invoke(t, f.event(t, "list-vendors.json")))
}
