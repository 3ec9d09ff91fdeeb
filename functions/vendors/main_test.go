package main

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// fixture is the function main builds, over a store with one vendor and a
// token for it.
type fixture struct{ lt.Function }

// sqliteFixture is the embedded store in a fresh directory.
func sqliteFixture(t *testing.T) fixture { return fixture{lt.OnSQLite(t, group())} }

// event reads a sample event from events/vendors/ with the fixture's
// vendor and token filled in.
func (f fixture) event(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	return lt.Event(t, "vendors/"+name, f.Vars())
}

func (f fixture) invoke(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return lt.Invoke(t, f.Serve, ev)
}

func wantVendorList(t *testing.T, f fixture, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	lt.WantStatus(t, resp, http.StatusOK)
	got := lt.Data[[]map[string]any](t, resp)
	want := []map[string]any{{"id": f.Vendor.ID, "name": "Fjord Outfitters", "slug": "fjord-outfitters"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
	for _, h := range []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} {
		if lt.Header(resp, h) == "" {
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
	lt.WantStatus(t, resp, http.StatusOK)
	got := lt.Data[map[string]any](t, resp)
	want := map[string]any{"id": f.Vendor.ID, "name": "Fjord Outfitters", "slug": "fjord-outfitters"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("data = %v, want %v", got, want)
	}
}

func TestOpenAPIIsPublic(t *testing.T) {
	f := sqliteFixture(t)
	resp := f.invoke(t, f.event(t, "openapi.json"))
	lt.WantStatus(t, resp, http.StatusOK)
	var doc struct {
		OpenAPI string `json:"openapi"`
		Info    struct {
			Version string `json:"version"`
		} `json:"info"`
	}
	lt.Decode(t, resp.Body, &doc)
	if doc.OpenAPI != "3.1.0" || doc.Info.Version != "1.0.0-beta.2" {
		t.Errorf("openapi %q, info.version %q; want 3.1.0 and 1.0.0-beta.2", doc.OpenAPI, doc.Info.Version)
	}
}

// TestServesItsGroup: the function mounts the Vendors group alone.
func TestServesItsGroup(t *testing.T) {
	lt.ServesOnly(t, group(), "vendors/list-vendors.json", http.StatusOK, nil)
}

func TestUnknownPathIsProblem(t *testing.T) {
	f := sqliteFixture(t)
	lt.WantProblem(t, f.invoke(t, f.event(t, "unknown-path.json")), http.StatusNotFound)
}

// The vendors function is behind the $default route: a method no route of
// a path takes comes to it, from any group's path, and it answers as the
// path's own function would (405 with the path's Allow), not 404.
func TestWrongMethodOfAnotherGroupsPathIs405(t *testing.T) {
	f := sqliteFixture(t)
	resp := f.invoke(t, f.event(t, "wrong-method-elsewhere.json"))
	if p := lt.WantProblem(t, resp, http.StatusMethodNotAllowed); p.Code != "METHOD_NOT_ALLOWED" {
		t.Errorf("code %s", p.Code)
	}
	if got := lt.Header(resp, "Allow"); got != "GET, POST" {
		t.Errorf("Allow = %q, want the products collection's GET, POST", got)
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
		{"wrong secret", "Bearer " + wrongSecret(f.Token)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := f.event(t, "list-vendors.json")
			delete(ev.Headers, "authorization")
			if tc.authorization != "" {
				ev.Headers["authorization"] = tc.authorization
			}
			resp := f.invoke(t, ev)
			lt.WantProblem(t, resp, http.StatusUnauthorized)
			if lt.Header(resp, "WWW-Authenticate") == "" {
				t.Errorf("no WWW-Authenticate header: %v", resp.Headers)
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
	f := fixture{lt.OnDynamoDB(t, group())}
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
	seeded := lt.Seed(t, dynamodb.New(client, table, dynamodb.WithClock(clock.System{}.Now)))
	cfg.KeyFile = seeded.KeyFile
	h, err := lambdaapi.New(t.Context(), cfg, []httpapi.Group{group()}, app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatalf("lambdaapi.New: %v", err)
	}
	f := fixture{lt.Function{Fixture: seeded, Serve: h}}
	wantVendorList(t, f, f.invoke(t, f.event(t, "list-vendors.json")))
}
