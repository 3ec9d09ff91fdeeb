// Package fields reads JSON request objects field by field, so that every
// rejection names the field and the rule it broke ("variations[2].price:
// must be at most 1000000000"). It knows JSON types and generic limits;
// domain rules stay in the domain packages.
package fields

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/errs"
)

// Object is a JSON object being read. The first error sticks; later reads
// are skipped, so callers check Err once at the end.
type Object struct {
	path   string
	fields map[string]json.RawMessage
	used   map[string]bool
	err    *errs.Error
}

// Parse reads a JSON object (already syntax-checked) at path ("" for the body).
func Parse(b []byte, path string) (*Object, error) {
	o := &Object{path: path, used: map[string]bool{}}
	if err := json.Unmarshal(b, &o.fields); err != nil || o.fields == nil {
		return nil, errs.Ef(errs.CodeInvalidRequest, "%s: must be an object", or(path, "body"))
	}
	return o, nil
}

// ParseVersion reads a body that holds only the version a change expects,
// {"expected_version": n}: the transitions of every resource that has one.
func ParseVersion(body []byte) (int64, error) {
	o, err := Parse(body, "")
	if err != nil {
		return 0, err
	}
	v := o.Int("expected_version", Required, 0, math.MaxInt64)
	return v, o.Err()
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Name is the full path of a field of o.
func (o *Object) Name(field string) string {
	if o.path == "" {
		return field
	}
	return o.path + "." + field
}

// Fail records an error about field, unless one is recorded already.
func (o *Object) Fail(field, format string, args ...any) {
	if o.err == nil {
		o.err = errs.Ef(errs.CodeInvalidRequest, "%s: %s", o.Name(field), fmt.Sprintf(format, args...))
	}
}

// Err is the first error, after checking that no unknown field was sent.
func (o *Object) Err() error {
	if o.err != nil {
		return o.err
	}
	var unknown []string
	for k := range o.fields {
		if !o.used[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return errs.Ef(errs.CodeInvalidRequest, "%s: unknown property; it is not accepted here", o.Name(unknown[0]))
	}
	return nil
}

// failed reports whether an error is recorded.
func (o *Object) failed() bool { return o.err != nil }

// raw returns a field's JSON and whether it was sent; null counts as sent.
func (o *Object) raw(field string) (json.RawMessage, bool) {
	o.used[field] = true
	v, ok := o.fields[field]
	return v, ok
}

// Raw returns a field's JSON and marks it read; nil when not sent.
func (o *Object) Raw(field string) json.RawMessage {
	v, _ := o.raw(field)
	return v
}

// Peek returns a field's JSON without marking it read.
func (o *Object) Peek(field string) json.RawMessage { return o.fields[field] }

// Time reads an RFC 3339 date-time field; nil when absent or null.
func (o *Object) Time(field string, p Presence) *time.Time {
	s, ok := o.StringPtr(field, p, StringRule{})
	if !ok || s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		o.Fail(field, "must be an RFC 3339 date-time")
		return nil
	}
	t = t.UTC()
	return &t
}

// Has reports whether field was sent (possibly as null).
func (o *Object) Has(field string) bool {
	_, ok := o.fields[field]
	return ok
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// Presence says whether a field must be sent and whether null is allowed.
type Presence int

const (
	Required         Presence = iota // must be sent, not null
	Optional                         // may be omitted, not null
	OptionalNullable                 // may be omitted or null
	RequiredNullable                 // must be sent, may be null
)

// present handles presence; ok is false when there is no value to read.
func (o *Object) present(field string, p Presence) (json.RawMessage, bool) {
	if o.failed() {
		o.used[field] = true
		return nil, false
	}
	v, sent := o.raw(field)
	if !sent {
		if p == Required || p == RequiredNullable {
			o.Fail(field, "is required")
		}
		return nil, false
	}
	if isNull(v) {
		if p == Required || p == Optional {
			o.Fail(field, "must not be null")
		}
		return nil, false
	}
	return v, true
}

// StringRule constrains a string.
type StringRule struct {
	Min, Max int // in characters (code points); Max 0 means no limit
	MaxBytes int // 0 means no limit
	// SingleLine refuses line breaks; NoComma refuses commas.
	SingleLine, NoComma bool
	Pattern             *regexp.Regexp
	PatternText         string // how the pattern is described in errors
	OneOf               []string
	URI                 bool // absolute http(s) URL
	Trim                bool // trim surrounding space before the checks
}

// checkString applies r to s and returns the reason it fails, or "".
func checkString(s string, r StringRule) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	n := utf8.RuneCountInString(s)
	switch {
	case n < r.Min && r.Min == 1:
		return "must not be empty"
	case n < r.Min:
		return fmt.Sprintf("must be at least %d characters", r.Min)
	case r.Max > 0 && n > r.Max:
		return fmt.Sprintf("must be at most %d characters", r.Max)
	case r.MaxBytes > 0 && len(s) > r.MaxBytes:
		return fmt.Sprintf("must be at most %d bytes of UTF-8", r.MaxBytes)
	case r.SingleLine && strings.ContainsAny(s, "\r\n\u2028\u2029"):
		return "must be a single line"
	case r.NoComma && strings.Contains(s, ","):
		return "must not contain a comma"
	case r.Pattern != nil && !r.Pattern.MatchString(s):
		return "must match " + or(r.PatternText, r.Pattern.String())
	case len(r.OneOf) > 0 && !contains(r.OneOf, s):
		return "must be one of " + strings.Join(r.OneOf, ", ")
	case r.URI && !isURI(s):
		return "must be an absolute http or https URL"
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func isURI(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, " \t\r\n")
}

// String reads a string field; absent or null gives "".
func (o *Object) String(field string, p Presence, r StringRule) string {
	s, _ := o.StringPtr(field, p, r)
	if s == nil {
		return ""
	}
	return *s
}

// StringPtr reads a string field; nil when absent or null.
func (o *Object) StringPtr(field string, p Presence, r StringRule) (*string, bool) {
	v, ok := o.present(field, p)
	if !ok {
		return nil, false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		o.Fail(field, "must be a string")
		return nil, false
	}
	if r.Trim {
		s = strings.TrimSpace(s)
	}
	if why := checkString(s, r); why != "" {
		o.Fail(field, "%s", why)
		return nil, false
	}
	return &s, true
}

// Int reads an integer field within [min, max].
func (o *Object) Int(field string, p Presence, min, max int64) int64 {
	n, _ := o.IntPtr(field, p, min, max)
	if n == nil {
		return 0
	}
	return *n
}

// IntPtr reads an integer field; nil when absent or null.
func (o *Object) IntPtr(field string, p Presence, min, max int64) (*int64, bool) {
	v, ok := o.present(field, p)
	if !ok {
		return nil, false
	}
	if t := bytes.TrimSpace(v); len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		o.Fail(field, "must be an integer")
		return nil, false
	}
	var f json.Number
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&f); err != nil {
		o.Fail(field, "must be an integer")
		return nil, false
	}
	n, err := f.Int64()
	if err != nil {
		// 3.0 is an integer in JSON's eyes; 3.5 and 1e30 are not.
		fl, ferr := f.Float64()
		if ferr != nil || fl != math.Trunc(fl) || fl < math.MinInt64 || fl > math.MaxInt64 {
			o.Fail(field, "must be an integer")
			return nil, false
		}
		n = int64(fl)
	}
	if n < min || n > max {
		o.Fail(field, "must be from %d to %d", min, max)
		return nil, false
	}
	return &n, true
}

// Number reads a number field within [min, max].
func (o *Object) Number(field string, p Presence, min, max float64) float64 {
	v, ok := o.present(field, p)
	if !ok {
		return 0
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		o.Fail(field, "must be a number")
		return 0
	}
	if f < min || f > max || math.IsNaN(f) {
		o.Fail(field, "must be from %g to %g", min, max)
		return 0
	}
	return f
}

// Bool reads a boolean field.
func (o *Object) Bool(field string, p Presence) bool {
	v, ok := o.present(field, p)
	if !ok {
		return false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		o.Fail(field, "must be a boolean")
	}
	return b
}
