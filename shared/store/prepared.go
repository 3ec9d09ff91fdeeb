package store

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
