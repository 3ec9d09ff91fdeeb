// Package sqlitequeue is the embedded work queue: messages are rows of the
// embedded store's database, received with a visibility timeout like SQS,
// and moved to a dead-letter state after too many receives, so a crash or a
// restart of the local server loses no work.
package sqlitequeue

import (
	"context"
	"database/sql"
	"fmt"
	"time"

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
	// Visibility is how long a received message stays hidden.
	Visibility time.Duration
	// MaxReceives is how many receives a message gets before it is dead.
	MaxReceives int
}

// New prepares the queue tables in db.
func New(db *sql.DB, now func() time.Time) (*Queue, error) {
	if _, err := db.Exec(schema); err != nil {
		return nil, fmt.Errorf("sqlitequeue: schema: %w", err)
	}
	return &Queue{db: db, now: now, Visibility: 30 * time.Second, MaxReceives: 10}, nil
}

// Send enqueues a message.
func (q *Queue) Send(ctx context.Context, name string, body []byte, delay time.Duration) error {
	if delay > queue.MaxDelay {
		delay = queue.MaxDelay
	}
	_, err := q.db.ExecContext(ctx, `INSERT INTO queue_messages (id, queue, body, visible_at) VALUES (?, ?, ?, ?)`,
		ids.New("msg"), name, body, q.now().Add(delay).UnixMilli())
	if err != nil {
		return fmt.Errorf("sqlitequeue: send to %s: %w", name, err)
	}
	return nil
}

// Receive takes up to max visible messages of a queue and hides them for
// the visibility timeout. Messages past their last receive are marked dead
// instead of returned.
func (q *Queue) Receive(ctx context.Context, name string, max int) ([]queue.Message, error) {
	tx, err := q.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: begin: %w", err)
	}
	defer tx.Rollback()
	now := q.now()
	rows, err := tx.QueryContext(ctx, `SELECT id, body, receives FROM queue_messages
		WHERE queue = ? AND dead = 0 AND visible_at <= ? ORDER BY visible_at LIMIT ?`, name, now.UnixMilli(), max)
	if err != nil {
		return nil, fmt.Errorf("sqlitequeue: receive from %s: %w", name, err)
	}
	var out []queue.Message
	for rows.Next() {
		m := queue.Message{Queue: name}
		if err := rows.Scan(&m.ID, &m.Body, &m.Receives); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlitequeue: receive from %s: %w", name, err)
		}
		m.Receives++
		out = append(out, m)
	}
	rows.Close()
	kept := out[:0]
	for _, m := range out {
		if m.Receives > q.MaxReceives {
			if _, err := tx.ExecContext(ctx, `UPDATE queue_messages SET dead = 1 WHERE id = ?`, m.ID); err != nil {
				return nil, fmt.Errorf("sqlitequeue: dead-letter %s: %w", m.ID, err)
			}
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE queue_messages SET receives = ?, visible_at = ? WHERE id = ?`,
			m.Receives, now.Add(q.Visibility).UnixMilli(), m.ID); err != nil {
			return nil, fmt.Errorf("sqlitequeue: hide %s: %w", m.ID, err)
		}
		kept = append(kept, m)
	}
	return kept, tx.Commit()
}

// Delete removes a handled message.
func (q *Queue) Delete(ctx context.Context, id string) error {
	if _, err := q.db.ExecContext(ctx, `DELETE FROM queue_messages WHERE id = ?`, id); err != nil {
		return fmt.Errorf("sqlitequeue: delete %s: %w", id, err)
	}
	return nil
}

// Retry makes a message visible again after delay, keeping its receives.
func (q *Queue) Retry(ctx context.Context, id string, delay time.Duration, cause error) error {
	msg := ""
	if cause != nil {
		msg = cause.Error()
	}
	if _, err := q.db.ExecContext(ctx, `UPDATE queue_messages SET visible_at = ?, error = ? WHERE id = ?`,
		q.now().Add(delay).UnixMilli(), msg, id); err != nil {
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
