package connection

import (
	"encoding/json"
	"math"

	"github.com/moku/sellerapi/shared/fields"
)

var roleValues = fields.StringRule{OneOf: []string{Source, Destination, Disabled}}

// CreateInput is a parsed connection create body.
type CreateInput struct {
	Provider          string
	ExternalAccountID string
	DisplayName       string
	Roles             Roles
}

// ParseCreate reads a connection create body.
func ParseCreate(body []byte) (CreateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return CreateInput{}, err
	}
	var in CreateInput
	in.Provider = o.String("provider", fields.Required, fields.StringRule{OneOf: Providers()})
	in.ExternalAccountID = o.String("external_account_id", fields.Required, fields.StringRule{Min: 1, Max: 256, MaxBytes: 256, Trim: true})
	in.DisplayName = o.String("display_name", fields.Required, fields.StringRule{Min: 1, Max: 120, SingleLine: true})
	in.Roles = readRoles(o, in.Provider)
	return in, o.Err()
}

// readRoles reads the roles field: an object with exactly the five roles,
// or, for the store plugin, the name of a preset.
func readRoles(o *fields.Object, provider string) Roles {
	if !o.Has("roles") {
		o.String("roles", fields.Required, fields.StringRule{})
		return Roles{}
	}
	var preset string
	raw := o.Raw("roles")
	if json.Unmarshal(raw, &preset) == nil {
		r, ok := Preset(preset)
		switch {
		case provider != "" && provider != StorePlugin:
			o.Fail("roles", "presets exist only for the %s provider; give the five roles", StorePlugin)
		case !ok:
			o.Fail("roles", "must be an object of the five roles or one of the presets service_source, store_catalog_source, store_source")
		}
		return r
	}
	child, err := fields.Parse(raw, o.Name("roles"))
	if err != nil {
		o.Fail("roles", "must be an object of the five roles or a preset name")
		return Roles{}
	}
	r := Roles{
		Catalog:                  child.String("catalog", fields.Required, roleValues),
		BasePrice:                child.String("base_price", fields.Required, roleValues),
		Inventory:                child.String("inventory", fields.Required, roleValues),
		OrderIngress:             child.String("order_ingress", fields.Required, fields.StringRule{OneOf: []string{Enabled, Disabled}}),
		ExternalOrderFulfillment: child.String("external_order_fulfillment", fields.Required, fields.StringRule{OneOf: []string{Moku, Channel}}),
	}
	o.Child(child)
	return r
}

// RolesInput is a parsed role replacement body.
type RolesInput struct {
	ExpectedVersion int64
	Roles           Roles
	preset          bool
}

// ParseRoles reads a PUT /connections/{id}/roles body: expected_version and
// roles (an object, or a preset name for the store plugin, checked against
// the connection's provider by the service).
func ParseRoles(body []byte) (RolesInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return RolesInput{}, err
	}
	var in RolesInput
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	var s string
	in.preset = o.Has("roles") && json.Unmarshal(o.Peek("roles"), &s) == nil
	in.Roles = readRoles(o, "")
	return in, o.Err()
}

// ParseHealth reads a connector's health report.
func ParseHealth(body []byte) (Health, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Health{}, err
	}
	var h Health
	h.State = o.String("state", fields.Required, fields.StringRule{OneOf: []string{HealthUnknown, HealthHealthy, HealthDegraded, HealthBlocked}})
	h.LastObservedAt = o.Time("last_observed_at", fields.OptionalNullable)
	h.LastSuccessAt = o.Time("last_success_at", fields.OptionalNullable)
	h.Blockers = o.Strings("blockers", fields.Optional, fields.ListRule{Max: 20, Item: fields.StringRule{Min: 1, Max: 160}})
	if h.Blockers == nil {
		h.Blockers = []string{}
	}
	return h, o.Err()
}
