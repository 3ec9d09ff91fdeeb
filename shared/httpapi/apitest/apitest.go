// Package apitest runs the API over real HTTP for tests: an httptest server
// with the chosen groups on a real store (embedded, or DynamoDB Local when it
// runs), a fake clock, a vendor and a token with every scope.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/embedded"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/webhook"
)

// StoreKind names a store to run against.
type StoreKind string

const (
	SQLite   StoreKind = "sqlite"
	DynamoDB StoreKind = "dynamodb"
)

// Options shape an Env.
type Options struct {
	Store  StoreKind
	Groups []httpapi.Group
	// Config adjusts the configuration (rates, timeouts) before start.
	Config func(*config.Config)
	// WrapStore lets a test put a faulty or slow store in front of the real one.
	WrapStore func(store.Store) store.Store
	// AppOptions are given to the app after the harness's own, so before
	// its services are built (a benchmark logs as a Lambda function does,
	// app.WithLogHandler).
	AppOptions []app.Option
	// Observe receives every finished request (operation, round trips).
	Observe func(httpapi.Observation)
	// WebhookResolver fixes what webhook host names resolve to.
	WebhookResolver webhook.Resolver
	// WebhookAWS sends deliveries to AWS destinations (the SQS emulator's
	// client, a recorded EventBridge); zero fails those attempts.
	WebhookAWS webhook.Senders
	// Blob is the media store uploads go to; nil leaves media storage
	// unconfigured (uploads answer 503).
	Blob blob.Store
	// MediaEncode decodes and re-encodes uploads; nil is the service's
	// (media/canonical.Encode). A test may wrap it to hold a decode.
	MediaEncode media.Encoder
	// Headers are sent with every request Do makes (an edge's secret);
	// a request's own Headers override them.
	Headers map[string]string
	// MarkPending, on DynamoDB, gives the store the transaction hook the
	// deployed one has (app.MarkPending: the router's pending markers).
	MarkPending bool
}

// Env is a running API.
type Env struct {
	T      testing.TB
	URL    string // base URL, ending in /v1
	Store  store.Store
	Clock  *clock.Fake
	App    *app.App
	Server *httpapi.Server
	Vendor account.Vendor
	// Token has every scope.
	Token string
	Logs  *SyncBuffer
	// Headers go with every request (Options.Headers).
	Headers map[string]string
}

// SyncBuffer is a goroutine-safe log sink.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// Len is how many bytes were written.
func (s *SyncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// String returns what was logged.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start is the fake clock's starting time.
var Start = clocktest.Date(2026, 3, 4, 10, 0, 30)

// OpenStore opens an empty store of kind for a test.
func OpenStore(t testing.TB, kind StoreKind, c *clock.Fake) store.Store {
	t.Helper()
	return openStore(t, kind, c, false)
}

// openStore is OpenStore, on DynamoDB with the deployed transaction hook
// when marked.
func openStore(t testing.TB, kind StoreKind, c *clock.Fake, marked bool) store.Store {
	t.Helper()
	switch kind {
	case DynamoDB:
		client, table := ddbtest.NewTable(t)
		if marked {
			return dynamodb.New(client, table, dynamodb.WithClock(c.Now), dynamodb.WithTransactHook(app.MarkPending(c.Now)))
		}
		return dynamodb.New(client, table, dynamodb.WithClock(c.Now))
	default:
		s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// New starts an API.
func New(t testing.TB, o Options) *Env {
	t.Helper()
	if o.Store == "" {
		o.Store = SQLite
	}
	if o.Groups == nil {
		o.Groups = app.AllGroups()
	}
	ctx := context.Background()
	fake := clock.NewFake(Start)
	raw := openStore(t, o.Store, fake, o.MarkPending)
	st := raw
	if o.WrapStore != nil {
		st = o.WrapStore(raw)
	}
	cfg := config.Default()
	cfg.BaseURL = "http://api.test/v1"
	// A generous deadline: concurrency tests saturate the emulator on a
	// shared 2-core machine, and a timeout there would be the test's doing,
	// not the service's. Tests of the deadline itself set their own.
	cfg.StoreTimeout = 30 * time.Second
	// Likewise the decode deadline: a 16-megapixel re-encode takes well
	// under a second on an idle core and many on a saturated test machine.
	cfg.MediaDecodeTimeout = 5 * time.Minute
	if o.Config != nil {
		o.Config(&cfg)
	}
	logs := &SyncBuffer{}
	local := app.Option(func(*app.App) {})
	if s, ok := raw.(*sqlite.Store); ok {
		// The embedded pipeline, as the local binary wires it (Drain).
		l, err := embedded.Local(s, fake)
		if err != nil {
			t.Fatal(err)
		}
		local = app.WithLocal(l)
	}
	if o.MediaEncode == nil {
		o.MediaEncode = canonical.Encode
	}
	a, err := app.New(ctx, cfg, app.WithStore(st), app.WithClock(fake), app.WithLogOutput(logs), app.WithWebhookResolver(o.WebhookResolver), app.WithWebhookSenders(o.WebhookAWS), local,
		app.WithKeySource(envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key"))), app.WithBlob(o.Blob), app.WithMediaEncoder(o.MediaEncode),
		inTurn(o.AppOptions))
	if err != nil {
		t.Fatal(err)
	}
	// The cursor key and the fixtures go through the real store even when
	// the test puts a faulty one in front of the server.
	cursors, err := cursor.Keyring{Store: raw, Box: a.Secrets, Clock: fake}.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srvH, err := httpapi.New(httpapi.Deps{Config: a.Config, Store: st, Clock: fake, Log: a.Log, Cursors: cursors, Observe: o.Observe, Services: a.Services.API}, o.Groups...)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srvH
	// Every exchange of a test is checked against the published document;
	// benchmarks skip the check, which would dominate what they measure.
	if _, bench := t.(*testing.B); !bench {
		c, err := loadContract()
		if err != nil {
			t.Fatal(err)
		}
		h = checked(t, c, srvH)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	e := &Env{T: t, URL: hs.URL + "/v1", Store: raw, Clock: fake, App: a, Server: srvH, Logs: logs, Headers: o.Headers}
	v, err := account.Service{Store: raw, Clock: fake}.Create(ctx, "Acme Goods", "acme-goods")
	if err != nil {
		t.Fatal(err)
	}
	e.Vendor = v
	e.Token = e.NewToken(v.ID, auth.AllScopes()...)
	if h != http.Handler(srvH) {
		// Whatever events the test wrote are read back over HTTP at its end,
		// so each one's data is checked against its type's schema.
		t.Cleanup(e.readEvents)
	}
	return e
}

// readEvents pages through the vendor's event log.
func (e *Env) readEvents() {
	if e.T.Failed() {
		return
	}
	tok := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
	path := "/vendors/" + e.Vendor.ID + "/events?limit=100"
	for range 1000 {
		r := e.Do(Req{Path: path, Token: tok})
		if r.Status != http.StatusOK {
			return // documented refusals (a test's faulty store, its spent rate window) are checked too
		}
		var page struct {
			Page struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"page"`
		}
		if json.Unmarshal(r.Body, &page) != nil || page.Page.NextCursor == nil {
			return
		}
		path = "/vendors/" + e.Vendor.ID + "/events?limit=100&page_after=" + url.QueryEscape(*page.Page.NextCursor)
	}
}

// NewToken issues a token for a vendor with scopes.
func (e *Env) NewToken(vendorID string, scopes ...auth.Scope) string {
	e.T.Helper()
	tok, err := auth.Service{Store: e.Store, Clock: e.Clock}.Issue(context.Background(), vendorID, scopes, 0)
	if err != nil {
		e.T.Fatal(err)
	}
	return tok.Token
}

// Resp is a response read whole.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// Req describes a request; Body is JSON-encoded unless it is []byte or string.
type Req struct {
	Method  string
	Path    string // relative to the base URL, e.g. /vendors
	Token   string // "" sends no Authorization; use e.Token for the default
	Body    any
	Headers map[string]string
}

// Do sends a request.
func (e *Env) Do(r Req) *Resp {
	e.T.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		body = bytes.NewReader(b)
	case string:
		body = strings.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			e.T.Fatal(err)
		}
		body = bytes.NewReader(enc)
	}
	if r.Method == "" {
		r.Method = http.MethodGet
	}
	req, err := http.NewRequest(r.Method, e.URL+r.Path, body)
	if err != nil {
		e.T.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	for k, v := range e.Headers {
		req.Header.Set(k, v)
	}
	for k, v := range r.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.T.Fatal(err)
	}
	return &Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

// DoRetrying sends a request like a well-behaved client under load: a 503
// (which carries Retry-After) is retried a few times after a short pause.
// Concurrency tests use it so that a store saturated by the test itself
// cannot turn "exactly N succeed" into fewer.
func (e *Env) DoRetrying(r Req) *Resp {
	e.T.Helper()
	for attempt := 0; ; attempt++ {
		res := e.Do(r)
		if res.Status != http.StatusServiceUnavailable || attempt == 5 {
			return res
		}
		time.Sleep(time.Duration(20*(attempt+1)) * time.Millisecond)
	}
}

// Get is a GET with the default token.
func (e *Env) Get(path string) *Resp { return e.Do(Req{Path: path, Token: e.Token}) }

// JSON decodes the body into v.
func (r *Resp) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Problem is a decoded problem body.
type Problem struct {
	Type, Title, Code, Detail, RequestID string
	Status                               int
}

// WantProblem checks that the response is a problem of status and code in
// exactly the contract's shape, and returns it.
func (r *Resp) WantProblem(t testing.TB, status int, code string) Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var m map[string]any
	r.JSON(t, &m)
	want := []string{"code", "detail", "request_id", "status", "title", "type"}
	if len(m) != len(want) {
		t.Fatalf("problem has fields %v, want exactly %v", keys(m), want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Fatalf("problem lacks %q: %s", k, r.Body)
		}
	}
	p := Problem{Type: str(m["type"]), Title: str(m["title"]), Code: str(m["code"]), Detail: str(m["detail"]), RequestID: str(m["request_id"])}
	if s, ok := m["status"].(float64); ok {
		p.Status = int(s)
	}
	if p.Status != status || p.Code != code {
		t.Fatalf("problem %+v, want status %d code %s", p, status, code)
	}
	if p.RequestID == "" || p.RequestID != r.Header.Get("X-Request-Id") {
		t.Fatalf("problem request_id %q differs from X-Request-Id %q", p.RequestID, r.Header.Get("X-Request-Id"))
	}
	return p
}

func str(v any) string { s, _ := v.(string); return s }

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// StoresEnv chooses the stores the HTTP suites run on (docs/decisions.md,
// "The test loop"):
//
//   - unset: a suite that runs on both stores (Stores) does; a scenario
//     runs on DynamoDB Local only when it is one of the DynamoDB scenarios
//     its package names (ScenarioStores);
//   - "all": every scenario on both stores, as before the cut;
//   - "sqlite": the embedded store only (`make test`'s second clock pass,
//     and any run without the emulator's cost).
//
// Store adapters' own tests (shared/store/...) ignore it.
const StoresEnv = "SELLERAPI_TEST_STORES"

// storesMode reads StoresEnv. Another value panics: a typo must not quietly
// turn the DynamoDB runs off.
func storesMode() string {
	switch v := os.Getenv(StoresEnv); v {
	case "", "all", "sqlite":
		return v
	default:
		panic(fmt.Sprintf("apitest: %s=%q: want all, sqlite or unset", StoresEnv, v))
	}
}

// Stores lists the stores to run HTTP suites on: the embedded one always,
// DynamoDB Local (see ddbtest) unless StoresEnv is "sqlite".
func Stores() []StoreKind {
	if storesMode() == "sqlite" {
		return []StoreKind{SQLite}
	}
	return []StoreKind{SQLite, DynamoDB}
}

// ScenarioStores lists the stores one scenario runs on: the embedded store,
// and DynamoDB Local when onDynamoDB (the scenario exercises a behaviour
// the store contract suite cannot pin, see docs/decisions.md) or when
// StoresEnv is "all". Never DynamoDB Local when StoresEnv is "sqlite".
func ScenarioStores(onDynamoDB bool) []StoreKind {
	switch storesMode() {
	case "all":
		return []StoreKind{SQLite, DynamoDB}
	case "sqlite":
		return []StoreKind{SQLite}
	}
	if onDynamoDB {
		return []StoreKind{SQLite, DynamoDB}
	}
	return []StoreKind{SQLite}
}

// Create POSTs body to path with the default token and Idempotency-Key
// key, retried as DoRetrying retries, and decodes a 201's body into a T (the
// zero T otherwise).
func Create[T any](t testing.TB, e *Env, path, key string, body any) (*Resp, T) {
	t.Helper()
	r := e.DoRetrying(Req{Method: http.MethodPost, Path: path, Token: e.Token, Body: body,
		Headers: map[string]string{"Idempotency-Key": key}})
	var v T
	if r.Status == http.StatusCreated {
		r.JSON(t, &v)
	}
	return r, v
}

// MustCreate is Create failing the test unless the answer is 201.
func MustCreate[T any](t testing.TB, e *Env, path, key string, body any) T {
	t.Helper()
	r, v := Create[T](t, e, path, key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", path, r.Status, r.Body)
	}
	return v
}

// Walk GETs the list at path (with its query: a limit, filters) and follows
// each page's next_cursor, as page_after, to the end; it fails on an answer
// other than 200 and after 100 pages. It returns each page's item ids and
// the cursors that led past them.
func (e *Env) Walk(t testing.TB, path string) (pages [][]string, cursors []string) {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	next := path
	for range 100 {
		r := e.Get(next)
		if r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", next, r.Status, r.Body)
		}
		var page struct {
			Data []struct{ ID string } `json:"data"`
			Page struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"page"`
		}
		r.JSON(t, &page)
		ids := []string{}
		for _, d := range page.Data {
			ids = append(ids, d.ID)
		}
		pages = append(pages, ids)
		if page.Page.NextCursor == nil {
			return pages, cursors
		}
		cursors = append(cursors, *page.Page.NextCursor)
		next = path + sep + "page_after=" + url.QueryEscape(*page.Page.NextCursor)
	}
	t.Fatalf("GET %s: the list does not end after 100 pages", path)
	return nil, nil
}

// inTurn is the options opts applied in turn, after those before it.
func inTurn(opts []app.Option) app.Option {
	return func(a *app.App) {
		for _, o := range opts {
			o(a)
		}
	}
}
