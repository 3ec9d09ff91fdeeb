package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/pairing"
)

type pairingBody struct {
	Data struct {
		ID                string
		Status            string
		Version           int64
		Code              *string
		OperationalWrites string `json:"operational_writes"`
		Acceptance        *struct {
			ConnectionID string `json:"connection_id"`
			Preset       string
			Created      bool `json:"connection_created"`
		}
		Discovery *struct {
			Store struct{ Domain string }
		}
	}
}

type exchangeBody struct {
	Data struct {
		PairingID      string `json:"pairing_id"`
		DiscoveryToken string `json:"discovery_token"`
	}
}

func pairingEnv(t *testing.T, kind apitest.StoreKind) *apitest.Env {
	return newEnv(t, kind, apitest.Options{Groups: []httpapi.Group{httpapi.Products, httpapi.Connections, httpapi.StorePairings}})
}

func createPairing(t *testing.T, e *apitest.Env, key string) pairingBody {
	t.Helper()
	r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings", Token: e.Token, Body: map[string]any{},
		Headers: map[string]string{"Idempotency-Key": key}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create pairing: %d %s", r.Status, r.Body)
	}
	var p pairingBody
	r.JSON(t, &p)
	return p
}

func exchange(e *apitest.Env, code string) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/exchange", Body: map[string]any{"code": code}})
}

func mustExchange(t *testing.T, e *apitest.Env, code string) string {
	t.Helper()
	r := exchange(e, code)
	if r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Body)
	}
	var x exchangeBody
	r.JSON(t, &x)
	if !strings.HasPrefix(x.Data.DiscoveryToken, "mkdsc_") {
		t.Fatalf("discovery token %q", x.Data.DiscoveryToken)
	}
	return x.Data.DiscoveryToken
}

var discoveryReport = map[string]any{
	"store":          map[string]any{"domain": "shop.example.com", "name": "Example Shop", "platform": "storeplatform", "platform_version": "6.4.1", "currency": "EUR"},
	"catalog":        map[string]any{"product_count": 120, "variation_count": 340, "published_count": 100},
	"plugin_version": "1.0.0",
}

func discover(e *apitest.Env, token string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/current/discovery", Token: token, Body: body})
}

func current(t *testing.T, e *apitest.Env, token string) pairingBody {
	t.Helper()
	r := e.Do(apitest.Req{Path: "/store-pairings/current", Token: token})
	if r.Status != http.StatusOK {
		t.Fatalf("current: %d %s", r.Status, r.Body)
	}
	var p pairingBody
	r.JSON(t, &p)
	return p
}

func accept(e *apitest.Env, id string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings/" + id + "/accept", Token: e.Token, Body: body})
}

func review(t *testing.T, e *apitest.Env, id string) error {
	t.Helper()
	_, err := pairing.Service{Store: e.Store, Clock: e.Clock, Connections: connection.Service{Store: e.Store, Clock: e.Clock}}.Review(context.Background(), id, "test")
	return err
}

// gate is what a future operational plugin route calls before it writes.
func gate(e *apitest.Env, p pairing.Principal) error {
	_, err := pairing.Service{Store: e.Store, Clock: e.Clock, Connections: connection.Service{Store: e.Store, Clock: e.Clock}}.AuthorizeOperationalWrite(context.Background(), p)
	return err
}

func pairingEvents(t *testing.T, e *apitest.Env, resourceID string) []string {
	t.Helper()
	return eventTypes(t, e, resourceID)
}

func TestStorePairingFlow(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		vpath := "/vendors/" + e.Vendor.ID

		// The seller creates a pairing: the code is shown once.
		p := createPairing(t, e, "pairing-key-0001")
		if p.Data.Status != "pending_exchange" || p.Data.Code == nil || len(*p.Data.Code) != 19 || p.Data.OperationalWrites != "refused" {
			t.Fatalf("created: %+v", p.Data)
		}
		// An exact replay answers the same pairing without the code.
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: vpath + "/store-pairings", Token: e.Token, Body: map[string]any{},
			Headers: map[string]string{"Idempotency-Key": "pairing-key-0001"}})
		var replay pairingBody
		r.JSON(t, &replay)
		if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "true" || replay.Data.ID != p.Data.ID || replay.Data.Code != nil {
			t.Fatalf("replay: %d %s", r.Status, r.Body)
		}
		// The seller reads and lists it; the code is not in them.
		if r := e.Get(vpath + "/store-pairings/" + p.Data.ID); r.Status != 200 || strings.Contains(string(r.Body), *p.Data.Code) {
			t.Fatalf("get: %d %s", r.Status, r.Body)
		}
		if r := e.Get(vpath + "/store-pairings"); r.Status != 200 || !strings.Contains(string(r.Body), p.Data.ID) {
			t.Fatalf("list: %d %s", r.Status, r.Body)
		}

		// Discovery before the exchange: there is no credential yet, and a
		// made-up one is 401.
		fake := "mkdsc_" + strings.TrimPrefix(p.Data.ID, "pair_") + "_" + strings.Repeat("a", 52)
		discover(e, fake, discoveryReport).WantProblem(t, 401, "UNAUTHENTICATED")

		// Accepting before discovery is a state conflict.
		accept(e, p.Data.ID, map[string]any{"expected_version": 1, "preset": "store_catalog_source"}).WantProblem(t, 409, "PAIRING_STATE_CONFLICT")

		// Wrong codes are refused alike, whatever they look like.
		for _, bad := range []string{"0000-0000-0000-0000", "not a code", strings.ToLower(*p.Data.Code) + "X"} {
			exchange(e, bad).WantProblem(t, 400, "PAIRING_CODE_INVALID")
		}
		// The plugin exchanges the code (typed in lower case, without dashes).
		token := mustExchange(t, e, strings.ToLower(strings.ReplaceAll(*p.Data.Code, "-", "")))
		// A code works once.
		exchange(e, *p.Data.Code).WantProblem(t, 409, "PAIRING_CODE_USED")

		cur := current(t, e, token)
		if cur.Data.ID != p.Data.ID || cur.Data.Status != "discovering" || cur.Data.OperationalWrites != "refused" {
			t.Fatalf("current: %+v", cur.Data)
		}

		// The discovery credential reaches nothing else: not a seller read,
		// not a seller write, not the seller's view of its own pairing.
		e.Do(apitest.Req{Path: vpath + "/products", Token: token}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Path: vpath + "/store-pairings/" + p.Data.ID, Token: token}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Method: http.MethodPost, Path: vpath + "/connections", Token: token, Body: connectionBody("store_plugin", "service_source"),
			Headers: map[string]string{"Idempotency-Key": "conn-key-0001"}}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Method: http.MethodPost, Path: vpath + "/store-pairings/" + p.Data.ID + "/accept", Token: token,
			Body: map[string]any{"expected_version": 2, "preset": "store_source"}}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		// ... and a token does not reach the discovery routes.
		e.Do(apitest.Req{Path: "/store-pairings/current", Token: e.Token}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")

		// Discovery: bad input is refused with the field named.
		bad := map[string]any{"store": map[string]any{"domain": "not a domain", "name": "x", "platform": "p", "currency": "EUR"},
			"catalog": map[string]any{"product_count": 1, "variation_count": 1}}
		if pr := discover(e, token, bad).WantProblem(t, 400, "INVALID_REQUEST"); !strings.Contains(pr.Detail, "store.domain") {
			t.Fatalf("detail %q", pr.Detail)
		}
		if r := discover(e, token, discoveryReport); r.Status != 200 {
			t.Fatalf("discover: %d %s", r.Status, r.Body)
		}
		seen := current(t, e, token)
		if seen.Data.Discovery == nil || seen.Data.Discovery.Store.Domain != "shop.example.com" || seen.Data.Version != 3 {
			t.Fatalf("after discovery: %+v", seen.Data)
		}

		// The writes gate refuses before acceptance.
		pr := pairing.Principal{PairingID: p.Data.ID, VendorID: e.Vendor.ID}
		if err := gate(e, pr); errs.As(err).Code != errs.CodePairingNotActive {
			t.Fatalf("gate before acceptance: %v", err)
		}

		// Accept: a stale version is refused, the right one creates the
		// store_plugin connection with the preset's roles.
		accept(e, p.Data.ID, map[string]any{"expected_version": 2, "preset": "store_catalog_source"}).WantProblem(t, 409, "PAIRING_VERSION_CONFLICT")
		accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "everything"}).WantProblem(t, 400, "INVALID_REQUEST")
		r = accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "store_catalog_source"})
		var acc pairingBody
		r.JSON(t, &acc)
		if r.Status != 200 || acc.Data.Status != "accepted" || acc.Data.Acceptance == nil || !acc.Data.Acceptance.Created || acc.Data.OperationalWrites != "refused" {
			t.Fatalf("accept: %d %s", r.Status, r.Body)
		}
		connID := acc.Data.Acceptance.ConnectionID
		var conn connBody
		r = e.Get(vpath + "/connections/" + connID)
		r.JSON(t, &conn)
		if r.Status != 200 || conn.Data.Provider != "store_plugin" || conn.Data.ExternalAccountID != "shop.example.com" || conn.Data.Roles["catalog"] != "source" || conn.Data.Roles["inventory"] != "destination" {
			t.Fatalf("connection: %d %s", r.Status, r.Body)
		}
		if c, _, _ := masters(t, e); c != connID {
			t.Fatalf("catalog master %s, want %s", c, connID)
		}
		// Accepting twice: the old version is stale, the new one is past discovery.
		accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "store_catalog_source"}).WantProblem(t, 409, "PAIRING_VERSION_CONFLICT")
		accept(e, p.Data.ID, map[string]any{"expected_version": 4, "preset": "store_catalog_source"}).WantProblem(t, 409, "PAIRING_STATE_CONFLICT")
		// Discovery closes at acceptance.
		discover(e, token, discoveryReport).WantProblem(t, 409, "PAIRING_STATE_CONFLICT")

		// Operational writes stay refused until the review.
		if err := gate(e, pr); errs.As(err).Code != errs.CodePairingNotActive {
			t.Fatalf("gate before review: %v", err)
		}
		if err := review(t, e, p.Data.ID); err != nil {
			t.Fatalf("review: %v", err)
		}
		if cur := current(t, e, token); cur.Data.Status != "active" || cur.Data.OperationalWrites != "allowed" {
			t.Fatalf("after review: %+v", cur.Data)
		}
		// The seller sees which of its tokens accepted; the plugin sees
		// nothing of the seller's credentials.
		var seller struct {
			Data struct {
				Acceptance map[string]any `json:"acceptance"`
			} `json:"data"`
		}
		e.Get(vpath+"/store-pairings/"+p.Data.ID).JSON(t, &seller)
		tokenID, _ := seller.Data.Acceptance["accepted_by_token_id"].(string)
		if tokenID == "" {
			t.Fatalf("seller's view of the acceptance: %v, want the accepting token's id", seller.Data.Acceptance)
		}
		plugin := e.Do(apitest.Req{Path: "/store-pairings/current", Token: token})
		if plugin.Status != 200 || strings.Contains(string(plugin.Body), "accepted_by_token_id") || strings.Contains(string(plugin.Body), tokenID) ||
			!strings.Contains(string(plugin.Body), `"acceptance":{`) {
			t.Fatalf("the plugin's view shows the seller's token: %s", plugin.Body)
		}
		if err := gate(e, pr); err != nil {
			t.Fatalf("gate after review: %v", err)
		}

		// Revocation: the credential is 401 at once, the gate closes.
		r = e.Do(apitest.Req{Method: http.MethodPost, Path: vpath + "/store-pairings/" + p.Data.ID + "/revoke", Token: e.Token})
		if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"revoked"`) {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		e.Do(apitest.Req{Path: "/store-pairings/current", Token: token}).WantProblem(t, 401, "UNAUTHENTICATED")
		if err := gate(e, pr); errs.As(err).Code != errs.CodePairingNotActive {
			t.Fatalf("gate after revocation: %v", err)
		}
		// The connection stays, under the seller's control.
		if r := e.Get(vpath + "/connections/" + connID); r.Status != 200 {
			t.Fatalf("connection after revocation: %d", r.Status)
		}

		want := []string{event.StorePairingCreated, event.StorePairingExchanged, event.StorePairingDiscovered,
			event.StorePairingAccepted, event.StorePairingReviewed, event.StorePairingRevoked}
		// The fake clock stands still, so events of one millisecond come in any order.
		got := pairingEvents(t, e, p.Data.ID)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

func TestStorePairingCodeExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		p := createPairing(t, e, "pairing-key-0002")
		e.Clock.Advance(pairing.CodeTTL)
		exchange(e, *p.Data.Code).WantProblem(t, 409, "PAIRING_CODE_EXPIRED")
		r := e.Get("/vendors/" + e.Vendor.ID + "/store-pairings/" + p.Data.ID)
		if r.Status != 200 || !strings.Contains(string(r.Body), `"status":"expired"`) {
			t.Fatalf("expired pairing: %d %s", r.Status, r.Body)
		}
		// A revoked pairing's code is refused like a wrong one.
		q := createPairing(t, e, "pairing-key-0003")
		if r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings/" + q.Data.ID + "/revoke", Token: e.Token}); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		exchange(e, *q.Data.Code).WantProblem(t, 400, "PAIRING_CODE_INVALID")
	})
}

func TestDiscoveryCredentialExpires(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		p := createPairing(t, e, "pairing-key-0004")
		token := mustExchange(t, e, *p.Data.Code)
		current(t, e, token)
		e.Clock.Advance(pairing.CredentialTTL + time.Second)
		e.Do(apitest.Req{Path: "/store-pairings/current", Token: token}).WantProblem(t, 401, "UNAUTHENTICATED")
		// Tampered secrets are 401 too.
		e.Do(apitest.Req{Path: "/store-pairings/current", Token: token[:len(token)-1] + "x"}).WantProblem(t, 401, "UNAUTHENTICATED")
	})
}

func TestStorePairingUpdatesExistingConnection(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		body := connectionBody("store_plugin", "service_source")
		body["external_account_id"] = "shop.example.com"
		c := mustConnection(t, e, "conn-key-0002", body)
		other := mustConnection(t, e, "conn-key-0003", connectionBody("store_plugin", "service_source"))
		p := createPairing(t, e, "pairing-key-0005")
		token := mustExchange(t, e, *p.Data.Code)
		if r := discover(e, token, discoveryReport); r.Status != 200 {
			t.Fatalf("discover: %d %s", r.Status, r.Body)
		}
		// Another store's connection is refused.
		accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "store_source", "connection_id": other.Data.ID}).WantProblem(t, 400, "INVALID_REQUEST")
		r := accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "store_source", "connection_id": c.Data.ID})
		var acc pairingBody
		r.JSON(t, &acc)
		if r.Status != 200 || acc.Data.Acceptance.ConnectionID != c.Data.ID || acc.Data.Acceptance.Created {
			t.Fatalf("accept: %d %s", r.Status, r.Body)
		}
		var conn connBody
		e.Get("/vendors/"+e.Vendor.ID+"/connections/"+c.Data.ID).JSON(t, &conn)
		if conn.Data.Roles["inventory"] != "source" || conn.Data.Version != 2 {
			t.Fatalf("connection roles: %+v", conn.Data)
		}
	})
}

func TestStorePairingAcceptRespectsAuthority(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := pairingEnv(t, kind)
		// Another connection already sources the catalog.
		mustConnection(t, e, "conn-key-0004", connectionBody("store_plugin", "store_catalog_source"))
		p := createPairing(t, e, "pairing-key-0006")
		token := mustExchange(t, e, *p.Data.Code)
		discover(e, token, discoveryReport)
		accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "store_catalog_source"}).WantProblem(t, 409, "AUTHORITY_CONFLICT")
		// The pairing is unchanged and can be accepted as a destination.
		if r := accept(e, p.Data.ID, map[string]any{"expected_version": 3, "preset": "service_source"}); r.Status != 200 {
			t.Fatalf("accept: %d %s", r.Status, r.Body)
		}
	})
}

// A discovery credential reaches its two routes and nothing else: every
// other authenticated route of every group answers 403, before any work.
func TestDiscoveryCredentialReachesNothingElse(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	p := createPairing(t, e, "pairing-key-0007")
	token := mustExchange(t, e, *p.Data.Code)
	fill := strings.NewReplacer("{vendor_id}", e.Vendor.ID, "{pairing_id}", p.Data.ID)
	n := 0
	for _, rt := range e.Server.Routes() {
		if rt.Scopes == nil || rt.Credential == httpapi.DiscoveryCredential {
			continue
		}
		path := fill.Replace(rt.Path)
		for strings.Contains(path, "{") {
			i, j := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:i] + "x_" + path[i+1:j] + path[j+1:]
		}
		r := e.Do(apitest.Req{Method: rt.Method, Path: path, Token: token, Body: map[string]any{},
			Headers: map[string]string{"Idempotency-Key": "discovery-probe-1"}})
		if r.Status != http.StatusForbidden {
			t.Errorf("%s %s with a discovery credential: %d %s", rt.Method, path, r.Status, r.Body)
		}
		n++
	}
	if n < 30 {
		t.Fatalf("only %d routes probed", n)
	}
	// The pairing saw none of it.
	if cur := current(t, e, token); cur.Data.Version != 2 {
		t.Fatalf("pairing moved: %+v", cur.Data)
	}
}
