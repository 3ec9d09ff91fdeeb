package httpapi

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/readahead"
)

// rateGate is a request's pending rate-window decision and the items read
// ahead with its credentials. The window is spent concurrently with the
// request's batch read (token, vendor and the keys its route declares),
// which saves a sequential round trip per request; nothing is written, and
// no response is sent, until the decision is in.
type rateGate struct {
	done   chan struct{}
	status ratelimit.Status
	err    error
	once   sync.Once
	// queries counts the request's queries: the first overlaps the
	// decision, the rest (a list walking on past non-matching records)
	// wait for it.
	queries atomic.Int32

	ahead readAhead
}

// startGate starts take; a take that runs beside the request's own reads
// marks its context with roundtrip.Beside.
func startGate(ctx context.Context, take func(context.Context) (ratelimit.Status, error)) *rateGate {
	g := &rateGate{done: make(chan struct{})}
	go func() {
		defer close(g.done)
		g.status, g.err = take(ctx)
	}()
	return g
}

// wait blocks until the decision is in and returns its refusal, if any.
func (g *rateGate) wait() error {
	<-g.done
	return g.err
}

// readAhead holds the items a request read in its admission batch, so that
// the handler's reads of the same keys cost no round trip. It answers only
// until the request first writes: after a write, or a failed write, every
// read goes to the store again, so that a retry or a replay after a lost
// race sees what the race left.
type readAhead struct {
	mu sync.Mutex
	// keys[i] was read as items[i] (a zero PK: read and absent); a handful
	// of keys, searched in order, which costs less than building a map
	// per request.
	keys  []store.Key
	items []store.Item
	// pages are the list route's queries started beside the batch
	// (Route.PageAhead): one answers the request's first query when that
	// is the identical query, and each answers reads of keys in the range
	// it covered (readahead.Pending.Lookup).
	pages []*readahead.Pending
}

// set keeps keys, items and pages, which the request owns from then on.
func (a *readAhead) set(keys []store.Key, items []store.Item, pages []*readahead.Pending) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys, a.items = keys, items[:len(keys)]
	a.pages = pages
}

// firstQuery returns the query started ahead that is q, if any.
func (a *readAhead) firstQuery(q store.Query) *readahead.Pending {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.pages {
		if p.Answers(q) {
			return p
		}
	}
	return nil
}

func (a *readAhead) get(k store.Key) (store.Item, bool) {
	a.mu.Lock()
	keys, items, pages := a.keys, a.items, a.pages
	a.mu.Unlock()
	for i, have := range keys {
		if have == k {
			return items[i], true
		}
	}
	for _, p := range pages {
		if it, ok := p.Lookup(k); ok {
			return it, true
		}
	}
	return store.Item{}, false
}

func (a *readAhead) drop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keys, a.items = nil, nil
	a.pages = nil
}

// gatedStore is a request's view of the store, which the services its
// handler calls are bound to (Call.store): reads of keys the request read
// ahead are answered from that batch, and its first query by the page
// query started beside it when identical; other single reads and a
// request's first query go straight through; writes and any further
// query wait for the request's rate decision and are refused when it is
// no, so a refused request does no expensive work. Without a gate (no
// decision started, or one given back) it is the store itself.
type gatedStore struct {
	store.Store
	// gate is the request's rate decision and read-ahead, set when its
	// admission starts the decision.
	gate *rateGate
}

func (s *gatedStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if g := s.gate; g != nil {
		if it, ok := g.ahead.get(k); ok {
			if it.PK == "" {
				return store.Item{}, store.ErrNotFound
			}
			return it, nil
		}
	}
	return s.Store.Get(ctx, k)
}

func (s *gatedStore) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	g := s.gate
	if g == nil {
		return s.Store.GetMany(ctx, keys)
	}
	out := make([]store.Item, len(keys))
	var missing []store.Key
	var at []int
	for i, k := range keys {
		if it, ok := g.ahead.get(k); ok {
			out[i] = it
			continue
		}
		missing, at = append(missing, k), append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	items, err := s.Store.GetMany(ctx, missing)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = items[j]
	}
	return out, nil
}

func (s *gatedStore) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if g := s.gate; g != nil {
		if g.queries.Add(1) > 1 {
			if err := g.wait(); err != nil {
				return nil, err
			}
		} else if p := g.ahead.firstQuery(q); p != nil {
			return p.Result()
		}
	}
	return s.Store.Query(ctx, q)
}

func (s *gatedStore) Transact(ctx context.Context, ops ...store.Op) error {
	if g := s.gate; g != nil {
		if err := g.wait(); err != nil {
			return err
		}
		g.ahead.drop()
	}
	return s.Store.Transact(ctx, ops...)
}

func (s *gatedStore) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	if g := s.gate; g != nil {
		if err := g.wait(); err != nil {
			return 0, err
		}
		g.ahead.drop()
	}
	return s.Store.Increment(ctx, k, attr, delta, below, expiresAt)
}
