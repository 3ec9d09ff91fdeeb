package ratelimit

import (
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

// Leases are units of rate windows that this process has spent in the
// store in advance and not yet handed to a request: a process that takes
// a chunk of units with one store write admits the next requests from
// memory. The store's count stays the sum of what every process took, so
// the limit holds across processes; a process refuses a request only when
// its lease is empty and the store has no unit left, so one process alone
// admits exactly the limit. Several processes may each hold up to a chunk
// less one unused, which others then cannot spend: the window errs towards
// refusing, never towards admitting more.
//
// The embedded store, where one server process usually serves a data
// directory, uses leases; on DynamoDB many short-lived Lambda environments
// would each strand a chunk, so it spends unit by unit.
type Leases struct {
	mu   sync.Mutex
	held map[store.Key]*lease
}

type lease struct {
	left  int64 // units taken from the store, not yet handed out
	count int64 // the store's count after this process's last take
	reset time.Time
}

// NewLeases returns an empty set of leases for one process.
func NewLeases() *Leases { return &Leases{held: map[store.Key]*lease{}} }

// leaseChunk is how many units one store write takes: a sixty-fourth of
// the limit, at least 1 and at most 1024, so the default allowances (tens
// a minute) still spend unit by unit and what one process can strand is a
// small part of any window.
func leaseChunk(limit int) int64 {
	return min(max(int64(limit)/64, 1), 1024)
}

// take hands out a leased unit of k, if one is held.
func (ls *Leases) take(k store.Key, limit int) (Status, bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.held[k]
	if l == nil || l.left == 0 {
		return Status{}, false
	}
	l.left--
	return Status{Limit: limit, Remaining: remaining(limit, l.count-l.left), Reset: l.reset}, true
}

// add records that this process took chunk units of k, the store's count
// being count after the take, and hands one of them out.
func (ls *Leases) add(k store.Key, limit int, chunk, count int64, reset, now time.Time) Status {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for old, l := range ls.held {
		if !l.reset.After(now) {
			delete(ls.held, old) // a past window's leftovers are worthless
		}
	}
	l := ls.held[k]
	if l == nil {
		l = &lease{reset: reset}
		ls.held[k] = l
	}
	l.left += chunk - 1
	l.count = max(l.count, count)
	return Status{Limit: limit, Remaining: remaining(limit, l.count-l.left), Reset: reset}
}

// giveBack returns a unit to k's lease; it reports false when no lease of
// k is held (the unit was not leased here).
func (ls *Leases) giveBack(k store.Key) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.held[k]
	if l == nil {
		return false
	}
	l.left++
	return true
}

func remaining(limit int, used int64) int { return max(limit-int(used), 0) }
