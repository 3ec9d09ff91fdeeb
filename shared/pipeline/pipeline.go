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
	"sync"

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

// RouteConcurrency bounds the store reads, sends and marker deletes the
// router has in flight at once when its queue is not all-or-none (SQS,
// where a send is a SendMessageBatch of up to ten messages): one change
// after another, a batch of a hundred stream records made hundreds of
// round trips in a row, and every later change waited behind them.
const RouteConcurrency = 16

// Route handles a batch of changes and reports how many, from the first,
// were fully routed; on a failure the caller retries from the failed one:
// work is sent at least once, never skipped. On a queue.BatchSender the
// messages of every change before the failure are sent in one batch, all
// or none. On any other queue the changes' rules run at once, then their
// messages are sent at once, then their markers deleted at once (each
// step at most RouteConcurrency calls in flight); on a
// queue.PartialBatchSender (SQS) the pass's messages go ten of a queue to
// a call, across changes. A change is routed when all of its messages
// were sent: a message that failed fails its change. A change after a
// failed one may have been sent too, and is sent again with the retry (a
// change routed twice does its work once, as after a sweep).
func (r Router) Route(ctx context.Context, changes []store.Change) (int, error) {
	if b, ok := r.Queue.(queue.BatchSender); ok {
		return r.routeBatch(ctx, b, changes)
	}
	n, first := len(changes), error(nil)
	fail := func(i int, err error) {
		if err != nil && i < n {
			n, first = i, err
		}
	}
	outs := make([][]Outgoing, len(changes))
	errs := each(len(changes), func(i int) error {
		if !r.Sees(changes[i]) {
			return nil
		}
		var err error
		outs[i], err = r.messages(ctx, changes[i])
		return err
	})
	for i, err := range errs {
		fail(i, err)
	}
	// The messages of the changes up to the failed one, and those of the
	// failed change's rules before its failure (they are sent again with it).
	type send struct {
		change int
		o      Outgoing
	}
	var sends []send
	for i := range min(n+1, len(changes)) {
		for _, o := range outs[i] {
			sends = append(sends, send{i, o})
		}
	}
	msgs := make([]Outgoing, len(sends))
	for k, s := range sends {
		msgs[k] = s.o
	}
	for k, err := range r.send(ctx, msgs) {
		if err != nil {
			c := changes[sends[k].change]
			err = fmt.Errorf("pipeline: route %s/%s: %w", c.Key.PK, c.Key.SK, err)
		}
		fail(sends[k].change, err)
	}
	done := n
	errs = each(done, func(i int) error {
		if !r.Sees(changes[i]) {
			return nil
		}
		return r.routed(ctx, changes[i])
	})
	for i, err := range errs {
		fail(i, err)
	}
	return n, first
}

// send sends msgs and returns each one's error. On a
// queue.PartialBatchSender the messages of each queue go queue.MaxBatch to
// a call (10 a SendMessageBatch, where each was a SendMessage of its own);
// on any other queue each goes on its own. Either way at most
// RouteConcurrency calls are in flight.
func (r Router) send(ctx context.Context, msgs []Outgoing) []error {
	p, ok := r.Queue.(queue.PartialBatchSender)
	if !ok {
		return each(len(msgs), func(k int) error {
			if err := r.Queue.Send(ctx, msgs[k].Queue, msgs[k].Body, msgs[k].Delay); err != nil {
				return fmt.Errorf("pipeline: send to %s: %w", msgs[k].Queue, err)
			}
			return nil
		})
	}
	calls := packed(msgs, queue.MaxBatch)
	errs := make([]error, len(msgs))
	each(len(calls), func(c int) error {
		batch := make([]Outgoing, len(calls[c]))
		for j, k := range calls[c] {
			batch[j] = msgs[k]
		}
		got := p.SendEach(ctx, batch)
		for j, k := range calls[c] {
			if j >= len(got) {
				errs[k] = fmt.Errorf("pipeline: send to %s: the queue answered for %d of %d messages", msgs[k].Queue, len(got), len(batch))
			} else if got[j] != nil {
				errs[k] = fmt.Errorf("pipeline: send to %s: %w", msgs[k].Queue, got[j])
			}
		}
		return nil
	})
	return errs
}

// packed cuts the indexes of msgs into calls of at most size messages of
// one queue each, the queues in the order they first come.
func packed(msgs []Outgoing, size int) [][]int {
	var calls [][]int
	open := map[string]int{} // a queue's call being filled
	for k, m := range msgs {
		c, ok := open[m.Queue]
		if !ok || len(calls[c]) == size {
			c = len(calls)
			calls = append(calls, nil)
			open[m.Queue] = c
		}
		calls[c] = append(calls[c], k)
	}
	return calls
}

// each runs fn(0)…fn(n-1), at most RouteConcurrency at once, and returns
// their errors by index.
func each(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, RouteConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errs
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

// routed deletes c's pending marker, when the router keeps them and c's
// transaction wrote one (Pending.Mark): a delete of an absent item still
// bills a write.
func (r Router) routed(ctx context.Context, c store.Change) error {
	if r.Pending == nil || c.New != nil && c.New.Nums[datamodel.EventUnmarkedAttr] == 1 {
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
