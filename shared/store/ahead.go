package store

import "context"

// Pending is a query started before its caller asks for it: a list
// route's first page query, started beside the request's admission batch
// so that the page costs no round trip of its own. Whoever started it
// hands its result to at most one identical query (see Take), or drops it
// unread.
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
	return p.items, p.err
}
