package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// invoker calls the handler as the Lambda runtime does: raw JSON in, raw
// JSON out, through aws-lambda-go's own reflection wrapper.
type invoker struct {
	h     lambda.Handler
	store store.Store
}

func newInvoker(t *testing.T, opts ...app.Option) invoker {
	t.Helper()
	svc, err := newHandler(t.Context(), opts...)
	if err != nil {
		t.Fatalf("newHandler: %v", err)
	}
	return invoker{h: lambda.NewHandler(svc.Handle), store: svc.Store}
}

// embeddedStore is an embedded store in a fresh directory: the deployed
// function wires only DynamoDB, so a test gives it the store.
func embeddedStore(t *testing.T) app.Option {
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return app.WithStore(st)
}

// sqliteInvoker builds the handler from the environment, as main does, on
// an embedded store in a fresh directory.
func sqliteInvoker(t *testing.T) invoker {
	return newInvoker(t, embeddedStore(t))
}

// event reads events/admin/<name> with {{KEY}} replaced by vars[KEY].
func event(t *testing.T, name string, vars map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "admin", name))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	if strings.Contains(s, "{{") {
		t.Fatalf("%s: placeholders left: %s", name, s)
	}
	return []byte(s)
}

// answer is the handler's reply, decoded loosely.
type answer struct {
	Data  map[string]any `json:"data"`
	Error *struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	} `json:"error"`
}

func (iv invoker) call(t *testing.T, payload []byte) answer {
	t.Helper()
	out, err := iv.h.Invoke(t.Context(), payload)
	if err != nil {
		t.Fatalf("invoke %s: %v", payload, err)
	}
	var a answer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("reply %s: %v", out, err)
	}
	return a
}

func (iv invoker) ok(t *testing.T, payload []byte) map[string]any {
	t.Helper()
	a := iv.call(t, payload)
	if a.Error != nil || a.Data == nil {
		t.Fatalf("invoke %s: error %+v", payload, a.Error)
	}
	return a.Data
}

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

// wantKeys checks that data has exactly the fields the local CLI prints for
// the same subcommand.
func wantKeys(t *testing.T, action string, data map[string]any, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := keys(data); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: data fields = %v, want %v", action, got, want)
	}
}

// lifecycle runs every sample event in the order an operator would, and
// checks that the issued token authenticates until it is revoked.
func lifecycle(t *testing.T, iv invoker) {
	ctx := t.Context()
	tokens := auth.Service{Store: iv.store, Clock: clock.System{}}

	v := iv.ok(t, event(t, "vendor-create.json", nil))
	wantKeys(t, "vendor.create", v, "id", "name", "slug")
	vendorID := v["id"].(string)
	if v["name"] != "Fjord Outfitters" || v["slug"] != "fjord-outfitters" {
		t.Errorf("vendor = %v", v)
	}

	tok := iv.ok(t, event(t, "token-issue.json", map[string]string{"VENDOR_ID": vendorID}))
	wantKeys(t, "token.issue", tok, "id", "token", "vendor_id", "scopes", "expires_at")
	if tok["vendor_id"] != vendorID || tok["expires_at"] == nil || len(tok["scopes"].([]any)) != 4 {
		t.Errorf("token = %v", tok)
	}
	if _, err := tokens.Authenticate(ctx, tok["token"].(string), vendorID); err != nil {
		t.Fatalf("issued token does not authenticate: %v", err)
	}

	rev := iv.ok(t, event(t, "token-revoke.json", map[string]string{"TOKEN_ID": tok["id"].(string)}))
	wantKeys(t, "token.revoke", rev, "id", "vendor_id", "revoked_at")
	if rev["revoked_at"] == nil {
		t.Errorf("revoke = %v, want revoked_at", rev)
	}
	if _, err := tokens.Authenticate(ctx, tok["token"].(string), vendorID); err == nil {
		t.Error("revoked token still authenticates")
	}

	// Ownership moves: a token issued before stops working.
	second := iv.ok(t, []byte(`{"action":"token.issue","vendor":"`+vendorID+`","scopes":"all","expires_in":"24h"}`))
	if n := len(second["scopes"].([]any)); n != len(auth.AllScopes()) {
		t.Errorf("scopes all: %d, want all %d", n, len(auth.AllScopes()))
	}
	own := iv.ok(t, event(t, "vendor-set-owner.json", map[string]string{"VENDOR_ID": vendorID}))
	wantKeys(t, "vendor.set-owner", own, "id", "owner_id")
	if _, err := tokens.Authenticate(ctx, second["token"].(string), vendorID); err == nil {
		t.Error("token of the previous owner still authenticates")
	}
}

func TestSampleEventsOnTheEmbeddedStore(t *testing.T) { lifecycle(t, sqliteInvoker(t)) }

func TestSampleEventsOnDynamoDB(t *testing.T) {
	client, table := ddbtest.NewTable(t)
	t.Setenv(config.EnvStore, config.StoreDynamoDB)
	t.Setenv(config.EnvTable, table)
	lifecycle(t, newInvoker(t, app.WithStore(dynamodb.New(client, table, dynamodb.WithClock(clock.System{}.Now)))))
}

// Refusals answer with a code, as the API's 4xx do, and are not invocation
// errors: they must not trip the function's errors alarm.
func TestRefusalsAnswerWithACode(t *testing.T) {
	iv := sqliteInvoker(t)
	iv.ok(t, event(t, "vendor-create.json", nil))
	for _, c := range []struct{ name, payload, code string }{
		{"taken slug", string(event(t, "vendor-create.json", nil)), "CONFLICT"},
		{"unknown action", `{"action":"vendor.delete","id":"ven_x"}`, "INVALID_REQUEST"},
		{"misspelt field", `{"action":"vendor.create","name":"A","slug":"a","vendor_id":"x"}`, "INVALID_REQUEST"},
		{"not JSON object", `["vendor.create"]`, "INVALID_REQUEST"},
		{"bad slug", `{"action":"vendor.create","name":"A","slug":"Not A Slug"}`, "INVALID_REQUEST"},
		{"unknown vendor", `{"action":"token.issue","vendor":"ven_00000000000000000000000000","scopes":"all","expires_in":"1h"}`, "NOT_FOUND"},
		{"unknown scope", `{"action":"token.issue","vendor":"ven_x","scopes":"root"}`, "INVALID_REQUEST"},
		{"bad expiry", `{"action":"token.issue","vendor":"ven_x","expires_in":"a month"}`, "INVALID_REQUEST"},
		{"unknown token", `{"action":"token.revoke","id":"tok_nope"}`, "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := iv.call(t, []byte(c.payload))
			if a.Error == nil || a.Error.Code != c.code || a.Error.Detail == "" {
				t.Fatalf("answer = %+v / %+v, want error %s with a detail", a.Data, a.Error, c.code)
			}
		})
	}
}

// A store that cannot answer is an invocation error, which Lambda counts.
func TestStoreFailureIsAnInvocationError(t *testing.T) {
	iv := sqliteInvoker(t)
	iv.store.Close()
	_, err := iv.h.Invoke(context.Background(), event(t, "vendor-create.json", nil))
	if err == nil {
		t.Fatal("no invocation error on a closed store")
	}
}

// Init fails, as Lambda reports it, when the configuration is invalid.
func TestInitFailsOnABadConfiguration(t *testing.T) {
	t.Setenv(config.EnvStore, "postgres")
	if _, err := newHandler(t.Context()); err == nil {
		t.Fatal("store postgres accepted")
	}
}

// pairing.review activates an accepted store pairing, and only that.
func TestPairingReview(t *testing.T) {
	iv := sqliteInvoker(t)
	ctx := t.Context()
	vendorID := iv.ok(t, event(t, "vendor-create.json", nil))["id"].(string)
	pairings := pairing.Service{Store: iv.store, Clock: clock.System{}, Connections: connection.Service{Store: iv.store, Clock: clock.System{}}}
	prep, err := pairings.PrepareCreate(ctx, vendorID)
	created, ops := prep.View, prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	if err := iv.store.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	review := event(t, "pairing-review.json", map[string]string{"PAIRING_ID": created.ID})
	if a := iv.call(t, review); a.Error == nil || a.Error.Code != "PAIRING_STATE_CONFLICT" {
		t.Fatalf("review of a pending pairing = %+v / %+v, want PAIRING_STATE_CONFLICT", a.Data, a.Error)
	}
	x, err := pairings.Exchange(ctx, *created.Code)
	if err != nil {
		t.Fatal(err)
	}
	pr := pairing.Principal{PairingID: x.PairingID, VendorID: vendorID}
	if _, err := pairings.Discover(ctx, pr, pairing.Discovery{Store: pairing.StoreIdentity{Domain: "shop.example.com", Name: "Shop", Platform: "p", Currency: "EUR"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := pairings.Accept(ctx, vendorID, created.ID, "tok_x", pairing.AcceptInput{ExpectedVersion: 3, Preset: "service_source"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pairings.AuthorizeOperationalWrite(ctx, pr); err == nil {
		t.Fatal("operational writes allowed before the review")
	}
	got := iv.ok(t, review)
	if got["status"] != "active" || got["operational_writes"] != "allowed" || got["review"].(map[string]any)["reviewer"] != "ops@example.com" {
		t.Fatalf("review = %v", got)
	}
	if _, err := pairings.AuthorizeOperationalWrite(ctx, pr); err != nil {
		t.Fatalf("operational writes after the review: %v", err)
	}
	if a := iv.call(t, []byte(`{"action":"pairing.review","id":"pair_nope"}`)); a.Error == nil || a.Error.Code != "NOT_FOUND" {
		t.Fatalf("unknown pairing = %+v", a.Error)
	}
}

// A deployed stage issues no token by omission: scopes are named (a list,
// or "all" spelled out) and the lifetime is given and at most a year. Each
// action is logged with what it acted on and never a token's secret.
func TestTokensAreExplicitBoundedAndLoggedWithoutSecrets(t *testing.T) {
	logs := &strings.Builder{}
	iv := newInvoker(t, embeddedStore(t), app.WithLogOutput(logs))
	vendorID := iv.ok(t, event(t, "vendor-create.json", nil))["id"].(string)
	for _, c := range []struct{ name, fields, want string }{
		{"no scopes", `"expires_in":"24h"`, "scopes: required"},
		{"blank scopes", `"scopes":" ","expires_in":"24h"`, "scopes: required"},
		{"no expiry", `"scopes":"products.read"`, "expires_in: required"},
		{"past the maximum", `"scopes":"products.read","expires_in":"8761h"`, "at most 8760h0m0s (365 days)"},
		{"negative", `"scopes":"products.read","expires_in":"-1h"`, "expires_in"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := iv.call(t, []byte(`{"action":"token.issue","vendor":"`+vendorID+`",`+c.fields+`}`))
			if a.Error == nil || a.Error.Code != "INVALID_REQUEST" || !strings.Contains(a.Error.Detail, c.want) {
				t.Fatalf("answer = %+v / %+v, want INVALID_REQUEST saying %q", a.Data, a.Error, c.want)
			}
		})
	}
	tok := iv.ok(t, []byte(`{"action":"token.issue","vendor":"`+vendorID+`","scopes":"products.read","expires_in":"8760h"}`))
	secret := tok["token"].(string)
	out := logs.String()
	if strings.Contains(out, secret) || strings.Contains(out, secret[strings.LastIndex(secret, "_")+1:]) {
		t.Fatalf("the log holds the token's secret:\n%s", out)
	}
	var issued, refused int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if l["action"] != "token.issue" {
			continue
		}
		switch l["msg"] {
		case "admin action":
			issued++
			if l["token_id"] != tok["id"] || l["vendor_id"] != vendorID || l["scopes"] != "products.read" {
				t.Errorf("issue logged as %v", l)
			}
		case "admin action refused or failed":
			refused++
		}
	}
	if issued != 1 || refused != 5 {
		t.Errorf("%d issues and %d refusals logged, want 1 and 5:\n%s", issued, refused, out)
	}
}

// cursor-key-rotate.json rotates the page-cursor key: refused within the
// hour of the last key (here the first, made by that call), then a new
// key signing beside the one before it.
func TestCursorKeyRotate(t *testing.T) {
	t.Setenv(config.EnvKeyFile, filepath.Join(t.TempDir(), "master.key"))
	c := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	iv := newInvoker(t, embeddedStore(t), app.WithClock(c))
	a := iv.call(t, event(t, "cursor-key-rotate.json", nil))
	if a.Error == nil || a.Error.Code != "CONFLICT" {
		t.Fatalf("rotation right after the first key: %+v %+v, want CONFLICT", a.Data, a.Error)
	}
	c.Advance(cursor.MinRotationInterval)
	data := iv.ok(t, event(t, "cursor-key-rotate.json", nil))
	wantKeys(t, "cursor-key.rotate", data, "key", "live", "retired")
	live, _ := data["live"].([]any)
	key, _ := data["key"].(map[string]any)
	if len(live) != 2 || !reflect.DeepEqual(live[0], key) {
		t.Fatalf("live keys %v, want the new key %v and the one before", live, key)
	}
}

// store-check.json reads a vendor back; webhook-secrets-seal.json finds
// nothing to seal in a store written with sealed secrets, and
// webhook-subscriptions-recount.json nothing to recount in one written
// with complete counts.
func TestStoreCheckAndSealSampleEvents(t *testing.T) {
	t.Setenv(config.EnvKeyFile, filepath.Join(t.TempDir(), "master.key"))
	iv := sqliteInvoker(t)
	v := iv.ok(t, event(t, "vendor-create.json", nil))
	check := iv.ok(t, event(t, "store-check.json", map[string]string{"VENDOR_ID": v["id"].(string)}))
	wantKeys(t, "store.check", check, "vendors", "vendor", "products", "cursor_keys", "webhook_subscriptions", "webhook_secrets_opened")
	if check["vendors"] != float64(1) || check["vendor"].(map[string]any)["id"] != v["id"] {
		t.Errorf("store.check: %v", check)
	}
	sealed := iv.ok(t, event(t, "webhook-secrets-seal.json", nil))
	if !reflect.DeepEqual(sealed, map[string]any{"vendors": float64(1), "secrets_sealed": float64(0)}) {
		t.Errorf("webhook-secrets.seal: %v", sealed)
	}
	recounted := iv.ok(t, event(t, "webhook-subscriptions-recount.json", nil))
	if !reflect.DeepEqual(recounted, map[string]any{"vendors": float64(1), "recounted": float64(0)}) {
		t.Errorf("webhook-subscriptions.recount: %v", recounted)
	}
}
