package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/moku/sellerapi/shared/store"
)

// logChange appends a write to the change log, as DynamoDB Streams would
// report it, in the same transaction as the write.
func (s *Store) logChange(ctx context.Context, tx *sql.Tx, k store.Key, written *store.Item, old store.Item, existed bool) error {
	kind := store.Inserted
	switch {
	case written == nil && !existed:
		return nil // deleting nothing changes nothing
	case written == nil:
		kind = store.Removed
	case existed:
		kind = store.Modified
	}
	var newJSON, oldJSON []byte
	var err error
	if written != nil {
		if newJSON, err = json.Marshal(written); err != nil {
			return fmt.Errorf("sqlite: log change: %w", err)
		}
	}
	if existed {
		if oldJSON, err = json.Marshal(old); err != nil {
			return fmt.Errorf("sqlite: log change: %w", err)
		}
	}
	if _, err := tx.StmtContext(ctx, s.logStmt).ExecContext(ctx, string(kind), k.PK, k.SK, newJSON, oldJSON); err != nil {
		return fmt.Errorf("sqlite: log change: %w", err)
	}
	return nil
}

// Changes reads the change log after seq, oldest first. Writes made by
// Increment (rate windows and other counters) are not logged.
func (s *Store) Changes(ctx context.Context, after int64, limit int) ([]store.Change, error) {
	out, _, _, err := s.ChangesOf(ctx, after, limit, nil)
	return out, err
}

// ChangesOf reads up to limit changes after seq, oldest first, and returns
// those keep accepts, how many it read and the position of the last: keep
// sees each change's position, kind and key only, and the changes it
// refuses are read past without decoding their items (the change router
// is shown inserts of events and jobs, a few of each adjustment's
// changes). A nil keep accepts every change.
func (s *Store) ChangesOf(ctx context.Context, after int64, limit int, keep func(store.Change) bool) (kept []store.Change, read int, last int64, err error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, pk, sk, new, old FROM changes WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, 0, after, fmt.Errorf("sqlite: read changes: %w", err)
	}
	defer rows.Close()
	last = after
	for rows.Next() {
		var c store.Change
		var kind string
		var newJSON, oldJSON sql.RawBytes
		if err := rows.Scan(&c.Seq, &kind, &c.Key.PK, &c.Key.SK, &newJSON, &oldJSON); err != nil {
			return nil, 0, after, fmt.Errorf("sqlite: read changes: %w", err)
		}
		c.Kind = store.ChangeKind(kind)
		read, last = read+1, c.Seq
		if keep != nil && !keep(c) {
			continue
		}
		for _, x := range []struct {
			raw []byte
			dst **store.Item
		}{{newJSON, &c.New}, {oldJSON, &c.Old}} {
			if len(x.raw) > 0 {
				var it store.Item
				if err := json.Unmarshal(x.raw, &it); err != nil {
					return nil, 0, after, fmt.Errorf("sqlite: decode change %d: %w", c.Seq, err)
				}
				*x.dst = &it
			}
		}
		kept = append(kept, c)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, after, fmt.Errorf("sqlite: read changes: %w", err)
	}
	return kept, read, last, nil
}

// Cursor reads a named position in the change log (0 when unset).
func (s *Store) Cursor(ctx context.Context, name string) (int64, error) {
	var seq int64
	err := s.db.QueryRowContext(ctx, `SELECT seq FROM cursors WHERE name = ?`, name).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlite: read cursor %s: %w", name, err)
	}
	return seq, nil
}

// Advance moves a named cursor to seq and drops the changes every cursor
// has passed, like a stream's retention.
func (s *Store) Advance(ctx context.Context, name string, seq int64) error {
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer end()
	if _, err := tx.ExecContext(ctx, `INSERT INTO cursors (name, seq) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET seq = excluded.seq`, name, seq); err != nil {
		return fmt.Errorf("sqlite: advance %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM changes WHERE seq <= (SELECT MIN(seq) FROM cursors)`); err != nil {
		return fmt.Errorf("sqlite: trim changes: %w", err)
	}
	return tx.Commit()
}

// Sweep deletes expired items, as DynamoDB's TTL does eventually.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	end, err := s.turn(ctx)
	if err != nil {
		return 0, err
	}
	defer end()
	res, err := s.db.ExecContext(ctx, `DELETE FROM items WHERE ttl > 0 AND ttl <= ?`, s.now().Unix())
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep: %w", err)
	}
	return res.RowsAffected()
}
