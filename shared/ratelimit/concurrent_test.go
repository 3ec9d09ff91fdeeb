package ratelimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

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

// TestWindowHoldsUnderConcurrency: goroutines racing for one vendor's
// window never get more than its limit, on either store; one process with
// leases gets exactly the limit, and two processes sharing a store get no
// more than the limit and lose at most a chunk each to units leased and
// unspent.
func TestWindowHoldsUnderConcurrency(t *testing.T) {
	const limit = 256 // a chunk of 4
	c := clocktest.Fake(2026, 3, 1, 12, 0, 30)
	stores := map[string]func(t *testing.T) store.Store{
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
	for name, open := range stores {
		t.Run(name+"/unit by unit", func(t *testing.T) {
			st := open(t)
			l := ratelimit.Limiter{Store: st, Clock: c, Reads: 40}
			if got := admitAll(t, []ratelimit.Limiter{l, l}); got != 40 {
				t.Fatalf("%d admitted, limit 40", got)
			}
		})
		t.Run(name+"/one process with leases", func(t *testing.T) {
			st := open(t)
			l := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
			if got := admitAll(t, []ratelimit.Limiter{l}); got != limit {
				t.Fatalf("%d admitted, limit %d", got, limit)
			}
		})
		t.Run(name+"/two processes with leases", func(t *testing.T) {
			st := open(t)
			a := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
			b := ratelimit.Limiter{Store: st, Clock: c, Reads: limit, Leases: ratelimit.NewLeases()}
			got := admitAll(t, []ratelimit.Limiter{a, b})
			if got > limit || got < limit-2*3 {
				t.Fatalf("%d admitted, limit %d (at most 3 stranded per process)", got, limit)
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
