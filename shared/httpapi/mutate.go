package httpapi

import (
	"context"
	"regexp"

	"github.com/moku/sellerapi/shared/idempotency"
)

// Mutate runs a mutation under the request's Idempotency-Key (checked
// against pattern) and writes its response: the fresh one, or the stored
// original of an exact replay, marked with Idempotent-Replayed: true.
// operation names the operation in the receipt; body is the request body.
func (c *Call) Mutate(operation string, pattern *regexp.Regexp, body []byte, prepare func(context.Context) (idempotency.Mutation, error)) error {
	return c.mutateIn(idempotency.Scope{VendorID: c.Principal.Vendor.ID, TokenID: c.Principal.Token.ID}, operation, pattern, body, prepare)
}

// mutateIn is Mutate for a caller whose receipts are not a token's: sc
// names the vendor and the credential (here a pairing) they belong to.
func (c *Call) mutateIn(sc idempotency.Scope, operation string, pattern *regexp.Regexp, body []byte, prepare func(context.Context) (idempotency.Mutation, error)) error {
	key, err := idempotency.HeaderKey(c.R.Header.Values("Idempotency-Key"), pattern)
	if err != nil {
		return err
	}
	sc.Operation, sc.Key = operation, key
	res, err := c.s.keeper.Run(c.Ctx, sc, idempotency.Fingerprint(operation, c.R.URL.Path, body), prepare)
	if err != nil {
		return err
	}
	if res.Replayed {
		c.W.Header().Set("Idempotent-Replayed", "true")
	}
	c.raw(res.Status, res.Body)
	return nil
}

// Envelope wraps a single resource as {"data": v}, the body mutations store.
func Envelope(v any) any { return envelope{Data: v} }
