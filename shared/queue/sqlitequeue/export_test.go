package sqlitequeue

import "context"

// DurableCommits counts the sends committed with an fsync (Durable).
func (q *Queue) DurableCommits() int64 { return q.syncedCommits.Load() }

// DurableSync is PRAGMA synchronous on the connection of durable sends
// (2 is FULL).
func (q *Queue) DurableSync(ctx context.Context) (int, error) {
	var n int
	err := q.synced.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&n)
	return n, err
}
