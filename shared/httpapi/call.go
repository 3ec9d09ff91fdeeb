package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// Call is one request on its way through a handler.
type Call struct {
	W         http.ResponseWriter
	R         *http.Request
	RequestID string
	Route     Route
	// Principal is set once the request is authenticated with a token.
	Principal auth.Principal
	// Discovery is set once the request is authenticated with a discovery
	// credential.
	Discovery pairing.Principal

	s   *Server
	rec *recorder
	// logAttrs are the attributes every log line of the request carries
	// (its id, then who it acts as); log is the logger with them, made
	// only when something besides the request's own line is logged.
	logAttrs   []slog.Attr
	log        *slog.Logger
	cancel     context.CancelFunc
	start      time.Time
	roundTrips *roundtrip.Counter
	filters    []string
	// tokenID is the id the bearer token names, before it is checked:
	// routes' ReadAhead keys may use it.
	tokenID string
	// view is the request's view of the store (gate.go): its rate gate
	// and what it read ahead. The services the handler calls are bound
	// to it (services.go); nothing finds it through the context.
	view gatedStore
	// receivers is what a write's admission read of its vendor's
	// subscription counts, when hasReceivers: the request's transactions
	// carry it in their context (serve).
	receivers    pipeline.Receivers
	hasReceivers bool
}

// store is the request's view of the store, for the services it calls.
func (c *Call) store() store.Store { return &c.view }

// recorder remembers the status written.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

// finish logs the request.
func (c *Call) finish(ctx context.Context) {
	c.cancel()
	if c.s.deps.Observe != nil {
		read, write := c.roundTrips.Capacity()
		c.s.deps.Observe(Observation{Operation: c.Route.Operation, Status: c.rec.status,
			RoundTrips: c.roundTrips.N(), SequentialRoundTrips: c.roundTrips.Waits(),
			ConsumedCapacity: read + write, ReadUnits: read, WriteUnits: write, Duration: time.Since(c.start)})
	}
	level := slog.LevelInfo
	if c.rec.status >= 500 {
		level = slog.LevelError
	}
	// Typed attributes: the request's line is written for every request.
	// The operation names the method; a request that matched none says it.
	attrs := c.logAttrs
	if c.Route.Operation == "" {
		attrs = append(attrs, slog.String("method", c.R.Method))
	}
	attrs = append(attrs, slog.String("path", c.R.URL.Path), slog.String("operation", c.Route.Operation),
		slog.Int("status", c.rec.status), slog.Float64("duration_ms", float64(time.Since(c.start).Microseconds())/1000),
		slog.Int64("round_trips", c.roundTrips.N()))
	if ns := c.s.deps.Config.MetricsNamespace; ns != "" {
		attrs = c.metrics(attrs, ns)
	}
	c.s.deps.Log.LogAttrs(ctx, level, "request", attrs...)
}

// logWith adds attributes to the request's log lines.
func (c *Call) logWith(attrs ...slog.Attr) {
	c.logAttrs = append(c.logAttrs, attrs...)
	c.log = nil
}

// logger is the request's logger, with its attributes.
func (c *Call) logger() *slog.Logger {
	if c.log == nil {
		c.log = slog.New(c.s.deps.Log.Handler().WithAttrs(c.logAttrs))
	}
	return c.log
}

// JSON writes a success body.
func (c *Call) JSON(ctx context.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.raw(ctx, status, b)
	return nil
}

// raw writes pre-encoded JSON.
func (c *Call) raw(ctx context.Context, status int, b []byte) {
	if err := c.settleRate(); err != nil {
		c.fail(ctx, err)
		return
	}
	h := c.W.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	c.W.WriteHeader(status)
	c.W.Write(b)
	c.W.Write([]byte("\n"))
}

// page writes an HTML page (the API reference).
func (c *Call) page(status int, b []byte) {
	h := c.W.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	c.W.WriteHeader(status)
	c.W.Write(b)
}

// Data writes {"data": v}.
func (c *Call) Data(ctx context.Context, status int, v any) error {
	return c.JSON(ctx, status, envelope{Data: v})
}

// encodedData writes {"data": b} for b already encoded, the bytes Data
// writes for its value.
func (c *Call) encodedData(ctx context.Context, status int, b []byte) {
	out := make([]byte, 0, len(`{"data":}`)+len(b))
	out = append(out, `{"data":`...)
	out = append(out, b...)
	c.raw(ctx, status, append(out, '}'))
}

type envelope struct {
	Data any `json:"data"`
}

// Problem is the error body of the contract.
type Problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Code      string `json:"code"`
	Detail    string `json:"detail"`
	RequestID string `json:"request_id"`
}

// statusOf is the one table from error kinds to HTTP statuses.
var statusOf = map[errs.Kind]int{
	errs.Internal:         http.StatusInternalServerError,
	errs.Invalid:          http.StatusBadRequest,
	errs.Unauthenticated:  http.StatusUnauthorized,
	errs.Forbidden:        http.StatusForbidden,
	errs.NotFound:         http.StatusNotFound,
	errs.MethodNotAllowed: http.StatusMethodNotAllowed,
	errs.Conflict:         http.StatusConflict,
	errs.TooLarge:         http.StatusRequestEntityTooLarge,
	errs.RateLimited:      http.StatusTooManyRequests,
	errs.Unavailable:      http.StatusServiceUnavailable,
}

// StatusOf maps an error kind to its HTTP status.
func StatusOf(k errs.Kind) int { return statusOf[k] }

// fail writes err as problem+json; a refusal of the rate window takes
// precedence over the handler's own error.
func (c *Call) fail(ctx context.Context, err error) {
	if rateErr := c.settleRate(); rateErr != nil {
		err = rateErr
	}
	var tooLarge *store.ItemTooLargeError
	if errors.As(err, &tooLarge) {
		// Both stores refuse the item before writing it, so this is the
		// request's size, not an outage: retrying cannot help.
		err = errs.Ef(errs.CodeRecordTooLarge, "body: the record this request would store is %d bytes; at most %d bytes can be stored "+
			"(the storage item limit, property names and values counted). Nothing was stored; send a smaller record (fewer items, shorter values).",
			tooLarge.Size, tooLarge.Limit)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if e := errs.As(err); e.Kind == errs.Internal || e.Kind == errs.Unavailable {
			err = errs.Unavailablef(err, "the request timed out before its state could be checked")
		}
	}
	e := errs.As(err)
	status := statusOf[e.Kind]
	if e.Kind == errs.Internal || e.Kind == errs.Unavailable {
		c.logger().ErrorContext(ctx, "request failed", "code", e.Code, "error", err)
	}
	h := c.W.Header()
	if e.Kind == errs.Unauthenticated {
		// RFC 6750: no error code when the request carried no bearer token.
		h.Set("WWW-Authenticate", `Bearer realm="moku"`)
		if _, ok := bearer(c.R.Header.Get("Authorization")); ok {
			h.Set("WWW-Authenticate", `Bearer realm="moku", error="invalid_token"`)
		}
	}
	retry := e.RetryAfter
	if retry < 1 && (e.Kind == errs.RateLimited || e.Kind == errs.Unavailable) {
		retry = 1
	}
	if retry > 0 {
		h.Set("Retry-After", itoa(retry))
	}
	if e.Kind != errs.RateLimited {
		// Rate headers accompany successes and 429s only.
		h.Del("RateLimit-Limit")
		h.Del("RateLimit-Remaining")
		h.Del("RateLimit-Reset")
	}
	detail := e.Detail
	if e.Kind == errs.Internal {
		detail = "An unexpected error occurred. Quote the request id when reporting it."
	}
	b, _ := json.Marshal(Problem{
		Type:      c.s.deps.Config.ErrorsURL + "#" + e.Code.Slug(),
		Title:     e.Code.Title(),
		Status:    status,
		Code:      string(e.Code),
		Detail:    detail,
		RequestID: c.RequestID,
	})
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	c.W.WriteHeader(status)
	c.W.Write(b)
	c.W.Write([]byte("\n"))
}

// maxJSONBody bounds JSON request bodies; the largest valid product body is
// far below it.
const maxJSONBody = 1 << 20

// Body reads a JSON object body, at most limit bytes (maxJSONBody when 0).
// It checks the content type, size and syntax; the caller decodes fields.
func (c *Call) Body(limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = maxJSONBody
	}
	mt, _, err := mime.ParseMediaType(c.R.Header.Get("Content-Type"))
	if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) || len(c.R.Header.Values("Content-Type")) > 1 {
		return nil, errs.E(errs.CodeUnsupportedMediaType, "Content-Type: the body must be application/json")
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.W, c.R.Body, limit))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return nil, errs.Ef(errs.CodeBodyTooLarge, "body: larger than %d bytes", limit)
	}
	if err != nil {
		return nil, errs.Wrap(errs.CodeInvalidRequest, "body: could not be read", err)
	}
	if err := checkBody(b); err != nil {
		return nil, err
	}
	return b, nil
}

// checkBody holds a body's bytes to the rules every JSON body keeps:
// valid, strict JSON (CheckJSON), an object.
func checkBody(b []byte) error {
	if !json.Valid(b) {
		return errs.E(errs.CodeInvalidJSON, "body: not valid JSON")
	}
	if err := CheckJSON(b); err != nil {
		return err
	}
	if t := strings.TrimLeft(string(b), " \t\r\n"); !strings.HasPrefix(t, "{") {
		return errs.E(errs.CodeInvalidRequest, "body: must be a JSON object")
	}
	return nil
}
