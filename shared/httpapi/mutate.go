package httpapi

import (
	"context"
	"errors"
	"net/http"
	"regexp"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Mutate runs a mutation under the request's Idempotency-Key (checked
// against pattern) and writes its response: the fresh one, or the stored
// original of an exact replay, marked with Idempotent-Replayed: true.
// operation names the operation in the receipt; body is the request body.
func (c *Call) Mutate(ctx context.Context, operation string, pattern *regexp.Regexp, body []byte, prepare func(context.Context) (idempotency.Mutation, error)) error {
	return c.mutateIn(ctx, idempotency.Scope{VendorID: c.Principal.Vendor.ID, TokenID: c.Principal.Token.ID}, operation, pattern, body, prepare)
}

// mutateIn is Mutate for a caller whose receipts are not a token's: sc
// names the vendor and the credential (here a pairing) they belong to.
func (c *Call) mutateIn(ctx context.Context, sc idempotency.Scope, operation string, pattern *regexp.Regexp, body []byte, prepare func(context.Context) (idempotency.Mutation, error)) error {
	res, err := c.keep(ctx, sc, operation, pattern, body, prepare)
	if err != nil {
		return err
	}
	c.writeKept(ctx, res)
	return nil
}

// keep runs a mutation under the request's Idempotency-Key, as mutateIn
// does, and returns its result without writing it.
func (c *Call) keep(ctx context.Context, sc idempotency.Scope, operation string, pattern *regexp.Regexp, body []byte, prepare func(context.Context) (idempotency.Mutation, error)) (idempotency.Result, error) {
	key, err := idempotency.HeaderKey(c.R.Header.Values("Idempotency-Key"), pattern)
	if err != nil {
		return idempotency.Result{}, err
	}
	sc.Operation, sc.Key = operation, key
	return c.keeper().Run(ids.WithIdempotencyKey(ctx, key), sc, idempotency.Fingerprint(operation, c.R.URL.Path, body), prepare)
}

// writeKept writes a kept mutation's response, marking a replayed original.
func (c *Call) writeKept(ctx context.Context, res idempotency.Result) {
	if res.Replayed {
		c.W.Header().Set("Idempotent-Replayed", "true")
	}
	c.raw(ctx, res.Status, res.Body)
}

// parsed reads the request body, at most limit bytes (0: the default), and
// parses it: the bytes (a receipt fingerprints them) and what they say.
func parsed[T any](c *Call, limit int64, parse func([]byte) (T, error)) ([]byte, T, error) {
	var zero T
	body, err := c.Body(limit)
	if err != nil {
		return nil, zero, err
	}
	v, err := parse(body)
	if err != nil {
		return nil, zero, err
	}
	return body, v, nil
}

// Envelope wraps a single resource as {"data": v}, the body mutations store.
func Envelope(v any) any { return envelope{Data: v} }

// answer adapts a service's Prepare method to a mutation kept under a
// receipt that answers status with {"data": view}.
func answer[V any](status int, prepare func(context.Context) (store.Prepared[V], error)) func(context.Context) (idempotency.Mutation, error) {
	return func(ctx context.Context) (idempotency.Mutation, error) {
		p, err := prepare(ctx)
		if err != nil {
			return idempotency.Mutation{}, err
		}
		return idempotency.Mutation{Ops: p.Ops, Status: status, Body: Envelope(p.View), Explain: p.Explain}, nil
	}
}

// secret marks a mutation whose response carries a secret, so that its
// receipt keeps the response sealed.
func secret(prepare func(context.Context) (idempotency.Mutation, error)) func(context.Context) (idempotency.Mutation, error) {
	return func(ctx context.Context) (idempotency.Mutation, error) {
		m, err := prepare(ctx)
		m.Secret = true
		return m, err
	}
}

// apply writes a versioned change that keeps no receipt (its
// expected_version makes a repeat fail instead of applying twice) and
// answers 200 with it, preparing it again while it loses races it did not
// cause. what names the resource in a 503.
func apply[V any](ctx context.Context, c *Call, st store.Store, what string, prepare func(context.Context) (store.Prepared[V], error)) error {
	for attempt := 1; ; attempt++ {
		p, err := prepare(ctx)
		if err != nil {
			return err
		}
		err = st.Transact(ctx, p.Ops...)
		if err == nil {
			return c.Data(ctx, http.StatusOK, p.View)
		}
		ce, ok := store.AsCondition(err)
		if !ok {
			var e *errs.Error
			if errors.As(err, &e) {
				return err
			}
			return errs.Unavailablef(err, "the %s could not be stored", what)
		}
		if err := p.Explain(ce); !errors.Is(err, idempotency.ErrRetry) || attempt >= idempotency.MaxAttempts {
			return err
		}
		if err := idempotency.Pause(ctx, attempt); err != nil {
			return errs.Unavailablef(err, "the %s could not be stored", what)
		}
	}
}

// applyTransition is the handler of a lifecycle action on the resource the
// path parameter param names: the body's expected_version, then the
// service's PrepareTransition applied (apply).
func applyTransition[S, V any](of func(*Call) S, what, param, action string, prepare func(svc S, ctx context.Context, vendorID, id, action string, expected int64) (store.Prepared[V], error)) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		_, expected, err := parsed(c, 0, fields.ParseVersion)
		if err != nil {
			return err
		}
		svc := of(c)
		return apply(ctx, c, c.store(), what, func(ctx context.Context) (store.Prepared[V], error) {
			return prepare(svc, ctx, c.Principal.Vendor.ID, c.R.PathValue(param), action, expected)
		})
	}
}
