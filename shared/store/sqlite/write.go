package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// holds evaluates a condition against the live item (ok=false when absent).
func holds(c store.Cond, it store.Item, ok bool) bool {
	if c.Absent && ok {
		return false
	}
	if (c.Exists || c.HasVersion || len(c.Bounds) > 0) && !ok {
		return false
	}
	if c.HasVersion && it.Version != c.Version {
		return false
	}
	for _, b := range c.Bounds {
		if !b.Holds(it.Nums[b.Attr]) {
			return false
		}
	}
	return true
}

func encodeNums(n map[string]int64) (any, error) {
	if len(n) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

const putSQL = `INSERT INTO items (pk, sk, v, d, n, ttl) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (pk, sk) DO UPDATE SET v = excluded.v, d = excluded.d, n = excluded.n, ttl = excluded.ttl`

func (s *Store) put(ctx context.Context, tx *sql.Tx, it store.Item) error {
	nums, err := encodeNums(it.Nums)
	if err != nil {
		return err
	}
	_, err = tx.StmtContext(ctx, s.putStmt).ExecContext(ctx, it.PK, it.SK, it.Version, it.Data, nums, it.ExpiresAt)
	return err
}

// Transact applies the operations in one IMMEDIATE transaction.
func (s *Store) Transact(ctx context.Context, ops ...store.Op) error {
	if err := store.Validate(ops); err != nil {
		return err
	}
	defer roundtrip.Start(ctx)()
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer end()

	current := make([]store.Item, len(ops))
	live := make([]bool, len(ops))
	signal := false
	var failed []int
	for i, op := range ops {
		it, ok, err := s.get(ctx, tx, op.Item.Key())
		if err != nil {
			return err
		}
		current[i], live[i] = it, ok
		if !holds(op.Cond, it, ok) {
			failed = append(failed, i)
		}
	}
	if len(failed) > 0 {
		return &store.ConditionError{Failed: failed}
	}
	for i, op := range ops {
		k := op.Item.Key()
		var written *store.Item
		switch op.Kind {
		case store.OpPut:
			err = s.put(ctx, tx, op.Item)
			written = &op.Item
		case store.OpDelete:
			_, err = tx.StmtContext(ctx, s.deleteStmt).ExecContext(ctx, k.PK, k.SK)
		case store.OpAdd:
			it := current[i]
			if !live[i] {
				it = store.Item{PK: k.PK, SK: k.SK}
			}
			it.Nums = addDeltas(it.Nums, op.Deltas)
			if op.Item.ExpiresAt != 0 {
				it.ExpiresAt = op.Item.ExpiresAt
			}
			if op.Item.Data != nil {
				it.Data = op.Item.Data
			}
			if op.Item.Version != 0 {
				it.Version = op.Item.Version
			}
			err = s.put(ctx, tx, it)
			written = &it
		case store.OpCheck:
			continue
		}
		if err != nil {
			return fmt.Errorf("sqlite: write %s/%s: %w", k.PK, k.SK, err)
		}
		if err := s.logChange(ctx, tx, k, written, current[i], live[i]); err != nil {
			return err
		}
		signal = signal || written != nil && !live[i] && s.signals(k.SK)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	if signal {
		s.onInsert()
	}
	return nil
}

// signals tells whether inserting an item under sk calls OnInsert's signal.
func (s *Store) signals(sk string) bool {
	if s.onInsert == nil {
		return false
	}
	for _, p := range s.insertPrefixes {
		if strings.HasPrefix(sk, p) {
			return true
		}
	}
	return false
}

func addDeltas(nums, deltas map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(nums)+len(deltas))
	for k, v := range nums {
		out[k] = v
	}
	for k, d := range deltas {
		out[k] += d
	}
	return out
}

// Increment adds delta to a counter if its current value is below below.
func (s *Store) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	if err := store.ValidAttr(attr); err != nil {
		return 0, err
	}
	defer roundtrip.Start(ctx)()
	tx, end, err := s.beginWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer end()
	it, ok, err := s.get(ctx, tx, k)
	if err != nil {
		return 0, err
	}
	if !ok {
		it = store.Item{PK: k.PK, SK: k.SK, ExpiresAt: expiresAt}
	}
	if it.Nums[attr] >= below {
		return 0, &store.ConditionError{Failed: []int{0}}
	}
	it.Nums = addDeltas(it.Nums, map[string]int64{attr: delta})
	if err := s.put(ctx, tx, it); err != nil {
		return 0, fmt.Errorf("sqlite: increment %s/%s: %w", k.PK, k.SK, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("sqlite: commit: %w", err)
	}
	return it.Nums[attr], nil
}
