package apitest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/moku/sellerapi/shared/openapi"
)

// Contract checks requests and responses against the OpenAPI document the
// server publishes at /openapi.json, with an OpenAPI 3.1 validator: every
// response's status must be documented for its operation, with the
// documented content type, required headers and body schema; a request the
// document forbids must not succeed.
type Contract struct {
	v validator.Validator
	// methods lists each documented path template's methods, for 405.
	paths map[string][]string
}

// loadContract builds the validator once per test binary: the document
// never changes while the binary runs, and building it takes a while.
var loadContract = sync.OnceValues(func() (*Contract, error) {
	return NewContract(openapi.Raw())
})

// NewContract builds a checker for an OpenAPI document.
func NewContract(doc []byte) (*Contract, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("contract: parse: %w", err)
	}
	v, errs := validator.NewValidator(d, config.WithFormatAssertions(), config.WithContentAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("contract: build: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("contract: the document is not valid OpenAPI: %s", describe(verrs))
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("contract: model: %w", err)
	}
	paths := map[string][]string{}
	for p, item := range m.Model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			paths[p] = append(paths[p], strings.ToUpper(method))
		}
	}
	return &Contract{v: v, paths: paths}, nil
}

// Exchange is one request and its response, both read whole.
type Exchange struct {
	Request      *http.Request
	RequestBody  []byte
	Status       int
	Header       http.Header
	ResponseBody []byte
}

// Check returns what in the exchange disagrees with the document; nil
// when it agrees. A request for a path the document does not list is not
// checked (tests of unknown paths are about the router).
func (c *Contract) Check(x Exchange) error {
	req := x.Request.Clone(x.Request.Context())
	if x.Status == http.StatusMethodNotAllowed {
		// A wrong method has no operation of its own: its answer must be
		// what the path's documented operations say a 405 is.
		methods := c.methodsFor(req)
		if methods == nil {
			return nil
		}
		req.Method = methods[0]
		x.RequestBody = nil
	}
	res := &http.Response{StatusCode: x.Status, Header: x.Header, Body: io.NopCloser(bytes.NewReader(x.ResponseBody)), Request: req}
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	var problems []string
	if ok, errs := c.v.ValidateHttpResponse(req, res); !ok {
		if pathMissing(errs) {
			return nil
		}
		problems = append(problems, "response: "+describe(errs))
	}
	if x.Status < 400 && x.Status != http.StatusMethodNotAllowed {
		req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
		if ok, errs := c.v.ValidateHttpRequestSync(req); !ok {
			problems = append(problems, fmt.Sprintf("the server answered %d to a request the document forbids: %s", x.Status, describe(errs)))
		}
	}
	if problems == nil {
		return nil
	}
	return fmt.Errorf("%s %s → %d breaks the OpenAPI document:\n  %s\n  response body: %.600s", x.Request.Method, x.Request.URL.RequestURI(), x.Status, strings.Join(problems, "\n  "), x.ResponseBody)
}

// methodsFor returns the documented methods of the path the request names.
func (c *Contract) methodsFor(r *http.Request) []string {
	path := strings.TrimPrefix(r.URL.Path, "/v1")
	for tmpl, methods := range c.paths {
		if matchTemplate(tmpl, path) {
			return methods
		}
	}
	return nil
}

func matchTemplate(tmpl, path string) bool {
	ts, ps := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i := range ts {
		if strings.HasPrefix(ts[i], "{") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if ts[i] != ps[i] {
			return false
		}
	}
	return true
}

func pathMissing(errs []*verrors.ValidationError) bool {
	for _, e := range errs {
		if e.ValidationType == "path" && e.ValidationSubType == "missing" {
			return true
		}
	}
	return false
}

func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
		for _, f := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s at %s]", f.Reason, f.FieldPath)
		}
	}
	return b.String()
}

// checked serves h and checks each exchange against the contract,
// failing t on any disagreement.
func checked(t testing.TB, c *Contract, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The body is copied as the handler reads it, never ahead of it:
		// tests check what the server reads (nothing before authorization,
		// nothing past a limit).
		// A shallow copy carries it: the server must still see its own body
		// (an unread Expect: 100-continue body is never asked for).
		tee := &teeBody{ReadCloser: r.Body}
		r = r.WithContext(r.Context())
		r.Body = tee
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		x := Exchange{Request: r, RequestBody: tee.buf.Bytes(), Status: rec.status, Header: w.Header().Clone(), ResponseBody: rec.body.Bytes()}
		if tee.over || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			x.RequestBody = nil // only JSON bodies are checked, and only whole
		}
		if err := c.Check(x); err != nil {
			t.Error(err)
		}
	})
}

// teeBody keeps a copy of what is read, up to a bound.
type teeBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	over bool
}

const teeLimit = 4 << 20

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if !t.over {
		if t.buf.Len()+n > teeLimit {
			t.over = true
			t.buf.Reset()
		} else {
			t.buf.Write(p[:n])
		}
	}
	return n, err
}

// recorder writes through to the client and keeps a copy.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
