// Package sqlitequeue is the embedded work queue: messages are rows of a
// SQLite database (its own file beside the embedded store's, Open),
// received with a visibility timeout like SQS, and moved to a dead-letter
// state after too many receives, so a crash or a restart of the local
// server loses no work.
package sqlitequeue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // the pure-Go driver

	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/queue"
)

const schema = `
CREATE TABLE IF NOT EXISTS queue_messages (
	id         TEXT    PRIMARY KEY,
	queue      TEXT    NOT NULL,
	body       BLOB    NOT NULL,
	visible_at INTEGER NOT NULL,
	receives   INTEGER NOT NULL DEFAULT 0,
	dead       INTEGER NOT NULL DEFAULT 0,
	error      TEXT
);
CREATE INDEX IF NOT EXISTS queue_ready ON queue_messages (queue, dead, visible_at);
`

// Queue is the embedded queue over a database.
type Queue struct {
	db  *sql.DB
	now func() time.Time
	// own is set when the queue opened db itself (Open) and closes it.
	own bool
	// writes holds the turn of the write transaction in progress in this
	// process: writers wait for it in the order they came, not in
	// SQLite's busy handler, whose sleeps (1 ms growing to 100 ms) made
	// the wait for the file's write lock hundreds of milliseconds under
	// load.
	writes chan struct{}
	// synced is the connection that commits durable sends (Durable), with
	// synchronous=FULL; nil on New's shared database. syncedCommits counts
	// its commits.
	synced        *sql.Conn
	syncedCommits atomic.Int64
	// Visibility is how long a received message stays hidden.
	Visibility time.Duration
	// MaxReceives is how many receives a message gets before it is dead.
	MaxReceives int
	// Durable names the queues whose sends must outlive a power loss or an
	// OS crash, not only a crash of the process: a batch with a message
	// for one of them is committed with an fsync of the file (Open's
	// queues only). The file is otherwise synchronous=NORMAL, like the
	// store's, so its last commits can be lost with the machine while the
	// change router's cursor, in the store's file, is already past them.
	Durable func(queue string) bool
}

// New prepares the queue tables in db.
func New(db *sql.DB, now func() time.Time) (*Queue, error) {
	if _, err := db.Exec(schema); err != nil {
		return nil, fmt.Errorf("sqlitequeue: schema: %w", err)
	}
	return &Queue{db: db, now: now, writes: make(chan struct{}, 1), Visibility: 30 * time.Second, MaxReceives: 10}, nil
}

// Open opens (creating if needed) a queue in its own database file at
// path, in WAL mode like the store's: its writes never wait for the
// store's write lock, nor the store's for its. Close closes the file.
func Open(path string, now func() time.Time) (*Queue, error) {
	db, err := sql.Open("sqlite", "file:"+path+
		"?_pragma=busy_timeout(15000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: open %s: %w", path, err)
	}
	// Four for the queue's work, one held for durable sends.
	db.SetMaxOpenConns(5)
	db.SetMaxIdleConns(5)
	q, err := New(db, now)
	if err != nil {
		db.Close()
		return nil, err
	}
	q.own = true
	ctx := context.Background()
	if q.synced, err = db.Conn(ctx); err == nil {
		_, err = q.synced.ExecContext(ctx, `PRAGMA synchronous = FULL`)
	}
	if err != nil {
		q.Close()
		return nil, fmt.Errorf("sqlitequeue: open %s: durable sends: %w", path, err)
	}
	return q, nil
}

// Close closes the queue's database when Open opened it.
func (q *Queue) Close() error {
	if !q.own {
		return nil
	}
	var err error
	if q.synced != nil {
		err = q.synced.Close()
	}
	return errors.Join(err, q.db.Close())
}

// Adopt moves into q the messages that from holds in a queue table of its
// own (data directories made before the queue had its own file kept their
// messages in the store's database), then drops that table. A crash
// between the two adopts them again: a message may be handled twice, as
// after any crash, and none is lost.
func (q *Queue) Adopt(ctx context.Context, from *sql.DB) (int, error) {
	var name string
	err := from.QueryRowContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'queue_messages'`).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("sqlitequeue: adopt: %w", err)
	}
	rows, err := from.QueryContext(ctx, `SELECT id, queue, body, visible_at, receives, dead, error FROM queue_messages`)
	if err != nil {
		return 0, fmt.Errorf("sqlitequeue: adopt: %w", err)
	}
	type row struct {
		id, queue         string
		body              []byte
		visible, receives int64
		dead              int
		cause             sql.NullString
	}
	var all []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.id, &r.queue, &r.body, &r.visible, &r.receives, &r.dead, &r.cause); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlitequeue: adopt: %w", err)
		}
		all = append(all, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlitequeue: adopt: %w", err)
	}
	err = q.write(ctx, func(tx *sql.Tx) error {
		for _, r := range all {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO queue_messages (id, queue, body, visible_at, receives, dead, error)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, r.id, r.queue, r.body, r.visible, r.receives, r.dead, r.cause); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlitequeue: adopt: %w", err)
	}
	if _, err := from.ExecContext(ctx, `DROP TABLE queue_messages`); err != nil {
		return len(all), fmt.Errorf("sqlitequeue: adopt: drop the old table: %w", err)
	}
	return len(all), nil
}

// write runs f in a write transaction, in turn with the queue's other
// writes.
func (q *Queue) write(ctx context.Context, f func(tx *sql.Tx) error) error {
	return q.writeOn(ctx, false, f)
}

// writeOn is write; a durable one commits on the synchronous=FULL
// connection, whose commit syncs the write-ahead log (and so every commit
// before it) to disk.
func (q *Queue) writeOn(ctx context.Context, durable bool, f func(tx *sql.Tx) error) error {
	select {
	case q.writes <- struct{}{}:
		defer func() { <-q.writes }()
	case <-ctx.Done():
		return ctx.Err()
	}
	var tx *sql.Tx
	var err error
	if durable {
		tx, err = q.synced.BeginTx(ctx, nil)
	} else {
		tx, err = q.db.BeginTx(ctx, nil)
	}
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if durable {
		q.syncedCommits.Add(1)
	}
	return nil
}

// durable says whether a batch must be committed durably (Durable).
func (q *Queue) durable(msgs []queue.Outgoing) bool {
	if q.synced == nil || q.Durable == nil {
		return false
	}
	for _, m := range msgs {
		if q.Durable(m.Queue) {
			return true
		}
	}
	return false
}

// Send enqueues a message.
func (q *Queue) Send(ctx context.Context, name string, body []byte, delay time.Duration) error {
	return q.SendBatch(ctx, []queue.Outgoing{{Queue: name, Body: body, Delay: delay}})
}

// SendBatch enqueues messages in one transaction: all are sent or none.
func (q *Queue) SendBatch(ctx context.Context, msgs []queue.Outgoing) error {
	if len(msgs) == 0 {
		return nil
	}
	now := q.now()
	err := q.writeOn(ctx, q.durable(msgs), func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO queue_messages (id, queue, body, visible_at) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, m := range msgs {
			if _, err := st.ExecContext(ctx, ids.New("msg"), m.Queue, m.Body, now.Add(min(m.Delay, queue.MaxDelay)).UnixMilli()); err != nil {
				return fmt.Errorf("to %s: %w", m.Queue, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitequeue: send: %w", err)
	}
	return nil
}

// Receive takes up to max visible messages of a queue and hides them for
// the visibility timeout. Messages past their last receive are marked dead
// instead of returned.
func (q *Queue) Receive(ctx context.Context, name string, max int) ([]queue.Message, error) {
	var kept []queue.Message
	err := q.write(ctx, func(tx *sql.Tx) error {
		now := q.now()
		rows, err := tx.QueryContext(ctx, `SELECT id, body, receives FROM queue_messages
			WHERE queue = ? AND dead = 0 AND visible_at <= ? ORDER BY visible_at LIMIT ?`, name, now.UnixMilli(), max)
		if err != nil {
			return err
		}
		var out []queue.Message
		for rows.Next() {
			m := queue.Message{Queue: name}
			if err := rows.Scan(&m.ID, &m.Body, &m.Receives); err != nil {
				rows.Close()
				return err
			}
			m.Receives++
			out = append(out, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, m := range out {
			if m.Receives > q.MaxReceives {
				if _, err := tx.ExecContext(ctx, `UPDATE queue_messages SET dead = 1 WHERE id = ?`, m.ID); err != nil {
					return fmt.Errorf("dead-letter %s: %w", m.ID, err)
				}
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE queue_messages SET receives = ?, visible_at = ? WHERE id = ?`,
				m.Receives, now.Add(q.Visibility).UnixMilli(), m.ID); err != nil {
				return fmt.Errorf("hide %s: %w", m.ID, err)
			}
			kept = append(kept, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: receive from %s: %w", name, err)
	}
	return kept, nil
}

// Delete removes a handled message.
func (q *Queue) Delete(ctx context.Context, id string) error {
	return q.DeleteBatch(ctx, []string{id})
}

// DeleteBatch removes handled messages in one transaction.
func (q *Queue) DeleteBatch(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	err := q.write(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `DELETE FROM queue_messages WHERE id = ?`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, id := range ids {
			if _, err := st.ExecContext(ctx, id); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlitequeue: delete: %w", err)
	}
	return nil
}

// Retry makes a message visible again after delay, keeping its receives.
func (q *Queue) Retry(ctx context.Context, id string, delay time.Duration, cause error) error {
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	err := q.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ?, error = ? WHERE id = ?`,
			q.now().Add(delay).UnixMilli(), msg, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlitequeue: retry %s: %w", id, err)
	}
	return nil
}

// Dead lists the dead-lettered messages of a queue, for operators.
func (q *Queue) Dead(ctx context.Context, name string) ([]queue.Message, error) {
	rows, err := q.db.QueryContext(ctx, `SELECT id, body, receives FROM queue_messages WHERE queue = ? AND dead = 1 ORDER BY id`, name)
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: dead of %s: %w", name, err)
	}
	defer rows.Close()
	var out []queue.Message
	for rows.Next() {
		m := queue.Message{Queue: name}
		if err := rows.Scan(&m.ID, &m.Body, &m.Receives); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Pending counts the live (not dead) messages of a queue.
func (q *Queue) Pending(ctx context.Context, name string) (int, error) {
	var n int
	err := q.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM queue_messages WHERE queue = ? AND dead = 0`, name).Scan(&n)
	return n, err
}

// Work receives and handles the visible messages of a queue once: handled
// ones are deleted, failed ones retried after their delay or the
// visibility timeout. It returns how many messages it handled.
func (q *Queue) Work(ctx context.Context, name string, max int, h queue.Handler) (int, error) {
	msgs, err := q.Receive(ctx, name, max)
	if err != nil {
		return 0, err
	}
	for _, m := range msgs {
		if herr := h(ctx, m); herr != nil {
			delay, ok := queue.DelayOf(herr)
			if !ok {
				delay = q.Visibility
			}
			if err := q.Retry(ctx, m.ID, delay, herr); err != nil {
				return 0, err
			}
			continue
		}
		if err := q.Delete(ctx, m.ID); err != nil {
			return 0, err
		}
	}
	return len(msgs), nil
}
