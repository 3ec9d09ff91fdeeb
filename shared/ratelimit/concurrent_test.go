package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// admitAll has 8 goroutines per limiter take reads from limiters (each a
// process with its own leases, or none) until every one is refused, and
// returns how many were admitted.
func admitAll(t *testing.T, limiters []ratelimit.Limiter) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for _, l := range limiters {
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := l.Take(context.Background(), "ven_concurrent", ratelimit.Read)
					if errs.As(err).Kind == errs.RateLimited {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					admitted.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	return admitted.Load()
}

// stores opens a new store of each kind, on clock c.
func stores(c *clock.Fake) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		"dynamodb": func(t *testing.T) store.Store {
			client, table := ddbtest.NewTable(t)
			return dynamodb.New(client, table, dynamodb.WithClock(c.Now))
		},
	}
}

// TestWindowHoldsUnderConcurrency: goroutines racing for one vendor's
// window never get more than its limit, on either store; one process with
// leases gets exactly the limit, and two processes sharing a store get no
// more than the limit and lose at most a chunk less one each to units
// leased and unspent.
func TestWindowHoldsUnderConcurrency(t *testing.T) {
	const limit = 256 // chunks of up to 32
	c := clocktest.Fake(2026, 3, 1, 12, 0, 30)
	for name, open := range stores(c) {
		t.Run(name+"/unit by unit", func(t *testing.T) {
			st := open(t)
			l := ratelimit.Limiter{Store: st, Clock: c, Reads: 40}
			if got := admitAll(t, []ratelimit.Limiter{l, l}); got != 40 {
				t.Fatalf("%d admitted, limit 40", got)
			}
		})
		t.Run(name+"/one process with leases", func(t *testing.T) {
			// The default allowance too: its last chunks no longer fit,
			// and goroutines that find the lease empty wait for the one
			// renewing it rather than find the store spent.
			for _, limit := range []int{60, limit} {
				st := open(t)
				l := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
				if got := admitAll(t, []ratelimit.Limiter{l}); got != int64(limit) {
					t.Fatalf("%d admitted, limit %d", got, limit)
				}
			}
		})
		t.Run(name+"/two processes with leases", func(t *testing.T) {
			st := open(t)
			a := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
			b := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
			got := admitAll(t, []ratelimit.Limiter{a, b})
			stranded := ratelimit.MaxChunk(limit) - 1
			if got > limit || got < limit-2*stranded {
				t.Fatalf("%d admitted, limit %d (at most %d stranded per process)", got, limit, stranded)
			}
		})
	}
}

// TestGiveBackReturnsTheUnit: a unit given back (a refused credential's)
// is admitted again, leased or not.
func TestGiveBackReturnsTheUnit(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 30)
	for _, leases := range []*ratelimit.Leases{nil, ratelimit.NewLeases()} {
		s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		l := ratelimit.Limiter{Store: s, Clock: c, Reads: 3, Leases: leases}
		ctx := context.Background()
		var last ratelimit.Status
		for range 3 {
			if last, err = l.Take(ctx, "ven_giveback", ratelimit.Read); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.GiveBack(ctx, "ven_giveback", ratelimit.Read, last); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Take(ctx, "ven_giveback", ratelimit.Read); err != nil {
			t.Fatalf("leases %v: the unit given back was not admitted: %v", leases != nil, err)
		}
		if _, err := l.Take(ctx, "ven_giveback", ratelimit.Read); errs.As(err).Kind != errs.RateLimited {
			t.Fatalf("leases %v: a fourth read of three admitted: %v", leases != nil, err)
		}
	}
}

// counting counts the store's increments: the window's writes.
type counting struct {
	store.Store
	increments atomic.Int64
}

func (c *counting) Increment(ctx context.Context, k store.Key, attr string, by, max, expiresAt int64) (int64, error) {
	c.increments.Add(1)
	return c.Store.Increment(ctx, k, attr, by, max, expiresAt)
}

// TestAWindowCostsAFewWrites: a process spending a default read window
// (60) request by request admits exactly 60 and refuses the next, with a
// few store writes (chunks of 1, 1, 2, 4, then 7), not one a request; and a
// vendor reading now and then spends unit by unit, as before.
func TestAWindowCostsAFewWrites(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &counting{Store: st}
	l := ratelimit.Limiter{Store: cs, Clock: c, Reads: 60, Leases: ratelimit.NewLeases()}
	ctx := context.Background()
	if _, err := l.Take(ctx, "ven_quiet", ratelimit.Read); err != nil || cs.increments.Load() != 1 {
		t.Fatalf("one read: %v, %d writes", err, cs.increments.Load())
	}
	cs.increments.Store(0)
	admitted := 0
	for {
		st, err := l.Take(ctx, "ven_busy", ratelimit.Read)
		if errs.As(err).Kind == errs.RateLimited {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		admitted++
		if st.Remaining != 60-admitted {
			t.Fatalf("after %d reads RateLimit-Remaining is %d", admitted, st.Remaining)
		}
	}
	// 1+1+2+4+7·7 = 57, then the 3 left, then the refusal's attempt.
	if writes := cs.increments.Load(); admitted != 60 || writes != 13 {
		t.Fatalf("%d admitted with %d store writes; want 60 with 13", admitted, writes)
	}
}

// TestEveryUnitIsAdmittedUnderConcurrency: goroutines of one process
// asking for exactly the default window, at once, are all admitted: one
// that finds the lease empty while another is renewing it waits for what
// the other takes, rather than find the store spent and answer 429 with
// units left in the lease. On both stores.
func TestEveryUnitIsAdmittedUnderConcurrency(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 30)
	for name, open := range stores(c) {
		t.Run(name, func(t *testing.T) {
			for round := range 5 {
				// The store's answer comes late, as a network's does: a
				// write has landed while its taker has not yet heard.
				l := ratelimit.Limiter{Store: lateAnswers{open(t)}, Clock: c, Reads: 60, Leases: ratelimit.NewLeases()}
				var refused atomic.Int64
				var wg sync.WaitGroup
				for range 6 {
					wg.Go(func() {
						for range 10 {
							if _, err := l.Take(context.Background(), "ven_every", ratelimit.Read); err != nil {
								refused.Add(1)
							}
						}
					})
				}
				wg.Wait()
				if n := refused.Load(); n != 0 {
					t.Fatalf("round %d: %d of the window's 60 requests refused", round, n)
				}
			}
		})
	}
}

// lateAnswers answers an increment a little after making it.
type lateAnswers struct{ store.Store }

func (s lateAnswers) Increment(ctx context.Context, k store.Key, attr string, by, max, expiresAt int64) (int64, error) {
	n, err := s.Store.Increment(ctx, k, attr, by, max, expiresAt)
	time.Sleep(2 * time.Millisecond)
	return n, err
}
