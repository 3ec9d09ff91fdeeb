package httpapi

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
)

// rateGate is a request's pending rate-window decision. The window is
// spent concurrently with the handler's first reads, which saves a
// sequential round trip per request; nothing is written, and no response
// is sent, until the decision is in.
type rateGate struct {
	done   chan struct{}
	status ratelimit.Status
	err    error
	once   sync.Once
	// queries counts the request's queries: the first overlaps the
	// decision, the rest (a list walking on past non-matching records)
	// wait for it.
	queries atomic.Int32
}

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

type gateKey struct{}

func gateOf(ctx context.Context) *rateGate {
	g, _ := ctx.Value(gateKey{}).(*rateGate)
	return g
}

// gatedStore is the store handlers see: single reads and a request's first
// query go straight through; writes and any further query wait for the
// request's rate decision and are refused when it is no, so a refused
// request does no expensive work.
type gatedStore struct{ store.Store }

func (s gatedStore) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if g := gateOf(ctx); g != nil && g.queries.Add(1) > 1 {
		if err := g.wait(); err != nil {
			return nil, err
		}
	}
	return s.Store.Query(ctx, q)
}

func (s gatedStore) Transact(ctx context.Context, ops ...store.Op) error {
	if g := gateOf(ctx); g != nil {
		if err := g.wait(); err != nil {
			return err
		}
	}
	return s.Store.Transact(ctx, ops...)
}

func (s gatedStore) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	if g := gateOf(ctx); g != nil {
		if err := g.wait(); err != nil {
			return 0, err
		}
	}
	return s.Store.Increment(ctx, k, attr, delta, below, expiresAt)
}
