// Package sqlite is the embedded store: the store port over one SQLite file
// (pure Go, modernc.org/sqlite) in WAL mode, so that the local server and the
// CLI can open the same data directory at once. Writes run in IMMEDIATE
// transactions and evaluate conditions inside them, which gives the same
// all-or-nothing semantics as DynamoDB's TransactWriteItems.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

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
	// writes holds the turn of the write in progress (beginWrite).
	writes  chan struct{}
	batchMu sync.Mutex
	// path is the database file; also, what Close closes after it.
	path       string
	closeMu    sync.Mutex
	also       []io.Closer
	batchStmts [maxPreparedBatch + 1]*sql.Stmt
	queryStmts map[string]*sql.Stmt
	cache      *cache
	// checkpoints copies the write-ahead log into the database off the
	// writers' path (checkpoint.go); checkpointEvery and walLimit are its
	// settings (0: its defaults).
	checkpoints               *checkpointer
	checkpointEvery, walLimit int
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
	path := filepath.Join(dir, "store.db")
	// No automatic checkpoints: SQLite would run one, with an fsync, in
	// the commit of the writer that takes the log past 1000 pages, and
	// every writer waiting for its turn would wait for it too; the store's
	// checkpointer runs them beside the writers (checkpoint.go).
	dsn := "file:" + path +
		"?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=wal_autocheckpoint(0)&_txlock=immediate"
	return open(path, dsn, opts...)
}

func open(path, dsn string, opts ...Option) (*Store, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open: %w", err)
	}
	// Eight for requests, one held by the cache's watch, one by the
	// checkpointer.
	db.SetMaxOpenConns(10)
	db.SetMaxIdleConns(10)
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: schema: %w", err)
	}
	s := &Store{db: db, now: time.Now, path: path, writes: make(chan struct{}, 1), queryStmts: map[string]*sql.Stmt{}}
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
	if s.cache, err = newCache(db, path+"-shm"); err != nil {
		db.Close()
		return nil, err
	}
	if s.checkpoints, err = startCheckpoints(db, s.turn, s.checkpointEvery, s.walLimit); err != nil {
		s.cache.close()
		db.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return s, nil
}

// turn waits for the store's other writes in this process to end, in the
// order they came, and returns the end of this one's turn. Writers wait
// here rather than in SQLite's busy handler, whose sleeps (1 ms growing to
// 100 ms) let a writer wait hundreds of milliseconds while later ones took
// the lock: under load the change router and the webhook worker's claims
// waited behind the clients' writes for up to a second. Another process
// writing the same file is still waited for by the busy handler. Each turn
// that ends counts towards the next checkpoint.
func (s *Store) turn(ctx context.Context) (end func(), err error) {
	select {
	case s.writes <- struct{}{}:
		return func() { <-s.writes; s.checkpoints.wrote() }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sqlite: wait to write: %w", ctx.Err())
	}
}

// beginWrite begins a write transaction in its turn (turn); end rolls it
// back unless it was committed and ends the turn.
func (s *Store) beginWrite(ctx context.Context) (tx *sql.Tx, end func(), err error) {
	done, err := s.turn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if tx, err = s.db.BeginTx(ctx, nil); err != nil {
		done()
		return nil, nil, fmt.Errorf("sqlite: begin: %w", err)
	}
	return tx, func() { tx.Rollback(); done() }, nil
}

// Close closes the database, then what CloseWith handed over.
func (s *Store) Close() error {
	err := s.checkpoints.close()
	s.cache.close()
	err = errors.Join(err, s.db.Close())
	s.closeMu.Lock()
	also := s.also
	s.also = nil
	s.closeMu.Unlock()
	for _, c := range also {
		err = errors.Join(err, c.Close())
	}
	return err
}

// CloseWith has Close close c too: the embedded queue keeps its own file
// in the data directory and lives as long as the store that opened it.
func (s *Store) CloseWith(c io.Closer) {
	s.closeMu.Lock()
	s.also = append(s.also, c)
	s.closeMu.Unlock()
}

// Path is the store's database file.
func (s *Store) Path() string { return s.path }

// DB exposes the database to sibling packages of the embedded mode (the
// change-log tailer and the queues) that share its file.
func (s *Store) DB() *sql.DB { return s.db }
