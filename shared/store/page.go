package store

import "context"

// MaxScan is the most items one Page call reads, whatever the filter: a
// filter that matches nothing costs a bounded number of round trips, and
// the caller answers with what was found and a cursor to go on.
const MaxScan = 500

// scanChunk is the size of the queries that follow the first one: the
// first asks for limit+1 so an unfiltered page costs one round trip; the
// rest read larger chunks so a small limit does not mean many small reads.
const scanChunk = 100

// PageOf is one page of a keyset list: every list a service answers, and
// what Page reads.
type PageOf[T any] struct {
	// Items are the page's records, in the list's order.
	Items []T
	// Last is the sort key (or the list's own position) to continue
	// after; "" when the page read nothing.
	Last string
	// More tells whether records may follow Last.
	More bool
}

// MapPage is p with each item made into a U by f: a page of records
// answered as a page of their views.
func MapPage[T, U any](p PageOf[T], f func(T) U) PageOf[U] {
	out := PageOf[U]{Items: make([]U, len(p.Items)), Last: p.Last, More: p.More}
	for i, v := range p.Items {
		out.Items[i] = f(v)
	}
	return out
}

// Page reads up to limit records of one partition's prefix after q.After,
// decoding each item and keeping those keep accepts (nil keeps all). It
// queries on until the page is full, the prefix ends, or MaxScan items
// have been read. The page's More tells whether records may follow its
// Last, the sort key to continue after: the last kept record's when the
// page is full, the last read item's when the scan bound stopped it. A
// page may therefore be short, or empty, while More is true; its Items
// are never nil. q.Limit is ignored; without keep, the record after a
// full page is not decoded. Store and decode errors come back as
// they are: callers decide how they fail closed.
func Page[T any](ctx context.Context, s Store, q Query, limit int, decode func(Item) (T, error), keep func(T) bool) (PageOf[T], error) {
	return PageUntil(ctx, s, q, limit, decode, keep, "")
}

// PageUntil is Page that also ends, with More false, at the first item
// whose sort key is end or beyond it in q's direction; "" sets no end. An
// oldest-first list uses it to show nothing newer than a horizon: the
// items past it are neither returned nor stepped over, so a cursor or a
// position taken from the page resumes before them.
func PageUntil[T any](ctx context.Context, s Store, q Query, limit int, decode func(Item) (T, error), keep func(T) bool, end string) (PageOf[T], error) {
	p := PageOf[T]{Items: []T{}}
	q.Limit = limit + 1
	scanned := 0
	for {
		items, err := s.Query(ctx, q)
		if err != nil {
			return PageOf[T]{}, err
		}
		for _, it := range items {
			if end != "" && (!q.Desc && it.SK >= end || q.Desc && it.SK <= end) {
				return p, nil
			}
			if keep == nil && len(p.Items) == limit {
				// Unfiltered, the item after a full page only says that
				// more follow: it is not decoded.
				p.More = true
				return p, nil
			}
			v, err := decode(it)
			if err != nil {
				return PageOf[T]{}, err
			}
			if keep != nil && !keep(v) {
				p.Last = it.SK
				continue
			}
			if len(p.Items) == limit {
				p.More = true
				return p, nil
			}
			p.Items = append(p.Items, v)
			p.Last = it.SK
		}
		scanned += len(items)
		if len(items) < q.Limit {
			return p, nil
		}
		if scanned >= MaxScan {
			p.More = true
			return p, nil
		}
		q.After = items[len(items)-1].SK
		q.Limit = min(max(scanChunk, limit+1), MaxScan-scanned)
	}
}
