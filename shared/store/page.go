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

// Page reads up to limit records of one partition's prefix after q.After,
// decoding each item and keeping those keep accepts (nil keeps all). It
// queries on until the page is full, the prefix ends, or MaxScan items
// have been read. more tells whether records may follow lastKey, the sort
// key to continue after: the last kept record's when the page is full, the
// last read item's when the scan bound stopped it. A page may therefore be
// short, or empty, while more is true. q.Limit is ignored. Store and
// decode errors come back as they are: callers decide how they fail
// closed.
func Page[T any](ctx context.Context, s Store, q Query, limit int, decode func(Item) (T, error), keep func(T) bool) (page []T, lastKey string, more bool, err error) {
	return PageUntil(ctx, s, q, limit, decode, keep, "")
}

// PageUntil is Page that also ends, with more false, at the first item
// whose sort key is end or beyond it in q's direction; "" sets no end. An
// oldest-first list uses it to show nothing newer than a horizon: the
// items past it are neither returned nor stepped over, so a cursor or a
// position taken from the page resumes before them.
func PageUntil[T any](ctx context.Context, s Store, q Query, limit int, decode func(Item) (T, error), keep func(T) bool, end string) (page []T, lastKey string, more bool, err error) {
	page = []T{}
	q.Limit = limit + 1
	scanned := 0
	for {
		items, err := s.Query(ctx, q)
		if err != nil {
			return nil, "", false, err
		}
		for _, it := range items {
			if end != "" && (!q.Desc && it.SK >= end || q.Desc && it.SK <= end) {
				return page, lastKey, false, nil
			}
			v, err := decode(it)
			if err != nil {
				return nil, "", false, err
			}
			if keep != nil && !keep(v) {
				lastKey = it.SK
				continue
			}
			if len(page) == limit {
				return page, lastKey, true, nil
			}
			page = append(page, v)
			lastKey = it.SK
		}
		scanned += len(items)
		if len(items) < q.Limit {
			return page, lastKey, false, nil
		}
		if scanned >= MaxScan {
			return page, lastKey, true, nil
		}
		q.After = items[len(items)-1].SK
		q.Limit = min(max(scanChunk, limit+1), MaxScan-scanned)
	}
}
