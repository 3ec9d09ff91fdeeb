// Package clock is the time port: production code asks a Clock for the time
// so that tests can move it (expiry, rate windows, TTLs) without sleeping.
package clock

import (
	"context"
	"sync"
	"time"
)

// Clock tells the time.
type Clock interface {
	Now() time.Time
}

// System is the real clock.
type System struct{}

// Now returns the current UTC time.
func (System) Now() time.Time { return time.Now().UTC() }

// Sleep waits d on the wall clock, or less if ctx is done first, when it
// returns ctx's error: the pause of a retry loop (the clients' backoffs),
// which no test clock moves.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Fake is a clock that only moves when told to; safe for concurrent use.
type Fake struct {
	mu sync.Mutex
	t  time.Time
	// tick is how far the clock moves after each reading, so that records
	// stamped one after another get distinct, ordered times.
	tick time.Duration
}

// NewFake returns a fake clock at t.
func NewFake(t time.Time) *Fake { return &Fake{t: t.UTC()} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.t
	f.t = f.t.Add(f.tick)
	return now
}

// Tick makes the clock move by d after each reading.
func (f *Fake) Tick(d time.Duration) {
	f.mu.Lock()
	f.tick = d
	f.mu.Unlock()
}

// Advance moves the fake time forward by d.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// Set moves the fake time to t.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.t = t.UTC()
	f.mu.Unlock()
}
