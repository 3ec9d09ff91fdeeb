package store

import (
	"context"
	"errors"
)

// Prepared is a mutation a service has checked and built but not applied:
// the value it answers with once applied, the operations of its one
// transaction, and how to explain their failed conditions. Services return
// it from their Prepare methods so that a caller can add operations (a
// receipt, a job record) to the same transaction.
type Prepared[V any] struct {
	View V
	Ops  []Op
	// Explain turns a failed condition of Ops (a concurrent change won the
	// race) into the domain's error; one wrapping idempotency.ErrRetry asks
	// the caller to prepare again. Nil means the caller's generic conflict.
	Explain func(*ConditionError) error
}

// Read gets the live item at k and decodes it: missing when the item is
// absent or expired, unavailable(err) when the store fails or the item
// does not decode. It is the body of every service's Get.
func Read[T any](ctx context.Context, s Store, k Key, decode func(Item) (T, error), missing error, unavailable func(error) error) (T, error) {
	var zero T
	it, err := s.Get(ctx, k)
	if errors.Is(err, ErrNotFound) {
		return zero, missing
	}
	if err != nil {
		return zero, unavailable(err)
	}
	v, err := decode(it)
	if err != nil {
		return zero, unavailable(err)
	}
	return v, nil
}
