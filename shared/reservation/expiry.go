package reservation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// Run is what one pass of the expirer did.
type Run struct {
	// Expired counts the holds this pass expired.
	Expired int
	// Failed counts the index entries (or shards) that could not be
	// handled; they stay and are tried again by the next pass.
	Failed int
	// Errors are the first failures, for the log.
	Errors []error
}

func (r *Run) fail(err error) {
	r.Failed++
	if len(r.Errors) < 10 {
		r.Errors = append(r.Errors, err)
	}
}

// ExpireDue releases every active reservation whose hold ended at or
// before now, walking each expiry shard in time order, batch entries a
// query. An entry that fails is counted in the Run and skipped, never the
// end of the pass: one broken hold cannot keep every other tenant's from
// expiring. Safe to run from several processes: each expiry is
// conditioned on the reservation's version. The error is only the
// context's.
func (s Service) ExpireDue(ctx context.Context, batch int) (Run, error) {
	now := s.Clock.Now()
	var run Run
	for _, pk := range expiryPartitions() {
		if err := ctx.Err(); err != nil {
			return run, err
		}
		s.expireShard(ctx, pk, now, batch, &run)
	}
	return run, ctx.Err()
}

// expireShard walks one shard's due entries.
func (s Service) expireShard(ctx context.Context, pk string, now time.Time, batch int, run *Run) {
	after := ""
	for {
		items, err := s.Store.Query(ctx, store.Query{PK: pk, After: after, Limit: batch})
		if err != nil {
			run.fail(fmt.Errorf("reservation: expiry shard %s: %w", pk, err))
			return
		}
		for _, it := range items {
			if due, ok := expiryDue(it.SK); ok && due.After(now) {
				return // the shard is in expiry order: nothing later is due
			}
			expired, err := s.expireEntry(ctx, it, now)
			if err != nil {
				run.fail(fmt.Errorf("reservation: expiry entry %s/%s: %w", it.PK, it.SK, err))
				continue
			}
			if expired {
				run.Expired++
			}
		}
		if len(items) < batch {
			return
		}
		after = items[len(items)-1].SK
	}
}

// expireEntry expires the hold an index entry names, or deletes the entry
// when it is stale (its reservation settled, renewed or gone).
func (s Service) expireEntry(ctx context.Context, it store.Item, now time.Time) (bool, error) {
	var e expiryEntry
	if err := jsonUnmarshal(it.Data, &e); err != nil {
		return false, err
	}
	r, err := s.Get(ctx, e.VendorID, e.ReservationID)
	if errs.Is(err, errs.CodeNotFound) {
		return false, s.Store.Transact(ctx, store.Delete(it.Key(), store.Cond{}))
	}
	if err != nil {
		return false, err
	}
	if r.Status != StatusActive || expirySK(r) != it.SK {
		return false, s.Store.Transact(ctx, store.Delete(it.Key(), store.Cond{}))
	}
	if r.ExpiresAt.After(now) {
		return false, nil
	}
	return s.expire(ctx, e.VendorID, r, now)
}

// expire settles r as expired, retrying while concurrent movements of its
// item win the race (the expiry is conditioned on the item's version, like
// every movement); it reports false when r was settled concurrently.
func (s Service) expire(ctx context.Context, vendorID string, r Reservation, now time.Time) (bool, error) {
	for attempt := 1; ; attempt++ {
		p, err := s.settle(ctx, vendorID, r, StatusExpired, now)
		if err != nil {
			return false, err
		}
		err = s.Store.Transact(ctx, p.Ops...)
		if err == nil {
			return true, nil
		}
		ce, ok := store.AsCondition(err)
		if !ok {
			return false, err
		}
		if !errors.Is(p.Explain(ce), idempotency.ErrRetry) || attempt >= idempotency.MaxAttempts {
			return false, nil // settled concurrently; the next run sees its new state
		}
		if err := idempotency.Pause(ctx, attempt); err != nil {
			return false, err
		}
		if r, err = s.Get(ctx, vendorID, r.ID); err != nil || r.Status != StatusActive {
			return false, err
		}
	}
}
