package store

import "context"

// Page reads up to limit records of one partition's prefix after q.After,
// decoding each item and keeping those keep accepts (nil keeps all). It
// queries on until the page is full or the prefix ends, so a filter that
// matches few records still fills the page; more tells whether kept
// records follow lastKey, the sort key to continue after. q.Limit is
// ignored. Store and decode errors come back as they are: callers decide
// how they fail closed.
func Page[T any](ctx context.Context, s Store, q Query, limit int, decode func(Item) (T, error), keep func(T) bool) (page []T, lastKey string, more bool, err error) {
	page = []T{}
	q.Limit = limit + 1
	for {
		items, err := s.Query(ctx, q)
		if err != nil {
			return nil, "", false, err
		}
		for _, it := range items {
			v, err := decode(it)
			if err != nil {
				return nil, "", false, err
			}
			if keep != nil && !keep(v) {
				continue
			}
			if len(page) == limit {
				return page, lastKey, true, nil
			}
			page = append(page, v)
			lastKey = it.SK
		}
		if len(items) < q.Limit {
			return page, lastKey, false, nil
		}
		q.After = items[len(items)-1].SK
	}
}
