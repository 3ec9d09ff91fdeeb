// Package roundtrip counts the backend round trips and capacity units a
// request spends: the adapters report each call, the HTTP layer reads the
// count for its budgets, logs and metrics.
package roundtrip

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
)

// Counter counts the backend round trips made on behalf of one request:
// every call (N), and the sequential waits among them (Waits), where calls
// that overlap in time count as one wait. The DynamoDB adapter counts every
// HTTP attempt through an SDK middleware; the embedded adapter counts every
// statement batch it sends to SQLite.
type Counter struct {
	n atomic.Int64
	// read and write are the consumed capacity units reported, in
	// thousandths.
	read, write atomic.Int64

	mu       sync.Mutex
	inflight int
	waits    int64
}

// N is the count of calls so far.
func (c *Counter) N() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

// Waits is the count of sequential waits so far.
func (c *Counter) Waits() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waits
}

// Capacity is the capacity units the calls consumed, as the backend
// reported them (zero for the embedded store): read units, then write
// units.
func (c *Counter) Capacity() (read, write float64) {
	if c == nil {
		return 0, 0
	}
	return float64(c.read.Load()) / 1000, float64(c.write.Load()) / 1000
}

// begin enters a call: one that starts while none is in flight is a new
// wait.
func (c *Counter) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inflight == 0 {
		c.waits++
	}
	c.inflight++
}

func (c *Counter) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight--
}

type roundTripsKey struct{}

// With returns a context whose store calls are counted by c.
func With(ctx context.Context) (context.Context, *Counter) {
	c := &Counter{}
	return context.WithValue(ctx, roundTripsKey{}, c), c
}

func roundTripsOf(ctx context.Context) *Counter {
	c, _ := ctx.Value(roundTripsKey{}).(*Counter)
	return c
}

// Count adds one round trip to the context's counter, if any, as
// a call of its own that overlaps nothing.
func Count(ctx context.Context) { Start(ctx)() }

// Start counts a call that has begun; the function it returns
// marks its end. Calls whose spans overlap count as one sequential wait.
func Start(ctx context.Context) (done func()) {
	c := roundTripsOf(ctx)
	if c == nil {
		return func() {}
	}
	c.n.Add(1)
	if ctx.Value(besideKey{}) != nil {
		return func() {}
	}
	c.begin()
	return c.end
}

// Hold marks a call as in flight from now without counting it
// (the call counts itself when it starts): calls that begin before the
// returned function is called overlap it.
func Hold(ctx context.Context) (done func()) {
	c := roundTripsOf(ctx)
	if c == nil || ctx.Value(besideKey{}) != nil {
		return func() {}
	}
	c.begin()
	return c.end
}

type besideKey struct{}

// Beside marks a context whose calls run side by side with the request's
// own sequence (a rate window spent while the request's reads run): they
// count as calls but not as waits.
func Beside(ctx context.Context) context.Context { return context.WithValue(ctx, besideKey{}, true) }

type unreportedKey struct{}

// Unreported marks a context whose calls' reported capacity is not
// recorded, for a caller that prices the calls itself and records that
// with AddCapacity on its own context (the benchmarks price DynamoDB
// transactions item by item, as AWS bills them, where DynamoDB Local
// reports a transaction by the rounded sum of its items' sizes).
func Unreported(ctx context.Context) context.Context {
	return context.WithValue(ctx, unreportedKey{}, true)
}

// AddCapacity records consumed capacity units reported by the backend:
// read units, then write units.
func AddCapacity(ctx context.Context, read, write float64) {
	c := roundTripsOf(ctx)
	if c == nil || ctx.Value(unreportedKey{}) != nil {
		return
	}
	for _, u := range []struct {
		n   *atomic.Int64
		add float64
	}{{&c.read, read}, {&c.write, write}} {
		if u.add > 0 && !math.IsInf(u.add, 0) {
			u.n.Add(int64(math.Round(u.add * 1000)))
		}
	}
}
