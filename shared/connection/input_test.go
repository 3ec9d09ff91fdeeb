package connection_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
)

func createBody(t *testing.T, set map[string]any) []byte {
	t.Helper()
	m := map[string]any{
		"provider": "marketplace_a", "external_account_id": "acct-1", "display_name": "Shop",
		"roles": map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "disabled",
			"order_ingress": "enabled", "external_order_fulfillment": "moku"},
	}
	return dt.Body(m, set)
}

func roles(set map[string]any) map[string]any {
	r := map[string]any{"catalog": "destination", "base_price": "destination", "inventory": "disabled",
		"order_ingress": "enabled", "external_order_fulfillment": "moku"}
	return dt.Set(r, set)
}

// TestCreateBody: provider, external_account_id, display_name and roles are
// required with the constraints of the Connection resource.
func TestCreateBody(t *testing.T) {
	for _, c := range []struct {
		name string
		set  map[string]any
		ok   bool
	}{
		{"complete", nil, true},
		{"unknown provider", map[string]any{"provider": "marketplace_z"}, false},
		{"no provider", map[string]any{"provider": nil}, false},
		{"account 256 chars", map[string]any{"external_account_id": strings.Repeat("a", 256)}, true},
		{"account 257 chars", map[string]any{"external_account_id": strings.Repeat("a", 257)}, false},
		{"account 256 chars but 512 bytes", map[string]any{"external_account_id": strings.Repeat("é", 256)}, false},
		{"account blank", map[string]any{"external_account_id": "   "}, false},
		{"display name 120", map[string]any{"display_name": strings.Repeat("d", 120)}, true},
		{"display name 121", map[string]any{"display_name": strings.Repeat("d", 121)}, false},
		{"display name empty", map[string]any{"display_name": ""}, false},
		{"no roles", map[string]any{"roles": nil}, false},
		{"role missing", map[string]any{"roles": roles(map[string]any{"inventory": nil})}, false},
		{"extra role", map[string]any{"roles": roles(map[string]any{"pricing": "source"})}, false},
		{"catalog enabled", map[string]any{"roles": roles(map[string]any{"catalog": "enabled"})}, false},
		{"ingress source", map[string]any{"roles": roles(map[string]any{"order_ingress": "source"})}, false},
		{"fulfillment channel", map[string]any{"roles": roles(map[string]any{"external_order_fulfillment": "channel"})}, true},
		{"fulfillment service", map[string]any{"roles": roles(map[string]any{"external_order_fulfillment": "service"})}, false},
		{"preset for a marketplace", map[string]any{"roles": "store_source"}, false},
		{"preset for the store plugin", map[string]any{"provider": "store_plugin", "roles": "store_source"}, true},
		{"unknown preset", map[string]any{"provider": "store_plugin", "roles": "all_source"}, false},
		{"extra field", map[string]any{"status": "paused"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, err := connection.ParseCreate(createBody(t, c.set))
			if c.ok != (err == nil) {
				t.Fatalf("got %v", err)
			}
			if err != nil && errs.As(err).Kind != errs.Invalid {
				t.Fatalf("kind %v, want Invalid", errs.As(err).Kind)
			}
			if c.name == "preset for the store plugin" {
				if r, _ := connection.Preset("store_source"); in.Roles != r {
					t.Fatalf("preset resolved to %+v", in.Roles)
				}
			}
		})
	}
	in, err := connection.ParseCreate(createBody(t, map[string]any{"external_account_id": "  acct-9  "}))
	if err != nil || in.ExternalAccountID != "acct-9" {
		t.Fatalf("external_account_id is trimmed: %q %v", in.ExternalAccountID, err)
	}
}

// TestRolesBody: expected_version is required beside the roles.
func TestRolesBody(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"expected_version":2,"roles":"service_source"}`:  true,
		`{"roles":"service_source"}`:                       false,
		`{"expected_version":-1,"roles":"service_source"}`: false,
		`{"expected_version":2}`:                           false,
		`{"expected_version":2,"roles":{"catalog":"source","base_price":"source","inventory":"source","order_ingress":"disabled","external_order_fulfillment":"channel"}}`: true,
	} {
		if _, err := connection.ParseRoles([]byte(body)); ok != (err == nil) {
			t.Errorf("%s: %v", body, err)
		}
	}
}

// TestHealthBody: state from the four values; blockers max 20, each
// 1..160 chars.
func TestHealthBody(t *testing.T) {
	many := make([]string, 21)
	for i := range many {
		many[i] = "b"
	}
	twenty, _ := json.Marshal(many[:20])
	tooMany, _ := json.Marshal(many)
	for body, ok := range map[string]bool{
		`{"state":"healthy"}`: true,
		`{"state":"fine"}`:    false,
		`{"state":"blocked","blockers":` + string(twenty) + `}`:               true,
		`{"state":"blocked","blockers":` + string(tooMany) + `}`:              false,
		`{"state":"blocked","blockers":[""]}`:                                 false,
		`{"state":"blocked","blockers":["` + strings.Repeat("b", 161) + `"]}`: false,
		`{"state":"healthy","last_success_at":"yesterday"}`:                   false,
	} {
		if _, err := connection.ParseHealth([]byte(body)); ok != (err == nil) {
			t.Errorf("%s: %v", body, err)
		}
	}
}
