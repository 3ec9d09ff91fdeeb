// Package pipeline turns committed changes into work: the router reads
// each change (from DynamoDB Streams through the stream-router Lambda, or
// from the embedded store's change log through Tail) and asks every rule
// which messages it makes, then sends them to the work queues. Rules live
// with the work they start (webhook deliveries for new events, bulk
// operations, replays), so the router knows no domain.
package pipeline

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Outgoing is a message a rule wants sent.
type Outgoing struct {
	Queue string
	Body  []byte
	Delay time.Duration
}

// Rule makes the messages one change calls for; most changes call for none.
type Rule func(ctx context.Context, c store.Change) ([]Outgoing, error)

// Router sends the work that changes call for.
type Router struct {
	Rules []Rule
	Queue queue.Sender
	// Inserted, when set, are the sort-key prefixes of the only changes
	// the rules are shown: inserts of items under them. The deployed
	// stream router's event filter passes the same changes (infra/stack),
	// so a rule that routes anything else fails here first, not silently
	// in AWS.
	Inserted []string
	// Pending, when set, is the store holding the markers of changes not
	// yet routed (pending.go): once a change's work is sent, its marker is
	// deleted. Unset, no marker is looked at (the embedded store's change
	// log keeps the router's position instead).
	Pending store.Store
}

// Sees tells whether the rules are shown c.
func (r Router) Sees(c store.Change) bool {
	if len(r.Inserted) == 0 {
		return true
	}
	if c.Kind != store.Inserted {
		return false
	}
	for _, p := range r.Inserted {
		if strings.HasPrefix(c.Key.SK, p) {
			return true
		}
	}
	return false
}

// Route handles changes in order. It stops at the first failure and
// reports how many changes were fully routed, so the caller retries from
// the failed one: work is sent at least once, never skipped.
func (r Router) Route(ctx context.Context, changes []store.Change) (int, error) {
	for i, c := range changes {
		if !r.Sees(c) {
			continue
		}
		for _, rule := range r.Rules {
			out, err := rule(ctx, c)
			if err != nil {
				return i, fmt.Errorf("pipeline: route %s/%s: %w", c.Key.PK, c.Key.SK, err)
			}
			for _, o := range out {
				if err := r.Queue.Send(ctx, o.Queue, o.Body, o.Delay); err != nil {
					return i, fmt.Errorf("pipeline: send to %s: %w", o.Queue, err)
				}
			}
		}
		if r.Pending != nil {
			if err := r.Pending.Transact(ctx, store.Delete(datamodel.PendingKey(c.Key), store.Cond{})); err != nil {
				return i, fmt.Errorf("pipeline: mark %s/%s routed: %w", c.Key.PK, c.Key.SK, err)
			}
		}
	}
	return len(changes), nil
}

// CursorName is the embedded router's position in the change log.
const CursorName = "router"

// ChangeLog is a store's log of committed changes with named positions in
// it (the embedded store, sqlite.Store, is one).
type ChangeLog interface {
	Changes(ctx context.Context, after int64, limit int) ([]store.Change, error)
	Cursor(ctx context.Context, name string) (int64, error)
	Advance(ctx context.Context, name string, seq int64) error
}

// Tail routes the embedded store's new changes once, up to batch of them,
// and advances the router's cursor past what it routed. It returns how
// many changes it routed.
func Tail(ctx context.Context, s ChangeLog, r Router, batch int) (int, error) {
	after, err := s.Cursor(ctx, CursorName)
	if err != nil {
		return 0, err
	}
	changes, err := s.Changes(ctx, after, batch)
	if err != nil || len(changes) == 0 {
		return 0, err
	}
	n, rerr := r.Route(ctx, changes)
	if n > 0 {
		if err := s.Advance(ctx, CursorName, changes[n-1].Seq); err != nil {
			return n, err
		}
	}
	return n, rerr
}
