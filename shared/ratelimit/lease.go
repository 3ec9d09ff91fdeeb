package ratelimit

import (
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

// Leases are units of rate windows that this process has spent in the
// store in advance and not yet handed to a request: a process that takes
// a chunk of units with one store write admits the next requests from
// memory, so that a window costs a few writes, not one a request. The
// store's count stays the sum of what every process took, so the limit
// holds across processes; a process refuses a request only when its lease
// is empty and the store has no unit left, so one process alone admits
// exactly the limit. A chunk grows with what the process has taken of the
// window (1, 1, 2, 4, ...), up to an eighth of the limit: a process serving
// a vendor now and then takes unit by unit, a busy one halves its writes
// each time. Several processes (Lambda environments) may each hold up to
// a chunk less one unused when the window runs out, which the others then
// cannot spend: the window errs towards refusing, never towards admitting
// more, and by at most an eighth of the limit a process.
type Leases struct {
	mu   sync.Mutex
	held map[store.Key]*lease
}

type lease struct {
	// renew is held while a request of this process takes more of the
	// window from the store, so that the others wait for what it takes
	// instead of finding the lease empty and the store spent at once.
	renew sync.Mutex
	left  int64 // units taken from the store, not yet handed out
	taken int64 // units taken from the store in all
	count int64 // the store's count after this process's last take
	reset time.Time
}

// NewLeases returns an empty set of leases for one process.
func NewLeases() *Leases { return &Leases{held: map[store.Key]*lease{}} }

// chunk is how many units the next store write of k takes: as many as
// this process has taken of k's window so far, at least 1 and at most
// MaxChunk(limit), and no more than the room the store's count left at
// this process's last take (others may have taken some since: then the
// write fails its condition and the caller takes a unit).
func (ls *Leases) chunk(k store.Key, limit int) int64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.held[k]
	if l == nil {
		return 1
	}
	return max(min(l.taken, MaxChunk(limit), int64(limit)-l.count), 1)
}

// MaxChunk is the most units one store write takes of a window of limit:
// an eighth of it, at least 1 and at most 1024 (the default allowances:
// 7 of 60 reads, 1 of 12 writes).
func MaxChunk(limit int) int64 {
	return min(max(int64(limit)/8, 1), 1024)
}

// renewing locks k's renewal (making k's lease, empty, if there is none)
// and returns its unlock.
func (ls *Leases) renewing(k store.Key, reset time.Time) (unlock func()) {
	ls.mu.Lock()
	l := ls.held[k]
	if l == nil {
		l = &lease{reset: reset}
		ls.held[k] = l
	}
	ls.mu.Unlock()
	l.renew.Lock()
	return l.renew.Unlock
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
	l.taken += chunk
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
