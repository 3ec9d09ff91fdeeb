package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

const cols = `pk, sk, v, d, n, ttl`

type scanner interface{ Scan(dest ...any) error }

func scan(r scanner) (store.Item, error) {
	var it store.Item
	var nums sql.NullString
	if err := r.Scan(&it.PK, &it.SK, &it.Version, &it.Data, &nums, &it.ExpiresAt); err != nil {
		return store.Item{}, err
	}
	if nums.Valid && nums.String != "" {
		var err error
		if it.Nums, err = decodeNums(nums.String); err != nil {
			return store.Item{}, fmt.Errorf("sqlite: numeric attributes of %s/%s: %w", it.PK, it.SK, err)
		}
	}
	return it, nil
}

// stmt is a prepared statement for tx, or for the pool when tx is nil.
func stmt(ctx context.Context, tx *sql.Tx, st *sql.Stmt) *sql.Stmt {
	if tx == nil {
		return st
	}
	return tx.StmtContext(ctx, st)
}

func (s *Store) get(ctx context.Context, tx *sql.Tx, k store.Key) (store.Item, bool, error) {
	it, err := scan(stmt(ctx, tx, s.getStmt).QueryRowContext(ctx, k.PK, k.SK))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Item{}, false, nil
	}
	if err != nil {
		return store.Item{}, false, fmt.Errorf("sqlite: get %s/%s: %w", k.PK, k.SK, err)
	}
	if it.Expired(s.now()) {
		return store.Item{}, false, nil
	}
	return it, true, nil
}

// Get reads one live item, from the store's cache when nothing has been
// committed since it was read (see cache).
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	defer roundtrip.Start(ctx)()
	v, err := s.cache.current(ctx)
	if err != nil {
		return store.Item{}, err
	}
	var held [1]store.Item
	if s.cache.lookup(v, []store.Key{k}, held[:]) == 1 {
		if held[0].Expired(s.now()) {
			return store.Item{}, store.ErrNotFound
		}
		return held[0], nil
	}
	it, ok, err := s.get(ctx, nil, k)
	if err != nil {
		return store.Item{}, err
	}
	if !ok {
		return store.Item{}, store.ErrNotFound
	}
	s.cache.fill(v, []store.Item{it})
	return it, nil
}

// GetMany reads several items in one statement, or from the store's
// cache when it holds them all and nothing has been committed since they
// were read (see cache). Like DynamoDB's BatchGetItem it is not a
// snapshot: each item is read live on its own.
func (s *Store) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	defer roundtrip.Start(ctx)()
	out := make([]store.Item, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	v, err := s.cache.current(ctx)
	if err != nil {
		return nil, err
	}
	if s.cache.lookup(v, keys, out) == len(keys) {
		now := s.now()
		for i := range out {
			if out[i].Expired(now) {
				out[i] = store.Item{}
			}
		}
		return out, nil
	}
	clear(out)
	if err := s.readMany(ctx, keys, out); err != nil {
		return nil, err
	}
	s.cache.fill(v, out)
	return out, nil
}

// readMany reads keys into out, leaving absent and expired items zero.
func (s *Store) readMany(ctx context.Context, keys []store.Key, out []store.Item) error {
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.PK, k.SK)
	}
	var rows *sql.Rows
	st, q, err := s.getManyStmt(len(keys))
	if err == nil && st != nil {
		rows, err = st.QueryContext(ctx, args...)
	} else if err == nil {
		rows, err = s.db.QueryContext(ctx, q, args...)
	}
	if err != nil {
		return fmt.Errorf("sqlite: get many: %w", err)
	}
	defer rows.Close()
	found := make(map[store.Key]store.Item, len(keys))
	now := s.now()
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return fmt.Errorf("sqlite: get many: %w", err)
		}
		if !it.Expired(now) {
			found[it.Key()] = it
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: get many: %w", err)
	}
	for i, k := range keys {
		out[i] = found[k]
	}
	return nil
}

// maxPreparedBatch is the largest batch whose statement is kept prepared;
// requests read a handful of keys ahead.
const maxPreparedBatch = 16

// getManyStmt is the statement reading n keys, prepared once per n up to
// maxPreparedBatch; a larger batch gets its SQL to run unprepared.
func (s *Store) getManyStmt(n int) (*sql.Stmt, string, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + cols + ` FROM items WHERE (pk, sk) IN (VALUES `)
	for i := range n {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
	}
	q.WriteString(")")
	if n > maxPreparedBatch {
		return nil, q.String(), nil
	}
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	if st := s.batchStmts[n]; st != nil {
		return st, "", nil
	}
	st, err := s.db.Prepare(q.String())
	if err != nil {
		return nil, "", err
	}
	s.batchStmts[n] = st
	return st, "", nil
}

// queryStmt is the prepared statement of a query's SQL: a query takes one
// of eight shapes (a prefix or not, a start or not, either order), each
// prepared once.
func (s *Store) queryStmt(q string) (*sql.Stmt, error) {
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	if st := s.queryStmts[q]; st != nil {
		return st, nil
	}
	st, err := s.db.Prepare(q)
	if err != nil {
		return nil, err
	}
	s.queryStmts[q] = st
	return st, nil
}

// prefixEnd is an upper bound above every key that starts with prefix.
func prefixEnd(prefix string) string { return prefix + "\U0010FFFF" }

// Query reads live items of one partition in sort-key order.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	defer roundtrip.Start(ctx)()
	if q.Limit <= 0 {
		return nil, errors.New("sqlite: query needs a positive limit")
	}
	v, err := s.cache.current(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now().Unix()
	if items, ok := s.cache.lookupPage(v, q, now); ok {
		return items, nil
	}
	out, err := s.query(ctx, q, now)
	if err != nil {
		return nil, err
	}
	s.cache.fillPage(v, q, now, out)
	return out, nil
}

// query reads the items q finds at now from the database.
func (s *Store) query(ctx context.Context, q store.Query, now int64) ([]store.Item, error) {
	where := `pk = ? AND (ttl = 0 OR ttl > ?)`
	args := []any{q.PK, now}
	if q.Prefix != "" {
		where += ` AND sk >= ? AND sk < ?`
		args = append(args, q.Prefix, prefixEnd(q.Prefix))
	}
	order := "ASC"
	if q.After != "" {
		if q.Desc {
			where += ` AND sk < ?`
		} else {
			where += ` AND sk > ?`
		}
		args = append(args, q.After)
	}
	if q.Desc {
		order = "DESC"
	}
	args = append(args, q.Limit)
	st, err := s.queryStmt(`SELECT ` + cols + ` FROM items WHERE ` + where + ` ORDER BY sk ` + order + ` LIMIT ?`)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query %s: %w", q.PK, err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: query %s: %w", q.PK, err)
	}
	defer rows.Close()
	var out []store.Item
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: query %s: %w", q.PK, err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: query %s: %w", q.PK, err)
	}
	return out, nil
}
