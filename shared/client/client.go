// Package client is a Go client of the Seller Platform API v1 for sellers
// and channel connectors, generated from shared/openapi/openapi.json by
// shared/openapi/gogen (no maintained Go generator reads the document's
// OpenAPI 3.1 schemas, with their type-discriminated oneOfs, cleanly):
// types.gen.go holds a type per schema, operations.gen.go a method per
// operation (named for its operationId, taking a <Method>Request with a
// field per parameter and the body, returning the answer's data as its
// type) and an All<...> page walker per list. Tests fail when the files
// differ from what the document makes or an operation has no method, and
// run the client against apitest, which checks every exchange against the
// same document.
//
// What it does for a caller: writes that take an Idempotency-Key get a
// fresh one per call (the same across that call's retries) unless the
// request gives one; 429 and 503 answers to requests safe to repeat (GETs
// and keyed writes) are retried after their Retry-After, a bounded number
// of times; lists are walked across cursor pages (iter.Seq2); webhook
// deliveries are verified and decoded (VerifyWebhook).
//
// It is not the service: it imports no domain package, only the shared
// signature scheme that receivers verify with.
package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
)

// Client calls the API with one bearer credential.
type Client struct {
	base       string
	token      string
	hc         *http.Client
	maxRetries int
	maxWait    time.Duration
	sleep      func(context.Context, time.Duration) error
	clock      clock.Clock
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (default http.DefaultClient).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithRetries sets how many times a 429 or 503 is retried (default 3; 0
// turns retries off).
func WithRetries(n int) Option { return func(c *Client) { c.maxRetries = n } }

// WithMaxWait caps one wait before a retry (default one minute): a
// Retry-After longer than that is returned as the error instead.
func WithMaxWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// WithSleep replaces how the client waits before a retry (tests advance a
// fake clock instead of sleeping).
func WithSleep(f func(context.Context, time.Duration) error) Option {
	return func(c *Client) { c.sleep = f }
}

// WithClock sets the clock a Retry-After given as an HTTP date is read
// against (default the system's).
func WithClock(k clock.Clock) Option { return func(c *Client) { c.clock = k } }

// New returns a client of the API at baseURL (ending in /v1) with token
// (a personal access token mkpat_..., or a store plugin's mkdsc_...).
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: strings.TrimSuffix(baseURL, "/"), token: token, hc: http.DefaultClient, maxRetries: 3, maxWait: time.Minute,
		sleep: clock.Sleep, clock: clock.System{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// NewIdempotencyKey returns a fresh Idempotency-Key, as the client makes
// one for a keyed write the caller gives none.
func NewIdempotencyKey() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "go-client-" + hex.EncodeToString(b[:])
}

// Error is a problem+json answer.
type Error struct {
	Problem
	// Op is the operationId of the call.
	Op string `json:"-"`
	// RetryAfter is the wait the server asked for (429 and 503).
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %d %s: %s (request %s)", e.Op, e.Status, e.Code, e.Detail, e.RequestID)
}

// IsCode reports whether err is a problem with code.
func IsCode(err error, code ErrorCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// Response is what a call returned besides its data.
type Response struct {
	Status    int
	RequestID string
	// Replayed is true when a write answered with the stored original of
	// an exact replay (Idempotent-Replayed: true).
	Replayed bool
	// IdempotencyKey is the key the call carried (keyed writes).
	IdempotencyKey string
	// Attempts counts the requests the call sent (1 plus its retries).
	Attempts int
	Header   http.Header
}

// PageOf is one page of a list: its items and the cursor to the next.
type PageOf[T any] struct {
	Data []T  `json:"data"`
	Page Page `json:"page"`
}

// call is one operation as the generated methods describe it.
type call struct {
	op, method string
	// path is the document's template; pathParams pairs each {name} in it
	// with its value.
	path       string
	pathParams []string
	query      url.Values
	// body is sent as JSON; rawBody as it is, with contentType.
	body        any
	rawBody     []byte
	contentType string
	// idempotent writes carry an Idempotency-Key: idempotencyKey, or one
	// made for the call.
	idempotent     bool
	idempotencyKey string
	// anonymous operations are sent without the credential.
	anonymous bool
	// whole decodes the whole JSON body into out (lists: data and page);
	// raw sets out, a *[]byte, to the body as it is; otherwise the body's
	// data is decoded into out.
	whole, raw bool
}

// expand fills the path template, each value escaped as a path segment;
// an empty value is an error (the call would name another resource).
func expand(op, template string, pairs []string) (string, error) {
	path := template
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			return "", fmt.Errorf("client: %s: path parameter %s is empty", op, pairs[i])
		}
		path = strings.Replace(path, "{"+pairs[i]+"}", url.PathEscape(pairs[i+1]), 1)
	}
	return path, nil
}

// retryAfter reads a Retry-After: seconds, or an HTTP date.
func (c *Client) retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(c.clock.Now()); d > 0 {
			return d
		}
	}
	return 0
}

func (c *Client) do(ctx context.Context, r call, out any) (*Response, error) {
	path, err := expand(r.op, r.path, r.pathParams)
	if err != nil {
		return nil, err
	}
	payload, contentType := r.rawBody, r.contentType
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("client: %s: encode: %w", r.op, err)
		}
		payload, contentType = b, "application/json"
	}
	key := ""
	if r.idempotent {
		if key = r.idempotencyKey; key == "" {
			key = NewIdempotencyKey()
		}
	}
	// Only what is safe to send twice is retried: reads, and writes whose
	// key makes a repeat a replay.
	retryable := r.method == http.MethodGet || r.method == http.MethodHead || key != ""
	u := c.base + path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", r.op, err)
		}
		if payload == nil {
			req.Body, req.ContentLength = http.NoBody, 0
		} else {
			req.Header.Set("Content-Type", contentType)
		}
		if !r.anonymous && c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if !r.raw {
			req.Header.Set("Accept", "application/json")
		}
		res, err := c.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("client: %s: %w", r.op, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("client: %s: read: %w", r.op, err)
		}
		meta := &Response{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"), Replayed: res.Header.Get("Idempotent-Replayed") == "true",
			IdempotencyKey: key, Attempts: attempt, Header: res.Header}
		if res.StatusCode >= 400 {
			e := &Error{Problem: Problem{Status: int64(res.StatusCode)}, Op: r.op}
			if json.Unmarshal(b, e) != nil || e.Code == "" {
				e.Code, e.Detail = ErrorCode(http.StatusText(res.StatusCode)), string(b)
			}
			e.RetryAfter = c.retryAfter(res.Header.Get("Retry-After"))
			busy := res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable
			if !busy || !retryable || attempt > c.maxRetries || e.RetryAfter > c.maxWait {
				return meta, e
			}
			wait := e.RetryAfter
			if wait == 0 {
				wait = time.Second
			}
			if err := c.sleep(ctx, wait); err != nil {
				return meta, errors.Join(e, err)
			}
			continue
		}
		switch {
		case out == nil:
		case r.raw:
			*out.(*[]byte) = b
		default:
			var target any = out
			if !r.whole {
				target = &struct {
					Data any `json:"data"`
				}{Data: out}
			}
			if err := json.Unmarshal(b, target); err != nil {
				return meta, fmt.Errorf("client: %s: decode: %w", r.op, err)
			}
		}
		return meta, nil
	}
}

// walk iterates every item of a list across its pages, from after (the
// first page when empty); an error ends the iteration.
func walk[T any](ctx context.Context, after string, page func(context.Context, string) (PageOf[T], error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			p, err := page(ctx, after)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if !yield(it, nil) {
					return
				}
			}
			if p.Page.NextCursor == nil || *p.Page.NextCursor == "" || *p.Page.NextCursor == after {
				return
			}
			after = *p.Page.NextCursor
		}
	}
}
