// Package ratelimit keeps each vendor's one-minute allowances of reads and
// writes. The windows live in the store, keyed by vendor rather than token,
// so every credential of a vendor shares them and replacing a token does not
// reset them.
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// Class is what a request spends: a read or a write.
type Class string

const (
	Read  Class = "read"
	Write Class = "write"
	// Public is a request to an unauthenticated route, counted per client.
	Public Class = "public"
	// Exchange is a pairing-code exchange, counted per client on its own:
	// codes are secrets worth guessing.
	Exchange Class = "exchange"
)

// Window is the length of one allowance window.
const Window = time.Minute

// Status describes a window after a request was admitted.
type Status struct {
	Limit     int
	Remaining int
	// Reset is when the window ends.
	Reset time.Time
}

// Limiter admits requests against the vendor's windows.
type Limiter struct {
	Store         store.Store
	Clock         clock.Clock
	Reads, Writes int
	// Leases, when set, let the process take units in chunks (see Leases).
	Leases *Leases
}

// Limit is the allowance per window of a class.
func (l Limiter) Limit(c Class) int {
	if c == Write {
		return l.Writes
	}
	return l.Reads
}

// ClientPartition is the partition of an unauthenticated client's
// windows: its IP address, or for IPv6 its /64, which one subscriber
// usually holds whole.
func ClientPartition(ip netip.Addr) string {
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return datamodel.ClientPartition(p.String())
	}
	return datamodel.ClientPartition(ip.String())
}

// Take spends one unit of the vendor's current window for class. A spent
// window is 429 with Retry-After; a window that cannot be read is 503.
func (l Limiter) Take(ctx context.Context, vendorID string, c Class) (Status, error) {
	return l.TakeFrom(ctx, datamodel.VendorPartition(vendorID), "vendor's", c, l.Limit(c))
}

// TakeLeased spends one unit of the vendor's current window for class
// from this process's lease, without the store, when the lease holds one;
// ok is false otherwise (no leases, or the lease is spent), and the
// caller then Takes.
func (l Limiter) TakeLeased(vendorID string, c Class) (st Status, ok bool) {
	if l.Leases == nil {
		return Status{}, false
	}
	k := datamodel.RateKey(datamodel.VendorPartition(vendorID), string(c), l.Clock.Now().Truncate(Window))
	return l.Leases.take(k, l.Limit(c))
}

// TakeFrom spends one unit of the current window of class kept in the
// partition pk, whose allowance is limit per window: a store-plugin
// pairing's own (its partition), an unauthenticated client's (see
// ClientPartition). whose names the owner in the refusal.
func (l Limiter) TakeFrom(ctx context.Context, pk, whose string, c Class, limit int) (Status, error) {
	now := l.Clock.Now()
	start := now.Truncate(Window)
	reset := start.Add(Window)
	// The counter outlives its window by a minute so late reads still see it.
	k := datamodel.RateKey(pk, string(c), start)
	expires := reset.Add(Window).Unix()
	if l.Leases != nil {
		if st, ok := l.Leases.take(k, limit); ok {
			return st, nil
		}
		// One request of this process renews the lease at a time; the
		// others find what it took.
		unlock := l.Leases.renewing(k, reset)
		defer unlock()
		if st, ok := l.Leases.take(k, limit); ok {
			return st, nil
		}
		if chunk := l.Leases.chunk(k, limit); chunk > 1 {
			// The chunk only when all of it fits; else unit by unit below.
			n, err := l.Store.Increment(ctx, k, datamodel.RateCountAttr, chunk, int64(limit)-chunk+1, expires)
			if err == nil {
				return l.Leases.add(k, limit, chunk, n, reset, now), nil
			}
			if !store.IsCondition(err) {
				return Status{}, errs.Unavailablef(err, "the rate window could not be checked")
			}
		}
	}
	n, err := l.Store.Increment(ctx, k, datamodel.RateCountAttr, 1, int64(limit), expires)
	if store.IsCondition(err) {
		e := errs.Ef(errs.CodeRateLimited, "The %s allowance of %d %ss per minute is spent; retry after the window resets.", whose, limit, c)
		e.RetryAfter = RetryAfter(now, reset)
		return Status{Limit: limit, Remaining: 0, Reset: reset}, e
	}
	if err != nil {
		return Status{}, errs.Unavailablef(err, "the rate window could not be checked")
	}
	if l.Leases != nil {
		return l.Leases.add(k, limit, 1, n, reset, now), nil
	}
	return Status{Limit: limit, Remaining: remaining(limit, n), Reset: reset}, nil
}

// GiveBack returns one unit of the vendor's window of class that a Take
// answered with st, for a request refused before it did anything.
func (l Limiter) GiveBack(ctx context.Context, vendorID string, c Class, st Status) error {
	k := datamodel.RateKey(datamodel.VendorPartition(vendorID), string(c), st.Reset.Add(-Window))
	if l.Leases != nil && l.Leases.giveBack(k) {
		return nil
	}
	if _, err := l.Store.Increment(ctx, k, datamodel.RateCountAttr, -1, math.MaxInt64, st.Reset.Add(Window).Unix()); err != nil {
		return fmt.Errorf("ratelimit: give back: %w", err)
	}
	return nil
}

// RetryAfter is the whole seconds, at least 1, from now until reset.
func RetryAfter(now, reset time.Time) int {
	secs := int((reset.Sub(now) + time.Second - 1) / time.Second)
	return max(secs, 1)
}
