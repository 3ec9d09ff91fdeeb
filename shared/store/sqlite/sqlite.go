// Package sqlite is the embedded store: the store port over one SQLite file
// (pure Go, modernc.org/sqlite) in WAL mode, so that the local server and the
// CLI can open the same data directory at once. Writes run in IMMEDIATE
// transactions and evaluate conditions inside them, which gives the same
// all-or-nothing semantics as DynamoDB's TransactWriteItems.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/store"
	_ "modernc.org/sqlite" // the pure-Go driver
)

const schema = `
CREATE TABLE IF NOT EXISTS items (
	pk  TEXT    NOT NULL,
	sk  TEXT    NOT NULL,
	v   INTEGER NOT NULL DEFAULT 0,
	d   BLOB,
	n   TEXT,
	ttl INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_ttl ON items (ttl) WHERE ttl > 0;
CREATE TABLE IF NOT EXISTS changes (
	seq  INTEGER PRIMARY KEY AUTOINCREMENT,
	kind TEXT    NOT NULL,
	pk   TEXT    NOT NULL,
	sk   TEXT    NOT NULL,
	new  BLOB,
	old  BLOB
);
CREATE TABLE IF NOT EXISTS cursors (
	name TEXT PRIMARY KEY,
	seq  INTEGER NOT NULL
);
`

// Store is the embedded store.
type Store struct {
	db  *sql.DB
	now func() time.Time
	// onInsert is called after a commit that inserted an item under one
	// of insertPrefixes (OnInsert).
	onInsert       func()
	insertPrefixes []string
	// The statements every request runs, prepared once: parsing SQL was a
	// fifth of a read's CPU.
	getStmt, putStmt, deleteStmt, logStmt *sql.Stmt
	batchMu                               sync.Mutex
	batchStmts                            [maxPreparedBatch + 1]*sql.Stmt
}

// Option configures Open.
type Option func(*Store)

// WithClock sets the clock that decides which items have expired.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// OnInsert has the store call signal after each commit that inserted an
// item whose sort key starts with one of prefixes: the local server's
// change router waits on it, so that the work a new event (or job)
// starts is routed at once rather than on the router's next tick. signal
// must not block.
func OnInsert(prefixes []string, signal func()) Option {
	return func(s *Store) { s.onInsert, s.insertPrefixes = signal, prefixes }
}

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts ...Option) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: create data dir: %w", err)
	}
	dsn := "file:" + filepath.Join(dir, "store.db") +
		"?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	return open(dsn, opts...)
}

func open(dsn string, opts ...Option) (*Store, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: schema: %w", err)
	}
	s := &Store{db: db, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	for _, p := range []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.getStmt, `SELECT ` + cols + ` FROM items WHERE pk = ? AND sk = ?`},
		{&s.putStmt, putSQL},
		{&s.deleteStmt, `DELETE FROM items WHERE pk = ? AND sk = ?`},
		{&s.logStmt, `INSERT INTO changes (kind, pk, sk, new, old) VALUES (?, ?, ?, ?, ?)`},
	} {
		if *p.dst, err = db.Prepare(p.sql); err != nil {
			db.Close()
			return nil, fmt.Errorf("sqlite: prepare: %w", err)
		}
	}
	return s, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the database to sibling packages of the embedded mode (the
// change-log tailer and the queues) that share its file.
func (s *Store) DB() *sql.DB { return s.db }

const cols = `pk, sk, v, d, n, ttl`

type scanner interface{ Scan(dest ...any) error }

func scan(r scanner) (store.Item, error) {
	var it store.Item
	var nums sql.NullString
	if err := r.Scan(&it.PK, &it.SK, &it.Version, &it.Data, &nums, &it.ExpiresAt); err != nil {
		return store.Item{}, err
	}
	if nums.Valid && nums.String != "" {
		if err := json.Unmarshal([]byte(nums.String), &it.Nums); err != nil {
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

// Get reads one live item.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	defer store.StartRoundTrip(ctx)()
	it, ok, err := s.get(ctx, nil, k)
	if err != nil {
		return store.Item{}, err
	}
	if !ok {
		return store.Item{}, store.ErrNotFound
	}
	return it, nil
}

// GetMany reads several items in one statement. Like DynamoDB's
// BatchGetItem it is not a snapshot: each item is read live on its own.
func (s *Store) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	defer store.StartRoundTrip(ctx)()
	out := make([]store.Item, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
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
		return nil, fmt.Errorf("sqlite: get many: %w", err)
	}
	defer rows.Close()
	found := make(map[store.Key]store.Item, len(keys))
	now := s.now()
	for rows.Next() {
		it, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: get many: %w", err)
		}
		if !it.Expired(now) {
			found[it.Key()] = it
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: get many: %w", err)
	}
	for i, k := range keys {
		out[i] = found[k]
	}
	return out, nil
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

// prefixEnd is an upper bound above every key that starts with prefix.
func prefixEnd(prefix string) string { return prefix + "\U0010FFFF" }

// Query reads live items of one partition in sort-key order.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	defer store.StartRoundTrip(ctx)()
	if q.Limit <= 0 {
		return nil, errors.New("sqlite: query needs a positive limit")
	}
	where := `pk = ? AND (ttl = 0 OR ttl > ?)`
	args := []any{q.PK, s.now().Unix()}
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
	rows, err := s.db.QueryContext(ctx, `SELECT `+cols+` FROM items WHERE `+where+` ORDER BY sk `+order+` LIMIT ?`, args...)
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
	defer store.StartRoundTrip(ctx)()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer tx.Rollback()

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
	defer store.StartRoundTrip(ctx)()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("sqlite: begin: %w", err)
	}
	defer tx.Rollback()
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
	rows, err := s.db.QueryContext(ctx, `SELECT seq, kind, pk, sk, new, old FROM changes WHERE seq > ? ORDER BY seq LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: read changes: %w", err)
	}
	defer rows.Close()
	var out []store.Change
	for rows.Next() {
		var c store.Change
		var kind string
		var newJSON, oldJSON []byte
		if err := rows.Scan(&c.Seq, &kind, &c.Key.PK, &c.Key.SK, &newJSON, &oldJSON); err != nil {
			return nil, fmt.Errorf("sqlite: read changes: %w", err)
		}
		c.Kind = store.ChangeKind(kind)
		for _, x := range []struct {
			raw []byte
			dst **store.Item
		}{{newJSON, &c.New}, {oldJSON, &c.Old}} {
			if len(x.raw) > 0 {
				var it store.Item
				if err := json.Unmarshal(x.raw, &it); err != nil {
					return nil, fmt.Errorf("sqlite: decode change %d: %w", c.Seq, err)
				}
				*x.dst = &it
			}
		}
		out = append(out, c)
	}
	return out, rows.Err()
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
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer tx.Rollback()
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
	res, err := s.db.ExecContext(ctx, `DELETE FROM items WHERE ttl > 0 AND ttl <= ?`, s.now().Unix())
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep: %w", err)
	}
	return res.RowsAffected()
}
