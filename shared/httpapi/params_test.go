package httpapi

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/openapi"
)

// GoodParam is a value the document allows for p: the parameters whose
// schema sets a pattern are named here, and the test fails on a pattern
// it has no value for. (Exported for the HTTP walk of params_http_test.go.)
func GoodParam(t *testing.T, p openapi.Parameter) string {
	t.Helper()
	v := "x"
	switch {
	case p.Integer && p.Minimum != nil:
		v = strconv.FormatInt(*p.Minimum, 10)
	case p.Integer:
		v = "1"
	case p.Enum != nil:
		v = p.Enum[0]
	case p.Name == "sha256":
		v = strings.Repeat("a", 64)
	case p.Name == "file":
		v = strings.Repeat("a", 64) + ".webp"
	case p.Name == "connection_id":
		v = "conn_x"
	case p.Name == "type":
		v = "product.created"
	case p.Name == "after", p.Name == "event_id" && p.Pattern != "":
		v = "evt_" + strings.Repeat("0", 26)
	}
	if p.Pattern != "" && !regexp.MustCompile(p.Pattern).MatchString(v) {
		t.Fatalf("%s: no value matching %s: add one to goodParam", p.Name, p.Pattern)
	}
	return v
}

// TestParamChecksAllowTheLimits: a value at each bound the document sets
// passes the compiled check, so the walk above refuses values for being
// past the limit, not for being there.
func TestParamChecksAllowTheLimits(t *testing.T) {
	checks, err := compileParams(openapi.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for op, pc := range checks {
		for _, c := range pc.params {
			good := GoodParam(t, c.Parameter)
			values := []string{good}
			if c.MaxLength > 0 && c.Pattern == "" {
				values = append(values, good+strings.Repeat("é", c.MaxLength-len(good))) // characters, not bytes
			}
			if c.MinLength > 0 && c.Pattern == "" {
				values = append(values, strings.Repeat("m", c.MinLength))
			}
			if c.Integer && c.Maximum != nil {
				values = append(values, strconv.FormatInt(*c.Maximum, 10))
			}
			for _, e := range c.Enum {
				values = append(values, e)
			}
			if c.pattern != nil {
				if _, err := c.pattern(); err != nil {
					t.Errorf("%s %s: the pattern does not compile: %v", op, c.Name, err)
				}
			}
			for _, v := range values {
				n++
				if err := c.check(v); err != nil {
					t.Errorf("%s %s: %.40q refused: %v", op, c.Name, v, err)
				}
			}
		}
	}
	if n < 300 {
		t.Fatalf("only %d values checked", n)
	}
}

// FuzzParamChecks drives the document's parameter checks with client
// values: nothing panics, a value accepted is within every bound its
// schema sets, and a refusal is a 400 naming the parameter.
func FuzzParamChecks(f *testing.F) {
	for _, seed := range []string{"", "x", "conn_x", "not a conn id!", "0", "100", "101", "-1", "1e2", " 1", "open", "OPEN",
		strings.Repeat("a", 64), strings.Repeat("a", 64) + ".webp", strings.Repeat("é", 161), "\xff\xfe", strings.Repeat("c", 1001)} {
		f.Add(seed)
	}
	checks, err := compileParams(openapi.Parameters())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for op, pc := range checks {
			for _, c := range pc.params {
				err := c.check(v)
				if err != nil {
					e := errs.As(err)
					if StatusOf(e.Kind) != http.StatusBadRequest || !strings.HasPrefix(e.Detail, c.Name+": ") {
						t.Fatalf("%s %s: %q refused with %v", op, c.Name, v, err)
					}
					continue
				}
				n := utf8.RuneCountInString(v)
				switch {
				case c.Integer:
					i, perr := strconv.ParseInt(v, 10, 64)
					if perr != nil || c.Minimum != nil && i < *c.Minimum || c.Maximum != nil && i > *c.Maximum {
						t.Fatalf("%s %s: %q accepted as an integer", op, c.Name, v)
					}
				case !utf8.ValidString(v), n < c.MinLength, c.MaxLength > 0 && n > c.MaxLength,
					c.pattern != nil && !regexp.MustCompile(c.Pattern).MatchString(v), c.Enum != nil && !slices.Contains(c.Enum, v):
					t.Fatalf("%s %s: %q accepted", op, c.Name, v)
				}
			}
		}
	})
}
