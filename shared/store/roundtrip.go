package store

import (
	"context"
	"sync/atomic"
)

// RoundTrips counts the backend round trips made on behalf of one request.
// The DynamoDB adapter counts every HTTP attempt through an SDK middleware;
// the embedded adapter counts every statement batch it sends to SQLite.
type RoundTrips struct{ n atomic.Int64 }

// N is the count so far.
func (c *RoundTrips) N() int64 {
	if c == nil {
		return 0
	}
	return c.n.Load()
}

type roundTripsKey struct{}

// WithRoundTrips returns a context whose store calls are counted by c.
func WithRoundTrips(ctx context.Context) (context.Context, *RoundTrips) {
	c := &RoundTrips{}
	return context.WithValue(ctx, roundTripsKey{}, c), c
}

// CountRoundTrip adds one round trip to the context's counter, if any.
func CountRoundTrip(ctx context.Context) {
	if c, ok := ctx.Value(roundTripsKey{}).(*RoundTrips); ok {
		c.n.Add(1)
	}
}
