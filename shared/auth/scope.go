package auth

import (
	"fmt"
	"slices"
	"strings"
)

// Scope is a permission a token carries.
type Scope string

// The scopes of the contract.
const (
	VendorsRead       Scope = "vendors.read"
	ProductsRead      Scope = "products.read"
	ProductsWrite     Scope = "products.write"
	InventoryRead     Scope = "inventory.read"
	InventoryWrite    Scope = "inventory.write"
	ReservationsRead  Scope = "reservations.read"
	ReservationsWrite Scope = "reservations.write"
	ConnectionsRead   Scope = "connections.read"
	ConnectionsWrite  Scope = "connections.write"
	JobsRead          Scope = "jobs.read"
	JobsWrite         Scope = "jobs.write"
	WebhooksRead      Scope = "webhooks.read"
	WebhooksWrite     Scope = "webhooks.write"
)

// AllScopes lists every scope, in the contract's order.
func AllScopes() []Scope {
	return []Scope{VendorsRead, ProductsRead, ProductsWrite, InventoryRead, InventoryWrite,
		ReservationsRead, ReservationsWrite, ConnectionsRead, ConnectionsWrite,
		JobsRead, JobsWrite, WebhooksRead, WebhooksWrite}
}

// ParseScopes reads a comma-separated list; "all" means every scope.
func ParseScopes(s string) ([]Scope, error) {
	if strings.TrimSpace(s) == "all" {
		return AllScopes(), nil
	}
	known := AllScopes()
	var out []Scope
	for _, part := range strings.Split(s, ",") {
		sc := Scope(strings.TrimSpace(part))
		if sc == "" {
			continue
		}
		if !slices.Contains(known, sc) {
			return nil, fmt.Errorf("unknown scope %q", sc)
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no scopes given")
	}
	return out, nil
}
