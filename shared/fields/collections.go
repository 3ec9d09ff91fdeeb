package fields

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/moku/sellerapi/shared/errs"
)

// ListRule constrains an array of strings.
type ListRule struct {
	Max    int
	Unique bool
	Item   StringRule
}

// array reads an array of at most max items (0: any number) and reports
// whether there is one to read: absent, null or refused gives false.
func (o *Object) array(field string, p Presence, max int) ([]json.RawMessage, bool) {
	v, ok := o.present(field, p)
	if !ok {
		return nil, false
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		o.Fail(field, "must be an array")
		return nil, false
	}
	if max > 0 && len(raw) > max {
		o.Fail(field, "must have at most %d items", max)
		return nil, false
	}
	return raw, true
}

// Strings reads an array of strings; absent or null gives nil.
func (o *Object) Strings(field string, p Presence, r ListRule) []string {
	raw, ok := o.array(field, p, r.Max)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(raw))
	seen := map[string]bool{}
	for i, item := range raw {
		name := fmt.Sprintf("%s[%d]", field, i)
		var s string
		if isNull(item) || json.Unmarshal(item, &s) != nil {
			o.Fail(name, "must be a string")
			return nil
		}
		if why := checkString(s, r.Item); why != "" {
			o.Fail(name, "%s", why)
			return nil
		}
		if r.Unique && seen[s] {
			o.Fail(field, "must not repeat %q", s)
			return nil
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// Objects reads an array of objects; each comes back as an Object whose
// errors carry its index in the path.
func (o *Object) Objects(field string, p Presence, max int) []*Object {
	raw, ok := o.array(field, p, max)
	if !ok {
		return nil
	}
	out := make([]*Object, 0, len(raw))
	for i, item := range raw {
		child, err := Parse(item, fmt.Sprintf("%s[%d]", o.Name(field), i))
		if err != nil {
			o.err = errs.As(err)
			return nil
		}
		out = append(out, child)
	}
	return out
}

// Child adopts the first error of a nested object.
func (o *Object) Child(c *Object) {
	if o.err == nil {
		if err := c.Err(); err != nil {
			o.err = errs.As(err)
		}
	}
}

// Map reads an object whose values are read by each, keyed by name.
func (o *Object) Map(field string, p Presence, maxKeys int, key StringRule) (map[string]json.RawMessage, bool) {
	v, ok := o.present(field, p)
	if !ok {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		o.Fail(field, "must be an object")
		return nil, false
	}
	if maxKeys > 0 && len(m) > maxKeys {
		o.Fail(field, "must have at most %d keys", maxKeys)
		return nil, false
	}
	for k := range m {
		if why := checkString(k, key); why != "" {
			o.Fail(field, "key %q %s", k, why)
			return nil, false
		}
	}
	return m, true
}

// StringMap reads an object of string values.
func (o *Object) StringMap(field string, p Presence, maxKeys int, key, value StringRule) (map[string]string, bool) {
	m, ok := o.Map(field, p, maxKeys, key)
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		var s string
		if isNull(m[k]) || json.Unmarshal(m[k], &s) != nil {
			o.Fail(field, "value of %q must be a string", k)
			return nil, false
		}
		if why := checkString(s, value); why != "" {
			o.Fail(field, "value of %q %s", k, why)
			return nil, false
		}
		out[k] = s
	}
	return out, true
}

// StringListMap reads an object of string arrays.
func (o *Object) StringListMap(field string, p Presence, maxKeys int, key StringRule, value ListRule) (map[string][]string, bool) {
	m, ok := o.Map(field, p, maxKeys, key)
	if !ok {
		return nil, false
	}
	out := make(map[string][]string, len(m))
	for _, k := range sortedKeys(m) {
		var raw []json.RawMessage
		if err := json.Unmarshal(m[k], &raw); err != nil || isNull(m[k]) {
			o.Fail(field, "value of %q must be an array", k)
			return nil, false
		}
		if value.Max > 0 && len(raw) > value.Max {
			o.Fail(field, "value of %q must have at most %d items", k, value.Max)
			return nil, false
		}
		seen := map[string]bool{}
		list := make([]string, 0, len(raw))
		for i, item := range raw {
			var s string
			if isNull(item) || json.Unmarshal(item, &s) != nil {
				o.Fail(field, "value of %q item %d must be a string", k, i)
				return nil, false
			}
			if why := checkString(s, value.Item); why != "" {
				o.Fail(field, "value of %q item %d %s", k, i, why)
				return nil, false
			}
			if value.Unique && seen[s] {
				o.Fail(field, "value of %q must not repeat %q", k, s)
				return nil, false
			}
			seen[s] = true
			list = append(list, s)
		}
		out[k] = list
	}
	return out, true
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
