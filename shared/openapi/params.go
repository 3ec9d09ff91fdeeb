package openapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

//go:generate go run ./paramgen

// Parameter is a path or query parameter of an operation and what the
// document's schema allows of its value. Header parameters are not listed:
// the headers a route takes are checked by the platform rules that read
// them.
type Parameter struct {
	Name string
	// In is "path" or "query".
	In       string
	Required bool
	// Integer is true for type integer; every other parameter is a string.
	Integer bool
	// MinLength and MaxLength count characters; zero sets no bound.
	MinLength, MaxLength int
	// Pattern is the ECMA-262 pattern the value must match; empty for none.
	Pattern string
	// Enum lists the values allowed; nil allows any.
	Enum []string
	// Minimum and Maximum bound an integer; nil sets no bound.
	Minimum, Maximum *int64
	// Code is the error code of a refusal when the operation documents one
	// of its own (x-error-code: INVALID_CURSOR for a cursor, INVALID_MEDIA
	// for a digest); empty for INVALID_PARAMETER.
	Code string
	// Description is the parameter's description when it has a pattern: a
	// refusal quotes it, since a pattern alone explains little.
	Description string
}

// ref is a pointer to n, for the generated table's integer bounds.
func ref(n int64) *int64 { return &n }

// Parameters maps each operation id of the embedded document to its path
// and query parameters, in the document's order (the path item's first).
// The table is generated from openapi.json (go generate), so that a
// process does not parse the document to learn it; a test keeps the two
// in step.
func Parameters() map[string][]Parameter { return parameters() }

// ParseParameters reads the parameter table from an OpenAPI document. It
// refuses a parameter schema using a keyword it cannot enforce, so the
// document cannot promise a check the service does not make.
func ParseParameters(doc []byte) (map[string][]Parameter, error) {
	var d struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]json.RawMessage `json:"parameters"`
			Schemas    map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	resolve := func(raw json.RawMessage, kind string, into any) error {
		var r struct {
			Ref string `json:"$ref"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return err
		}
		if r.Ref != "" {
			prefix := "#/components/" + kind + "/"
			table := d.Components.Parameters
			if kind == "schemas" {
				table = d.Components.Schemas
			}
			target, ok := table[strings.TrimPrefix(r.Ref, prefix)]
			if !strings.HasPrefix(r.Ref, prefix) || !ok {
				return fmt.Errorf("unresolved $ref %q", r.Ref)
			}
			raw = target
		}
		return json.Unmarshal(raw, into)
	}
	param := func(raw json.RawMessage) (Parameter, bool, error) {
		var p struct {
			Name        string          `json:"name"`
			In          string          `json:"in"`
			Required    bool            `json:"required"`
			Description string          `json:"description"`
			Code        string          `json:"x-error-code"`
			Schema      json.RawMessage `json:"schema"`
		}
		if err := resolve(raw, "parameters", &p); err != nil {
			return Parameter{}, false, err
		}
		if p.In != "path" && p.In != "query" {
			return Parameter{}, false, nil
		}
		var s map[string]json.RawMessage
		if err := resolve(p.Schema, "schemas", &s); err != nil {
			return Parameter{}, false, fmt.Errorf("%s: %w", p.Name, err)
		}
		out := Parameter{Name: p.Name, In: p.In, Required: p.Required, Code: p.Code}
		for k, v := range s {
			var err error
			switch k {
			case "type":
				var typ string
				err = json.Unmarshal(v, &typ)
				if typ != "string" && typ != "integer" {
					err = fmt.Errorf("type %s is not checked", v)
				}
				out.Integer = typ == "integer"
			case "minLength":
				err = json.Unmarshal(v, &out.MinLength)
			case "maxLength":
				err = json.Unmarshal(v, &out.MaxLength)
			case "pattern":
				err = json.Unmarshal(v, &out.Pattern)
			case "enum":
				err = json.Unmarshal(v, &out.Enum)
			case "minimum":
				out.Minimum = new(int64)
				err = json.Unmarshal(v, out.Minimum)
			case "maximum":
				out.Maximum = new(int64)
				err = json.Unmarshal(v, out.Maximum)
			case "description", "default", "example", "examples", "title":
			default:
				err = fmt.Errorf("schema keyword %q is not checked", k)
			}
			if err != nil {
				return Parameter{}, false, fmt.Errorf("%s %s: %w", p.In, p.Name, err)
			}
		}
		if out.Pattern != "" {
			out.Description = p.Description
		}
		return out, true, nil
	}
	ops := map[string][]Parameter{}
	for path, item := range d.Paths {
		var common []json.RawMessage
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &common); err != nil {
				return nil, fmt.Errorf("openapi: %s: %w", path, err)
			}
		}
		for method, raw := range item {
			if method == "parameters" || method == "summary" || method == "description" || method == "servers" {
				continue
			}
			var op struct {
				OperationID string            `json:"operationId"`
				Parameters  []json.RawMessage `json:"parameters"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", method, path, err)
			}
			var list []Parameter
			for _, raw := range slices.Concat(common, op.Parameters) {
				p, ok, err := param(raw)
				if err != nil {
					return nil, fmt.Errorf("openapi: %s: %w", op.OperationID, err)
				}
				if !ok {
					continue
				}
				// An operation's parameter overrides the path item's of the
				// same name and location.
				list = slices.DeleteFunc(list, func(q Parameter) bool { return q.Name == p.Name && q.In == p.In })
				list = append(list, p)
			}
			if len(list) > 0 {
				ops[op.OperationID] = list
			}
		}
	}
	return ops, nil
}
