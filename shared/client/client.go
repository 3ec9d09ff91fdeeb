// Package client is a Go client of the Seller Platform API v1 for sellers
// and channel connectors. Its types (types.gen.go) are generated from
// shared/openapi/openapi.json by shared/openapi/gogen (no maintained Go
// generator reads the document's OpenAPI 3.1 schemas, with their
// type-discriminated oneOfs, cleanly), so the contract and the client
// cannot drift; its tests run it against apitest, which checks every
// exchange against the same document, and decode every answer strictly.
//
// What it does for a caller: writes that take an Idempotency-Key get a
// fresh one per call (the same across that call's retries) unless the
// context carries one (WithIdempotencyKey); 429 and 503 answers are
// retried after their Retry-After; lists are iterated across cursor pages;
// webhook deliveries are verified and decoded (VerifyWebhook).
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

// New returns a client of the API at baseURL (ending in /v1) with token
// (a personal access token mkpat_..., or a store plugin's mkdsc_...).
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{base: baseURL, token: token, hc: http.DefaultClient, maxRetries: 3, maxWait: time.Minute, sleep: clock.Sleep}
	for _, o := range opts {
		o(c)
	}
	return c
}

type keyCtx struct{}

// WithIdempotencyKey makes the next write made with ctx carry key, so a
// caller that retries a whole operation later (after a crash, say) gets
// the original answer instead of a second write.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, keyCtx{}, key)
}

func idempotencyKey(ctx context.Context) string {
	if k, ok := ctx.Value(keyCtx{}).(string); ok && k != "" {
		return k
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return "go-client-" + hex.EncodeToString(b[:])
}

// Error is a problem+json answer.
type Error struct {
	Problem
	// RetryAfter is the wait the server asked for (429 and 503).
	RetryAfter time.Duration `json:"-"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%d %s: %s (request %s)", e.Status, e.Code, e.Detail, e.RequestID)
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
	Header   http.Header
}

// call sends one operation and decodes {"data": ...} into out.
type call struct {
	method string
	path   string
	query  url.Values
	body   any
	// idempotent writes carry an Idempotency-Key.
	idempotent bool
	// token overrides the client's credential ("-" sends none).
	token string
	// whole decodes the whole body into out (lists: data and page).
	whole bool
}

func (c *Client) do(ctx context.Context, r call, out any) (*Response, error) {
	var payload []byte
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("client: encode %s %s: %w", r.method, r.path, err)
		}
		payload = b
	}
	key := ""
	if r.idempotent {
		key = idempotencyKey(ctx)
	}
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, r.method, u, bytes.NewReader(payload))
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
		if payload == nil {
			req.Body, req.ContentLength = http.NoBody, 0
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
		switch tok := r.token; {
		case tok == "-":
		case tok != "":
			req.Header.Set("Authorization", "Bearer "+tok)
		case c.token != "":
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		req.Header.Set("Accept", "application/json")
		res, err := c.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: %w", r.method, r.path, err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("client: %s %s: read: %w", r.method, r.path, err)
		}
		meta := &Response{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"), Replayed: res.Header.Get("Idempotent-Replayed") == "true", Header: res.Header}
		if res.StatusCode >= 400 {
			e := &Error{Problem: Problem{Status: int64(res.StatusCode)}}
			if json.Unmarshal(b, e) != nil || e.Code == "" {
				e.Code, e.Detail = ErrorCode(http.StatusText(res.StatusCode)), string(b)
			}
			if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
				e.RetryAfter = time.Duration(s) * time.Second
			}
			retryable := res.StatusCode == http.StatusTooManyRequests || res.StatusCode == http.StatusServiceUnavailable
			if !retryable || attempt >= c.maxRetries || e.RetryAfter > c.maxWait {
				return meta, e
			}
			wait := e.RetryAfter
			if wait == 0 {
				wait = time.Second
			}
			if err := c.sleep(ctx, wait); err != nil {
				return meta, e
			}
			continue
		}
		if out != nil {
			var target any = out
			if !r.whole {
				target = &struct {
					Data any `json:"data"`
				}{Data: out}
			}
			if err := json.Unmarshal(b, target); err != nil {
				return meta, fmt.Errorf("client: %s %s: decode: %w", r.method, r.path, err)
			}
		}
		return meta, nil
	}
}

// fetch makes one call and decodes its data into a T.
func fetch[T any](ctx context.Context, c *Client, r call) (T, error) {
	out, _, err := fetchResponse[T](ctx, c, r)
	return out, err
}

// fetchResponse is fetch with what the call returned besides its data.
func fetchResponse[T any](ctx context.Context, c *Client, r call) (T, *Response, error) {
	var out T
	res, err := c.do(ctx, r, &out)
	return out, res, err
}

// page is a list answer.
type page[T any] struct {
	Data []T  `json:"data"`
	Page Page `json:"page"`
}

// list iterates every item of a list operation across its pages; an error
// ends the iteration.
func list[T any](ctx context.Context, c *Client, path string, q url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		q := cloneValues(q)
		for {
			var p page[T]
			if err := c.getPage(ctx, path, q, &p); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range p.Data {
				if !yield(it, nil) {
					return
				}
			}
			if p.Page.NextCursor == nil {
				return
			}
			q.Set("page_after", *p.Page.NextCursor)
		}
	}
}

// getPage reads one page, data and cursor.
func (c *Client) getPage(ctx context.Context, path string, q url.Values, out any) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: path, query: q, whole: true}, out)
	return err
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
