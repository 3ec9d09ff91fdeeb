package main

// Event filtering of an event source mapping (FilterCriteria), as Lambda
// applies it before invoking: a record is sent when any filter's pattern
// matches it; the others are dropped (a stream checkpoints past them, a
// queue deletes them). Patterns are EventBridge-style: nested objects of
// fields whose leaves are arrays of allowed values or of the operators
// prefix, suffix, equals-ignore-case, anything-but, exists and numeric.
// An operator the runner does not know is an error naming it.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Filters are a mapping's patterns; none means every record is sent.
type Filters []map[string]any

func parseFilters(v any) (Filters, error) {
	fc, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("FilterCriteria %v", v)
	}
	var out Filters
	for k, fl := range fc {
		if k != "Filters" {
			return nil, fmt.Errorf("FilterCriteria.%s is not understood by the cloud runner", k)
		}
		for _, f := range list(fl) {
			fm, _ := f.(map[string]any)
			src, ok := fm["Pattern"].(string)
			if !ok || len(fm) != 1 {
				return nil, fmt.Errorf("FilterCriteria.Filters[]: %v is not {\"Pattern\": \"...\"}", f)
			}
			var p map[string]any
			if err := json.Unmarshal([]byte(src), &p); err != nil {
				return nil, fmt.Errorf("FilterCriteria pattern %s: %w", src, err)
			}
			if err := checkPattern(p); err != nil {
				return nil, fmt.Errorf("FilterCriteria pattern %s: %w", src, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

var operators = []string{"prefix", "suffix", "equals-ignore-case", "anything-but", "exists", "numeric"}

func checkPattern(p map[string]any) error {
	for k, v := range p {
		switch x := v.(type) {
		case map[string]any:
			if err := checkPattern(x); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					for op := range m {
						if !slices.Contains(operators, op) {
							return fmt.Errorf("%s: operator %q is not played by the cloud runner", k, op)
						}
					}
				}
			}
		default:
			return fmt.Errorf("%s: %v is neither an object nor an array of values", k, v)
		}
	}
	return nil
}

// Match reports whether doc (a record as JSON) passes the filters.
func (fs Filters) Match(doc map[string]any) bool {
	if len(fs) == 0 {
		return true
	}
	for _, p := range fs {
		if matchObject(p, doc) {
			return true
		}
	}
	return false
}

func matchObject(p, doc map[string]any) bool {
	for k, pv := range p {
		v, present := doc[k]
		switch x := pv.(type) {
		case map[string]any:
			m, ok := v.(map[string]any)
			if !ok || !matchObject(x, m) {
				return false
			}
		case []any:
			if !matchLeaf(x, v, present) {
				return false
			}
		}
	}
	return true
}

// matchLeaf: any of the allowed values or operators matches the value (or,
// for an array value, one of its elements).
func matchLeaf(allowed []any, v any, present bool) bool {
	values := []any{v}
	if arr, ok := v.([]any); ok {
		values = arr
	}
	for _, a := range allowed {
		op, isOp := a.(map[string]any)
		if isOp {
			if e, ok := op["exists"].(bool); ok {
				if e == present {
					return true
				}
				continue
			}
		}
		if !present {
			continue
		}
		for _, val := range values {
			if isOp && matchOp(op, val) || !isOp && a == val {
				return true
			}
		}
	}
	return false
}

func matchOp(op map[string]any, v any) bool {
	s, isStr := v.(string)
	for name, arg := range op {
		switch name {
		case "prefix":
			p, _ := arg.(string)
			return isStr && strings.HasPrefix(s, p)
		case "suffix":
			p, _ := arg.(string)
			return isStr && strings.HasSuffix(s, p)
		case "equals-ignore-case":
			p, _ := arg.(string)
			return isStr && strings.EqualFold(s, p)
		case "anything-but":
			if l, ok := arg.([]any); ok {
				return !slices.Contains(l, v)
			}
			if m, ok := arg.(map[string]any); ok {
				return !matchOp(m, v)
			}
			return arg != v
		case "numeric":
			n, ok := v.(float64)
			if !ok {
				return false
			}
			l, _ := arg.([]any)
			for i := 0; i+1 < len(l); i += 2 {
				bound, _ := l[i+1].(float64)
				var pass bool
				switch l[i] {
				case "<":
					pass = n < bound
				case "<=":
					pass = n <= bound
				case ">":
					pass = n > bound
				case ">=":
					pass = n >= bound
				case "=":
					pass = n == bound
				}
				if !pass {
					return false
				}
			}
			return true
		}
	}
	return false
}

// asDoc turns a record into the document filters see: its JSON, with an
// SQS body that is a JSON object parsed (Lambda filters on its fields).
func asDoc(record any) map[string]any {
	b, _ := json.Marshal(record)
	var doc map[string]any
	_ = json.Unmarshal(b, &doc)
	if body, ok := doc["body"].(string); ok {
		var parsed map[string]any
		if json.Unmarshal([]byte(body), &parsed) == nil {
			doc["body"] = parsed
		}
	}
	return doc
}
