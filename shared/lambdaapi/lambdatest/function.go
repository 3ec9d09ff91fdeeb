package lambdatest

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// DynamoDB seeds a fresh table of DynamoDB Local and returns it with the
// configuration a deployed function reads (store dynamodb, that table). It
// skips without the emulator unless REQUIRE_EMULATORS=1.
func DynamoDB(t testing.TB) (config.Config, Fixture) {
	t.Helper()
	client, table := ddbtest.NewTable(t)
	cfg := config.Default()
	cfg.Store, cfg.Table = config.StoreDynamoDB, table
	return cfg, Seed(t, dynamodb.New(client, table, dynamodb.WithClock(clock.System{}.Now)))
}

// Function is an operation group's Lambda handler, built as the group's
// main builds it, over a seeded store.
type Function struct {
	Fixture
	Config config.Config
	Serve  lambdaapi.Handler
}

// OnSQLite builds group's function over a seeded embedded store.
func OnSQLite(t testing.TB, group httpapi.Group) Function {
	t.Helper()
	return SQLite(t).Function(t, config.Default(), group)
}

// OnDynamoDB builds group's function over a seeded table of DynamoDB Local,
// the store the Lambda uses in AWS. It skips without the emulator unless
// REQUIRE_EMULATORS=1.
func OnDynamoDB(t testing.TB, group httpapi.Group) Function {
	t.Helper()
	cfg, f := DynamoDB(t)
	return f.Function(t, cfg, group)
}

// Function builds group's function over f's store with cfg.
func (f Fixture) Function(t testing.TB, cfg config.Config, group httpapi.Group) Function {
	t.Helper()
	return Function{Fixture: f, Config: cfg, Serve: f.Handler(t, cfg, group)}
}

// Other builds another group's function over the same store, as that
// group's main builds it: a test makes what its group needs through the
// Lambdas that serve it in AWS.
func (fn Function) Other(t testing.TB, group httpapi.Group) Function {
	t.Helper()
	return fn.Fixture.Function(t, fn.Config, group)
}

// Call sends the function the sample event at path with the fixture's Vars
// and extra; a key of extra whose value is empty is left unfilled.
func (fn Function) Call(t testing.TB, path string, extra map[string]string) events.APIGatewayV2HTTPResponse {
	t.Helper()
	return fn.Invoke(t, fn.Serve, path, extra)
}

// Data decodes the data member of resp's JSON body into a T.
func Data[T any](t testing.TB, resp events.APIGatewayV2HTTPResponse) T {
	t.Helper()
	var got struct {
		Data T `json:"data"`
	}
	Decode(t, resp.Body, &got)
	return got.Data
}

// Answer fails the test unless resp is an application/json answer with
// status, and decodes the data member of its body into a T: WantProblem's
// counterpart for a success.
func Answer[T any](t testing.TB, resp events.APIGatewayV2HTTPResponse, status int) T {
	t.Helper()
	WantStatus(t, resp, status)
	if ct := Header(resp, "Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return Data[T](t, resp)
}

// WantReplayed sends the sample at path again, as a client retrying with
// the same Idempotency-Key, and wants first replayed: the same status and
// body, marked Idempotent-Replayed: true, where first was not marked.
func (fn Function) WantReplayed(t testing.TB, path string, first events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if v := Header(first, "Idempotent-Replayed"); v != "" {
		t.Errorf("Idempotent-Replayed = %q on the first request", v)
	}
	replay := fn.Call(t, path, nil)
	WantStatus(t, replay, first.StatusCode)
	if v := Header(replay, "Idempotent-Replayed"); v != "true" {
		t.Errorf("Idempotent-Replayed = %q, want true", v)
	}
	if replay.Body != first.Body {
		t.Errorf("replayed body differs:\n got %s\nwant %s", replay.Body, first.Body)
	}
}

// DataID is the id of the resource resp's data carries.
func DataID(t testing.TB, resp events.APIGatewayV2HTTPResponse) string {
	t.Helper()
	return Data[struct {
		ID string `json:"id"`
	}](t, resp).ID
}
