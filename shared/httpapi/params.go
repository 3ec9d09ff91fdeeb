package httpapi

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/openapi"
)

// paramChecks is what the OpenAPI document allows of a route's path and
// query parameters (openapi.Parameters), compiled once when the server is
// built and checked for every request after its admission and before its
// handler: a value the document refuses is answered 400 whatever the
// handler would make of it, on every route alike.
type paramChecks struct {
	params []paramCheck
	// query names the query parameters the operation declares; a list
	// route refuses any other (PageParams).
	query map[string]bool
}

type paramCheck struct {
	openapi.Parameter
	// pattern compiles the parameter's pattern on first use; nil for none.
	pattern func() (*regexp.Regexp, error)
	// code is the catalog code of a refusal: the parameter's x-error-code
	// (INVALID_CURSOR for the page cursor, as its decoder answers),
	// INVALID_PARAMETER by default.
	code errs.Code
}

// compileParams compiles the checks of each operation of table. A pattern
// is compiled only when a request first needs it, once for all the
// parameters that share it: compiling (even parsing) the connection id's
// bounded repetition costs about a millisecond, which a Lambda's cold
// start would pay for routes it may never serve. TestParamChecksAllowTheLimits
// compiles every pattern of the document.
func compileParams(table map[string][]openapi.Parameter) (map[string]*paramChecks, error) {
	patterns := map[string]func() (*regexp.Regexp, error){}
	out := make(map[string]*paramChecks, len(table))
	for op, params := range table {
		pc := &paramChecks{query: map[string]bool{}}
		for _, p := range params {
			c := paramCheck{Parameter: p, code: errs.CodeInvalidParameter}
			if p.Code != "" {
				c.code = errs.Code(p.Code)
				if c.code.Kind() != errs.Invalid {
					return nil, fmt.Errorf("httpapi: %s parameter %s: x-error-code %s is not a 400 of the catalog", op, p.Name, p.Code)
				}
			}
			if p.Pattern != "" {
				re, ok := patterns[p.Pattern]
				if !ok {
					re = sync.OnceValues(func() (*regexp.Regexp, error) { return regexp.Compile(p.Pattern) })
					patterns[p.Pattern] = re
				}
				c.pattern = re
			}
			if p.In == "query" {
				pc.query[p.Name] = true
			}
			pc.params = append(pc.params, c)
		}
		out[op] = pc
	}
	return out, nil
}

// checkParams refuses the first path or query parameter of the request
// that the document does not allow, naming it. The path's vendor_id is not
// among them: admission has already authorized it (404 when not granted).
func (c *Call) checkParams() error {
	pc := c.Route.params
	if pc == nil {
		return nil
	}
	var q map[string][]string
	for _, p := range pc.params {
		var v string
		switch p.In {
		case "path":
			if p.Name == "vendor_id" {
				continue
			}
			v = c.R.PathValue(p.Name)
		case "query":
			if q == nil {
				q = c.R.URL.Query()
			}
			vs, ok := q[p.Name]
			if !ok {
				if p.Required {
					return errs.Ef(p.code, "%s: required", p.Name)
				}
				continue
			}
			if len(vs) > 1 {
				return errs.Ef(p.code, "%s: give one value, not %d", p.Name, len(vs))
			}
			v = vs[0]
		}
		if err := p.check(v); err != nil {
			return err
		}
	}
	return nil
}

// check refuses v unless the parameter's schema allows it.
func (p paramCheck) check(v string) error {
	if p.Integer {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || p.Minimum != nil && n < *p.Minimum || p.Maximum != nil && n > *p.Maximum {
			return errs.Ef(p.code, "%s: must be an integer%s", p.Name, bounds(p.Minimum, p.Maximum))
		}
		return nil
	}
	if !utf8.ValidString(v) {
		return errs.Ef(p.code, "%s: must be UTF-8 text", p.Name)
	}
	if p.Enum != nil {
		for _, e := range p.Enum {
			if v == e {
				return nil
			}
		}
		if len(p.Enum) > 6 {
			return errs.Ef(p.code, "%s: %.64q is not one of its %d values (GET /openapi.json lists them)", p.Name, v, len(p.Enum))
		}
		return errs.Ef(p.code, "%s: must be %s", p.Name, oneOf(p.Enum))
	}
	n := utf8.RuneCountInString(v)
	switch {
	case n == 0 && p.MinLength > 0:
		return errs.Ef(p.code, "%s: must not be empty; leave the parameter out instead", p.Name)
	case n < p.MinLength:
		return errs.Ef(p.code, "%s: must be at least %d characters, not %d", p.Name, p.MinLength, n)
	case p.MaxLength > 0 && n > p.MaxLength:
		return errs.Ef(p.code, "%s: must be at most %d characters, not %d", p.Name, p.MaxLength, n)
	case p.pattern != nil && !p.matches(v):
		if p.Description != "" {
			return errs.Ef(p.code, "%s: must match %s (%s)", p.Name, p.Pattern, strings.TrimSuffix(p.Description, "."))
		}
		return errs.Ef(p.code, "%s: must match %s", p.Name, p.Pattern)
	}
	return nil
}

// matches reports whether v matches the parameter's pattern; a pattern
// that does not compile matches nothing (and fails the tests).
func (p paramCheck) matches(v string) bool {
	re, err := p.pattern()
	return err == nil && re.MatchString(v)
}

// bounds describes an integer's range: " from 1 to 100".
func bounds(lo, hi *int64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf(" from %d to %d", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf(" of at least %d", *lo)
	case hi != nil:
		return fmt.Sprintf(" of at most %d", *hi)
	}
	return ""
}

// oneOf lists allowed values: "a, b or c".
func oneOf(vs []string) string {
	if len(vs) == 1 {
		return vs[0]
	}
	return strings.Join(vs[:len(vs)-1], ", ") + " or " + vs[len(vs)-1]
}
