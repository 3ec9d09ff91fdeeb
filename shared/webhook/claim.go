package webhook

// A delivery attempt is claimed before it is made, so that it is made once
// however many messages carry it: the stream router's sweep may fan an
// event out again, and a worker killed mid-batch gets its messages again.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// claim says which queue message makes an attempt, and the id its attempt
// record takes (AttemptID), so that the owner, handled again, finds the
// record by key: the claim is written once and never again. Outcome and
// Next are those of claims written by older builds, which put the attempt's
// outcome on its claim when they recorded it.
type claim struct {
	Owner     string     `json:"owner"`
	AttemptID string     `json:"attempt_id,omitempty"`
	Outcome   string     `json:"outcome,omitempty"`
	Next      *time.Time `json:"next_attempt_at,omitempty"`
}

func claimKey(m Message) store.Key {
	return datamodel.ClaimKey(m.VendorID, m.DeliveryID, m.Attempt)
}

// claim claims m's attempt for the queue message owner, its record to be
// attemptID, or returns the claim that holds it: another message's (a
// duplicate: drop it), or this message's own from an earlier receive (make
// the attempt, or finish it). made says this call wrote the claim. The
// claim outlives every message that could carry the attempt (the retry
// window, a sweep's re-routing).
func (d Deliverer) claim(ctx context.Context, m Message, owner, attemptID string) (c claim, made bool, err error) {
	mine := claim{Owner: owner, AttemptID: attemptID}
	err = d.putClaim(ctx, m, mine, store.IfAbsent())
	if err == nil {
		return mine, true, nil
	}
	if !store.IsCondition(err) {
		return claim{}, false, err
	}
	c, found, err := d.heldClaim(ctx, m)
	if err == nil && !found {
		return claim{}, false, errs.Unavailablef(store.ErrNotFound, "the claim of delivery %s changed; try again", m.DeliveryID)
	}
	return c, false, err
}

// putClaim writes m's claim c under cond.
func (d Deliverer) putClaim(ctx context.Context, m Message, c claim, cond store.Cond) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	k := claimKey(m)
	return d.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: b, ExpiresAt: d.Clock.Now().Add(AttemptRetention).Unix()}, cond))
}

// heldClaim reads the claim that holds m's attempt; found is false when
// none does.
func (d Deliverer) heldClaim(ctx context.Context, m Message) (c claim, found bool, err error) {
	it, err := d.Store.Get(ctx, claimKey(m))
	if errors.Is(err, store.ErrNotFound) {
		return claim{}, false, nil
	}
	if err != nil {
		return claim{}, false, err
	}
	if err := json.Unmarshal(it.Data, &c); err != nil {
		return claim{}, false, fmt.Errorf("webhook: decode claim %s: %w", it.SK, err)
	}
	return c, true, nil
}
