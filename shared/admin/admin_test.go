package admin_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/webhook"
)

func newService(t *testing.T) admin.Service {
	t.Helper()
	c := clocktest.Fake(2027, 3, 13, 21, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return admin.Service{Store: st, Clock: c, Vendors: account.Service{Store: st, Clock: c}, Tokens: auth.Service{Store: st, Clock: c},
		Pairings: pairing.Service{Store: st, Clock: c, Connections: connection.Service{Store: st, Clock: c}},
		Webhooks: webhook.Service{Store: st, Clock: c}, Catalog: catalog.Service{Store: st, Clock: c}}
}

func (h handler) do(t *testing.T, raw string) admin.Response {
	t.Helper()
	res, err := h.s.Handle(context.Background(), json.RawMessage(raw))
	if err != nil {
		t.Fatalf("%s: invocation error %v", raw, err)
	}
	return res
}

type handler struct{ s admin.Service }

// roundTrip reads Data as the JSON the CLI prints.
func roundTrip(t *testing.T, data any, into any) {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

// TestActions: vendor, token and owner administration end to end; a
// refused request is a successful invocation with an error body.
func TestActions(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	h := handler{s}

	res := h.do(t, `{"action":"vendor.create","name":"Acme Goods","slug":"acme-goods"}`)
	var v account.View
	roundTrip(t, res.Data, &v)
	if res.Error != nil || v.Slug != "acme-goods" || v.ID == "" {
		t.Fatalf("vendor.create: %+v", res)
	}
	if res := h.do(t, `{"action":"vendor.create","name":"Again","slug":"acme-goods"}`); res.Error == nil || res.Error.Code != errs.CodeConflict {
		t.Fatalf("a taken slug: %+v", res)
	}

	res = h.do(t, `{"action":"token.issue","vendor":"`+v.ID+`"}`)
	var issued auth.Issued
	roundTrip(t, res.Data, &issued)
	if res.Error != nil || len(issued.Scopes) != len(auth.AllScopes()) || issued.ExpiresAt != nil {
		t.Fatalf("token.issue with defaults: %+v", res)
	}
	tokens := auth.Service{Store: s.Store, Clock: s.Clock}
	if _, err := tokens.Authenticate(ctx, issued.Token, v.ID); err != nil {
		t.Fatalf("the issued token: %v", err)
	}
	res = h.do(t, `{"action":"token.issue","vendor":"`+v.ID+`","scopes":"products.read","expires_in":"720h"}`)
	var short auth.Issued
	roundTrip(t, res.Data, &short)
	if res.Error != nil || len(short.Scopes) != 1 || short.ExpiresAt == nil || !short.ExpiresAt.Equal(s.Clock.Now().Add(720*3600e9)) {
		t.Fatalf("token.issue with scopes and expiry: %+v", res)
	}

	if res := h.do(t, `{"action":"token.revoke","id":"`+issued.ID+`"}`); res.Error != nil {
		t.Fatalf("token.revoke: %+v", res.Error)
	}
	if _, err := tokens.Authenticate(ctx, issued.Token, v.ID); !errs.Is(err, errs.CodeUnauthenticated) {
		t.Fatalf("a revoked token: %v", err)
	}

	if res := h.do(t, `{"action":"vendor.set-owner","id":"`+v.ID+`"}`); res.Error != nil {
		t.Fatalf("vendor.set-owner: %+v", res.Error)
	}
	if _, err := tokens.Authenticate(ctx, short.Token, v.ID); !errs.Is(err, errs.CodeUnauthenticated) {
		t.Fatalf("a token of the previous owner: %v", err)
	}
}

// TestRefusals: misspelt fields, unknown actions and bad values are refused
// with INVALID_REQUEST, never ignored.
func TestRefusals(t *testing.T) {
	h := handler{newService(t)}
	for _, raw := range []string{
		`{"action":"vendor.create","name":"A","slug":"a","slugg":"b"}`,
		`{"action":"vendor.delete","id":"ven_1"}`,
		`{"action":"token.issue","vendor":"ven_1","scopes":"products.admin"}`,
		`{"action":"token.issue","vendor":"ven_1","expires_in":"a month"}`,
		`not json`,
	} {
		res := h.do(t, raw)
		if res.Error == nil || res.Error.Code != errs.CodeInvalidRequest {
			t.Errorf("%s: %+v, want INVALID_REQUEST", raw, res)
		}
	}
	if res := h.do(t, `{"action":"token.issue","vendor":"ven_absent"}`); res.Error == nil || res.Error.Code != errs.CodeNotFound {
		t.Errorf("token for an absent vendor: %+v", res)
	}
	if res := h.do(t, `{"action":"token.revoke","id":"tok_absent"}`); res.Error == nil || res.Error.Code != errs.CodeNotFound {
		t.Errorf("revoking an absent token: %+v", res)
	}
}
