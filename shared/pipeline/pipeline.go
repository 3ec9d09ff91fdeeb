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

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Outgoing is a message a rule wants sent.
type Outgoing = queue.Outgoing

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
// the failed one: work is sent at least once, never skipped. On a
// queue.BatchSender the messages of every change before the failure are
// sent in one batch, all or none.
func (r Router) Route(ctx context.Context, changes []store.Change) (int, error) {
	if b, ok := r.Queue.(queue.BatchSender); ok {
		return r.routeBatch(ctx, b, changes)
	}
	for i, c := range changes {
		if !r.Sees(c) {
			continue
		}
		out, err := r.messages(ctx, c)
		for _, o := range out {
			if err := r.Queue.Send(ctx, o.Queue, o.Body, o.Delay); err != nil {
				return i, fmt.Errorf("pipeline: send to %s: %w", o.Queue, err)
			}
		}
		if err != nil {
			return i, err
		}
		if err := r.routed(ctx, c); err != nil {
			return i, err
		}
	}
	return len(changes), nil
}

// routeBatch is Route on a queue that sends a batch at once.
func (r Router) routeBatch(ctx context.Context, q queue.BatchSender, changes []store.Change) (int, error) {
	var all []Outgoing
	n, failed := len(changes), error(nil)
	for i, c := range changes {
		if !r.Sees(c) {
			continue
		}
		out, err := r.messages(ctx, c)
		if err != nil {
			n, failed = i, err
			break
		}
		all = append(all, out...)
	}
	if len(all) > 0 {
		if err := q.SendBatch(ctx, all); err != nil {
			return 0, fmt.Errorf("pipeline: send %d messages: %w", len(all), err)
		}
	}
	for i, c := range changes[:n] {
		if !r.Sees(c) {
			continue
		}
		if err := r.routed(ctx, c); err != nil {
			return i, err
		}
	}
	return n, failed
}

// messages asks every rule what c calls for. On a rule's failure it
// returns the messages of the rules before it with the error: they are
// sent again when c is.
func (r Router) messages(ctx context.Context, c store.Change) ([]Outgoing, error) {
	var all []Outgoing
	for _, rule := range r.Rules {
		out, err := rule(ctx, c)
		if err != nil {
			return all, fmt.Errorf("pipeline: route %s/%s: %w", c.Key.PK, c.Key.SK, err)
		}
		all = append(all, out...)
	}
	return all, nil
}

// routed deletes c's pending marker, when the router keeps them.
func (r Router) routed(ctx context.Context, c store.Change) error {
	if r.Pending == nil {
		return nil
	}
	if err := r.Pending.Transact(ctx, store.Delete(datamodel.PendingKey(c.Key), store.Cond{})); err != nil {
		return fmt.Errorf("pipeline: mark %s/%s routed: %w", c.Key.PK, c.Key.SK, err)
	}
	return nil
}

// CursorName is the embedded router's position in the change log.
const CursorName = "router"

// ChangeLog is a store's log of committed changes with named positions in
// it (the embedded store, sqlite.Store, is one).
type ChangeLog interface {
	// ChangesOf reads up to limit changes after a position and returns
	// those keep accepts (shown their position, kind and key only), how
	// many it read and the position of the last it read.
	ChangesOf(ctx context.Context, after int64, limit int, keep func(store.Change) bool) (kept []store.Change, read int, last int64, err error)
	Cursor(ctx context.Context, name string) (int64, error)
	Advance(ctx context.Context, name string, seq int64) error
}

// Tail routes the embedded store's new changes once, up to batch of them,
// and advances the router's cursor past what it routed and what the
// router does not show its rules (Router.Sees). It returns how many
// changes of the log it went past, or on a failure how many of those
// shown to the rules it routed before the failed one.
func Tail(ctx context.Context, s ChangeLog, r Router, batch int) (int, error) {
	after, err := s.Cursor(ctx, CursorName)
	if err != nil {
		return 0, err
	}
	changes, read, last, err := s.ChangesOf(ctx, after, batch, r.Sees)
	if err != nil || read == 0 {
		return 0, err
	}
	n, rerr := r.Route(ctx, changes)
	if n < len(changes) {
		// Up to the failed change: it is read again on the next pass.
		last = changes[n].Seq - 1
		read = n
	}
	if last > after {
		if err := s.Advance(ctx, CursorName, last); err != nil {
			return n, err
		}
	}
	return read, rerr
}
