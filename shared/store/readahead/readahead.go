// Package readahead runs a store query before its caller asks for it: a
// list route's page query, started beside the request's admission batch.
package readahead

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// Pending is a query started before its caller asks for it: a list
// route's page query, started beside the request's admission batch so
// that the page costs no round trip of its own. Whoever started it hands
// its result to an identical query (Answers, Result) and reads of keys in
// the range it covered (Lookup), or drops it unread.
type Pending struct {
	q     store.Query
	done  chan struct{}
	items []store.Item
	err   error
	// held counts what must end before the query's wait does: the query
	// itself and the caller's calls beside it (Join).
	held   atomic.Int32
	joined atomic.Bool
	end    func()
}

// Start runs q on s in a goroutine of its own. The query counts as
// a call in flight from now until both it is done and the caller has
// joined it (Join), so the calls the caller makes in between overlap it
// (roundtrip.With): together they are one wait, however the scheduler
// orders the query's goroutine and the caller's calls.
func Start(ctx context.Context, s store.Store, q store.Query) *Pending {
	p := &Pending{q: q, done: make(chan struct{}), end: roundtrip.Hold(ctx)}
	p.held.Store(2)
	go func() {
		defer close(p.done)
		defer p.release()
		p.items, p.err = s.Query(ctx, q)
	}()
	return p
}

// Join marks the end of the calls its caller made beside p. Calling it
// more than once, or on nil, does nothing more.
func (p *Pending) Join() {
	if p != nil && p.joined.CompareAndSwap(false, true) {
		p.release()
	}
}

func (p *Pending) release() {
	if p.held.Add(-1) == 0 {
		p.end()
	}
}

// Answers reports whether q is the very query p runs: same partition,
// prefix, position, limit and direction.
func (p *Pending) Answers(q store.Query) bool { return p != nil && p.q == q }

// Result waits for the query and returns what it read, as store.Store's Query
// would have.
func (p *Pending) Result() ([]store.Item, error) {
	<-p.done
	return slices.Clone(p.items), p.err
}

// Lookup answers a read of k from what p read when k lies in the range p
// covered: its partition and prefix, past its start, and up to its last
// item unless it read to the end of the range (fewer items than its
// limit), so that a key there that p did not return is absent (a zero
// PK). False when k is outside that range or the query failed.
func (p *Pending) Lookup(k store.Key) (store.Item, bool) {
	q := p.q
	if k.PK != q.PK || !strings.HasPrefix(k.SK, q.Prefix) || q.After != "" && !past(k.SK, q.After, q.Desc) {
		return store.Item{}, false
	}
	<-p.done
	if p.err != nil {
		return store.Item{}, false
	}
	if n := len(p.items); n >= q.Limit && past(k.SK, p.items[n-1].SK, q.Desc) {
		return store.Item{}, false
	}
	for _, it := range p.items {
		if it.SK == k.SK {
			// The caller may change what it gets, as with a store's Get; the
			// same item may also be in Result's answer.
			it.Nums = maps.Clone(it.Nums)
			return it, true
		}
	}
	return store.Item{}, true
}

// past reports whether sort key sk comes after the key at in the walk's
// direction.
func past(sk, at string, desc bool) bool {
	if desc {
		return sk < at
	}
	return sk > at
}
