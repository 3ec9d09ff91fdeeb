package store

import (
	"context"
	"maps"
	"slices"
	"strings"
)

// Pending is a query started before its caller asks for it: a list
// route's page query, started beside the request's admission batch so
// that the page costs no round trip of its own. Whoever started it hands
// its result to an identical query (Answers, Result) and reads of keys in
// the range it covered (Lookup), or drops it unread.
type Pending struct {
	q     Query
	done  chan struct{}
	items []Item
	err   error
}

// StartQuery runs q on s in a goroutine of its own. The query counts as
// a call in flight from now (WithRoundTrips), so the calls the caller
// makes while it runs overlap it: together they are one wait.
func StartQuery(ctx context.Context, s Store, q Query) *Pending {
	p := &Pending{q: q, done: make(chan struct{})}
	end := holdRoundTrip(ctx)
	go func() {
		defer close(p.done)
		defer end()
		p.items, p.err = s.Query(ctx, q)
	}()
	return p
}

// Answers reports whether q is the very query p runs: same partition,
// prefix, position, limit and direction.
func (p *Pending) Answers(q Query) bool { return p != nil && p.q == q }

// Result waits for the query and returns what it read, as Store.Query
// would have.
func (p *Pending) Result() ([]Item, error) {
	<-p.done
	return slices.Clone(p.items), p.err
}

// Lookup answers a read of k from what p read when k lies in the range p
// covered: its partition and prefix, past its start, and up to its last
// item unless it read to the end of the range (fewer items than its
// limit), so that a key there that p did not return is absent (a zero
// PK). False when k is outside that range or the query failed.
func (p *Pending) Lookup(k Key) (Item, bool) {
	q := p.q
	if k.PK != q.PK || !strings.HasPrefix(k.SK, q.Prefix) || q.After != "" && !past(k.SK, q.After, q.Desc) {
		return Item{}, false
	}
	<-p.done
	if p.err != nil {
		return Item{}, false
	}
	if n := len(p.items); n >= q.Limit && past(k.SK, p.items[n-1].SK, q.Desc) {
		return Item{}, false
	}
	for _, it := range p.items {
		if it.SK == k.SK {
			// The caller may change what it gets, as with Store.Get; the
			// same item may also be in Result's answer.
			it.Nums = maps.Clone(it.Nums)
			return it, true
		}
	}
	return Item{}, true
}

// past reports whether sort key sk comes after the key at in the walk's
// direction.
func past(sk, at string, desc bool) bool {
	if desc {
		return sk < at
	}
	return sk > at
}
