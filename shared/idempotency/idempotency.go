// Package idempotency is the one mechanism behind every Idempotency-Key: a
// receipt holding the request's fingerprint and the original response is
// written in the same transaction as the mutation, so the effect and its
// receipt exist together or not at all. An exact replay finds the receipt
// and gets the original response; the same key with other input is 409.
//
// Receipts are kept for Retention and are scoped to the token, the
// operation and the key. Only successful mutations leave a receipt: a
// rejected request changed nothing, so retrying it re-evaluates it.
package idempotency

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// Retention is how long a receipt answers replays: the contract's 30 days
// plus a day of margin for clients at the edge.
const Retention = 31 * 24 * time.Hour

// Key patterns of the contract.
var (
	// ProductKeyPattern: letters, digits, _ and -, 8..128 chars.
	ProductKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{8,128}$`)
	// ConnectionKeyPattern also allows . and :.
	ConnectionKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{8,128}$`)
)

// HeaderKey reads and checks the Idempotency-Key of a request from the
// header's values (http.Header.Values): the header is sent once, or the
// request is refused, since two keys would leave which one guards the
// effect to the order a proxy kept them in.
func HeaderKey(values []string, pattern *regexp.Regexp) (string, error) {
	if len(values) > 1 {
		return "", errs.Ef(errs.CodeIdempotencyKeyInvalid, "Idempotency-Key: send the header once; it was sent %d times", len(values))
	}
	value := ""
	if len(values) == 1 {
		value = values[0]
	}
	if value == "" {
		return "", errs.E(errs.CodeIdempotencyKeyMissing, "Idempotency-Key: the header is required for this operation")
	}
	if !pattern.MatchString(value) {
		return "", errs.Ef(errs.CodeIdempotencyKeyInvalid, "Idempotency-Key: must match %s", pattern.String())
	}
	return value, nil
}

// Scope identifies one receipt.
type Scope struct {
	VendorID  string
	TokenID   string
	Operation string
	Key       string
}

// ReceiptKey is the key of the receipt of sc, which a request may read
// ahead of its mutation (with its credentials) to answer a replay at once.
func ReceiptKey(sc Scope) store.Key { return sc.storeKey() }

func (s Scope) storeKey() store.Key {
	return datamodel.ReceiptKey(s.VendorID, s.TokenID, s.Operation, s.Key)
}

// Fingerprint digests the input of a request: the operation, its target
// and its body. JSON bodies are canonicalised first, so formatting and key
// order do not make an exact replay look like new work.
func Fingerprint(operation, target string, body []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n", operation, target)
	// Numbers stay as written: decoded as float64, integers beyond 2^53
	// that differ would share a fingerprint (and a reused key replay).
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&v) == nil && dec.Decode(new(any)) == io.EOF {
		canon, _ := json.Marshal(v)
		h.Write(canon)
	} else {
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Receipt is the stored outcome of a mutation.
type Receipt struct {
	Fingerprint string          `json:"fingerprint"`
	Status      int             `json:"status"`
	Body        json.RawMessage `json:"body"`
	// SealedBody replaces Body when the response carries a secret
	// (Mutation.Secret).
	SealedBody *envelope.Sealed `json:"sealed_body,omitempty"`
	CreatedAt  time.Time        `json:"created_at"`
}

// Result is what Run returns: the response to send.
type Result struct {
	Status int
	Body   json.RawMessage
	// Replayed is true when the response is the stored original.
	Replayed bool
}

// Mutation is a prepared change: the operations to apply atomically and the
// response to give once they are applied.
type Mutation struct {
	Ops    []store.Op
	Status int
	Body   any
	// Explain, when set, explains a failed condition of Ops (a concurrent
	// change won the race) as a domain error; otherwise it is 409 CONFLICT.
	Explain func(*store.ConditionError) error
	// Secret says the response carries a secret (a new webhook signing
	// secret): its receipt keeps it sealed with Keeper.Secrets.
	Secret bool
}

// Keeper runs mutations under receipts.
type Keeper struct {
	Store store.Store
	Clock clock.Clock
	// Secrets seals the responses of mutations that carry a secret.
	Secrets *envelope.Box
}

// receiptAAD binds a sealed response to its receipt.
func receiptAAD(k store.Key) []byte { return []byte(k.PK + "/" + k.SK) }

// Run prepares the mutation with prepare and applies it with its receipt.
// When prepare fails, or the transaction's conditions fail, the receipt is
// read: a matching one answers with the original response, a different one
// is 409 IDEMPOTENCY_KEY_REUSED, and none returns the original error. The
// happy path costs no round trip beyond the mutation's own.
//
// A conflict that wraps ErrRetry (a concurrent change moved a version the
// mutation was conditioned on, without deciding its outcome) runs prepare
// and the transaction again, up to MaxAttempts times, so contention costs
// retries rather than spurious 409s.
func (k Keeper) Run(ctx context.Context, sc Scope, fingerprint string, prepare func(ctx context.Context) (Mutation, error)) (Result, error) {
	for attempt := 1; ; attempt++ {
		res, err := k.run(ctx, sc, fingerprint, prepare, attempt >= MaxAttempts)
		if !errors.Is(err, ErrRetry) || attempt >= MaxAttempts {
			return res, err
		}
		if err := Pause(ctx, attempt); err != nil {
			return Result{}, errs.Unavailablef(err, "the change could not be stored")
		}
	}
}

// ErrRetry marks a lost race worth running again: see Retry.
var ErrRetry = errors.New("idempotency: lost a race; retry")

// MaxAttempts bounds the runs of one mutation under contention.
const MaxAttempts = 20

// retryError is a conflict explanation that is also worth a retry.
type retryError struct{ err error }

func (e retryError) Error() string   { return e.err.Error() }
func (e retryError) Unwrap() []error { return []error{e.err, ErrRetry} }

// Retry marks err, the explanation of a lost race, as worth running again;
// when the attempts run out, err is what the client gets.
func Retry(err error) error { return retryError{err} }

// Pause sleeps a short jittered while before attempt+1, or until ctx ends:
// contenders that lost together spread out instead of colliding again.
func Pause(ctx context.Context, attempt int) error {
	d := 2 * time.Millisecond << min(attempt-1, 4)
	return clock.Sleep(ctx, d/4+rand.N(d))
}

// run is one attempt of Run; last says no retry follows it.
func (k Keeper) run(ctx context.Context, sc Scope, fingerprint string, prepare func(ctx context.Context) (Mutation, error), last bool) (Result, error) {
	m, err := prepare(ctx)
	if err != nil {
		if !worthCheckingReceipt(err) {
			return Result{}, err
		}
		return k.replay(ctx, sc, fingerprint, func() error { return err })
	}
	body, err := store.Marshal(m.Body)
	if err != nil {
		return Result{}, fmt.Errorf("idempotency: encode response: %w", err)
	}
	now := k.Clock.Now()
	key := sc.storeKey()
	r := Receipt{Fingerprint: fingerprint, Status: m.Status, Body: body, CreatedAt: now}
	if m.Secret {
		if k.Secrets == nil {
			return Result{}, errors.New("idempotency: no box to seal a response carrying a secret")
		}
		sealed, err := k.Secrets.Seal(ctx, body, receiptAAD(key))
		if err != nil {
			return Result{}, fmt.Errorf("idempotency: seal response: %w", err)
		}
		r.Body, r.SealedBody = nil, &sealed
	}
	data, err := store.Marshal(r)
	if err != nil {
		return Result{}, fmt.Errorf("idempotency: encode receipt: %w", err)
	}
	receipt := store.Put(store.Item{PK: key.PK, SK: key.SK, Version: 1, Data: data, ExpiresAt: now.Add(Retention).Unix()}, store.IfAbsent())
	err = k.Store.Transact(ctx, append(m.Ops, receipt)...)
	if err == nil {
		return Result{Status: m.Status, Body: body}, nil
	}
	if ce, ok := store.AsCondition(err); ok {
		cerr := m.conflict(ce)
		if errors.Is(cerr, ErrRetry) && !last {
			// A lost race that the next attempt decides anew; should a
			// receipt exist, a later attempt fails on it and reads it.
			return Result{}, cerr
		}
		return k.replay(ctx, sc, fingerprint, func() error { return cerr })
	}
	return Result{}, errs.Unavailablef(err, "the change could not be stored")
}

// worthCheckingReceipt tells which preparation failures may be the shadow of
// an earlier success with the same key: conflicts and missing resources
// (a replayed create, a replayed transition), not bad input or outages.
func worthCheckingReceipt(err error) bool {
	switch errs.As(err).Kind {
	case errs.Conflict, errs.NotFound:
		return true
	}
	return false
}

// conflict is the error to report when a transaction's conditions failed
// and no receipt explains it: the mutation raced with another change.
func (m Mutation) conflict(ce *store.ConditionError) error {
	if m.Explain != nil {
		return m.Explain(ce)
	}
	return &errs.Error{Kind: errs.Conflict, Code: errs.CodeConflict,
		Detail: "The resource changed while this request was applied; read it again and retry.", Err: ce}
}

// replay answers from the receipt of sc; without one, cause explains the
// failure (computed only then, since explaining may cost a read).
func (k Keeper) replay(ctx context.Context, sc Scope, fingerprint string, cause func() error) (Result, error) {
	it, err := k.Store.Get(ctx, sc.storeKey())
	if errors.Is(err, store.ErrNotFound) {
		return Result{}, cause()
	}
	if err != nil {
		return Result{}, errs.Unavailablef(err, "the idempotency receipt could not be read")
	}
	var r Receipt
	if err := json.Unmarshal(it.Data, &r); err != nil {
		return Result{}, errs.Unavailablef(err, "the idempotency receipt is unreadable")
	}
	if r.Fingerprint != fingerprint {
		return Result{}, errs.E(errs.CodeIdempotencyKeyReused,
			"Idempotency-Key: this key was already used for a different request; use a new key for new work")
	}
	if r.SealedBody != nil {
		if k.Secrets == nil {
			return Result{}, errors.New("idempotency: no box to open a sealed receipt")
		}
		body, err := k.Secrets.Open(ctx, *r.SealedBody, receiptAAD(it.Key()))
		if err != nil {
			return Result{}, fmt.Errorf("idempotency: open receipt: %w", err)
		}
		return Result{Status: r.Status, Body: body, Replayed: true}, nil
	}
	return Result{Status: r.Status, Body: bytes.Clone(r.Body), Replayed: true}, nil
}

// With is k reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (k Keeper) With(st store.Store) Keeper {
	k.Store = st
	return k
}
