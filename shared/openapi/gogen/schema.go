package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// schema is the part of an OpenAPI 3.1 (JSON Schema 2020-12) schema the
// generator reads; every other keyword (limits, patterns, formats other
// than date-time) is validation the server does, not shape.
type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 types              `json:"type"`
	Format               string             `json:"format"`
	Minimum              *float64           `json:"minimum"`
	Description          string             `json:"description"`
	Enum                 []any              `json:"enum"`
	Const                json.RawMessage    `json:"const"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	Items                *schema            `json:"items"`
	OneOf                []*schema          `json:"oneOf"`
	AnyOf                []*schema          `json:"anyOf"`
	AllOf                []*schema          `json:"allOf"`
	Discriminator        *discriminator     `json:"discriminator"`
}

// discriminator names the property whose value picks a oneOf's branch.
type discriminator struct {
	PropertyName string            `json:"propertyName"`
	Mapping      map[string]string `json:"mapping"`
}

// types is "type": one name or a list of them.
type types []string

func (t *types) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("type: %w", err)
		}
		*t = list
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	*t = types{one}
	return nil
}

// document is the part of the OpenAPI document the generator reads.
type document struct {
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

// parse reads an OpenAPI document.
func parse(b []byte) (*document, error) {
	var d document
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("gogen: the document: %w", err)
	}
	if len(d.Components.Schemas) == 0 {
		return nil, fmt.Errorf("gogen: the document has no components.schemas")
	}
	return &d, nil
}

const refPrefix = "#/components/schemas/"

// refName is the component a $ref names and the path within it, if any
// (#/components/schemas/BulkOperation/properties/status).
func refName(ref string) (name string, path []string, err error) {
	rest, ok := strings.CutPrefix(ref, refPrefix)
	parts := strings.Split(rest, "/")
	if !ok || parts[0] == "" {
		return "", nil, fmt.Errorf("gogen: $ref %q is not a component schema", ref)
	}
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return parts[0], parts[1:], nil
}

// nullable reports whether "type" admits null.
func (s *schema) nullable() bool { return slices.Contains(s.Type, "null") }

// kind is the one non-null type s declares ("" for none or several).
func (s *schema) kind() string {
	var k string
	for _, t := range s.Type {
		if t == "null" {
			continue
		}
		if k != "" {
			return ""
		}
		k = t
	}
	return k
}

// stringEnum lists s's enum values when they are all strings (null
// aside); ok is false for no enum or one with other values.
func (s *schema) stringEnum() (values []string, ok bool) {
	if len(s.Enum) == 0 {
		return nil, false
	}
	for _, v := range s.Enum {
		switch v := v.(type) {
		case nil:
		case string:
			values = append(values, v)
		default:
			return nil, false
		}
	}
	return values, len(values) > 0
}

// additional is additionalProperties as a schema (nil when absent or a
// boolean).
func (s *schema) additional() (*schema, error) {
	b := bytes.TrimSpace(s.AdditionalProperties)
	if len(b) == 0 || b[0] != '{' {
		return nil, nil
	}
	var ap schema
	if err := json.Unmarshal(b, &ap); err != nil {
		return nil, fmt.Errorf("additionalProperties: %w", err)
	}
	return &ap, nil
}
