package auth_test

import (
	"slices"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
)

// TestAllScopes: the thirteen scopes of the contract's Authentication
// section, in its order.
func TestAllScopes(t *testing.T) {
	want := []auth.Scope{"vendors.read", "products.read", "products.write", "inventory.read", "inventory.write",
		"reservations.read", "reservations.write", "connections.read", "connections.write",
		"jobs.read", "jobs.write", "webhooks.read", "webhooks.write"}
	if got := auth.AllScopes(); !slices.Equal(got, want) {
		t.Fatalf("AllScopes = %v, want %v", got, want)
	}
}

// TestParseScopes: a comma-separated list or "all"; unknown names refused;
// duplicates kept once.
func TestParseScopes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []auth.Scope
		ok   bool
	}{
		{"all", auth.AllScopes(), true},
		{" all ", auth.AllScopes(), true},
		{"products.read", []auth.Scope{auth.ProductsRead}, true},
		{"products.read, inventory.write,products.read", []auth.Scope{auth.ProductsRead, auth.InventoryWrite}, true},
		{"products.read,,", []auth.Scope{auth.ProductsRead}, true},
		{"products.admin", nil, false},
		{"all,products.read", nil, false},
		{"", nil, false},
		{" , ", nil, false},
	} {
		got, err := auth.ParseScopes(c.in)
		if c.ok != (err == nil) || (c.ok && !slices.Equal(got, c.want)) {
			t.Errorf("ParseScopes(%q) = %v, %v", c.in, got, err)
		}
	}
	tok := auth.Token{Scopes: []auth.Scope{auth.ProductsRead}}
	if !tok.Has(auth.ProductsRead) || tok.Has(auth.ProductsWrite) {
		t.Error("Has: a read scope does not grant write")
	}
}
