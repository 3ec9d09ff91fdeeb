package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"time"
)

// The checkpointer's defaults: a passive checkpoint after every 50 write
// turns (an API write adds about 20 pages to the log, so about what
// SQLite's own 1000-page threshold did), and the log truncated, in the
// writers' turn, once it holds 16384 pages (64 MiB of 4 KiB pages).
const (
	defaultCheckpointEvery = 50
	defaultWALLimit        = 16384
)

// busyWait bounds how long a truncating checkpoint, which holds the
// writers' turn, waits for readers still using the log.
const busyWait = 100 * time.Millisecond

// checkpointer copies the write-ahead log into the database off the
// writers' path. SQLite's automatic checkpoint (wal_autocheckpoint) copies
// it, with an fsync, inside the COMMIT of whichever writer takes the log
// past 1000 pages: that writer, and every writer waiting for its turn
// behind it, waited 10-90 ms, once every 50 or so requests. The store
// opens its connections with wal_autocheckpoint(0) and hands that work to
// a checkpointer instead.
//
// After every `every` write turns (wrote) it runs a PASSIVE checkpoint on a
// connection of its own: it copies what it can of the log into the
// database without waiting for readers or writers, so writers go on
// committing meanwhile. A passive checkpoint never resets the log while
// writers keep appending to it (SQLite restarts the log only when a
// writer begins after everything in it was copied), so under sustained
// writes the log would grow without end; once it holds limit pages the
// checkpointer takes the writers' turn and runs a TRUNCATE checkpoint,
// which waits for readers (up to 100 ms), copies the rest and empties the
// log. The log so stays under about limit pages plus what the writes made
// while a checkpoint runs add, as long as no reader holds one snapshot
// for longer (a reader on an old snapshot stops every checkpoint, SQLite's
// own included).
type checkpointer struct {
	conn  *sql.Conn
	turn  func(context.Context) (func(), error)
	every int64
	limit int64

	writes atomic.Int64
	wake   chan struct{}
	stop   context.CancelFunc
	done   chan struct{}
	// failed holds the last background checkpoint's error, if it failed
	// (close reports it).
	failed atomic.Pointer[error]
	// passive and truncated count the checkpoints run.
	passive, truncated atomic.Int64
}

// startCheckpoints starts checkpointing db, which its writers opened with
// wal_autocheckpoint(0). turn takes the writers' turn in this process (the
// returned function ends it); every and limit of 0 mean the defaults.
func startCheckpoints(db *sql.DB, turn func(context.Context) (func(), error), every, limit int) (*checkpointer, error) {
	if every <= 0 {
		every = defaultCheckpointEvery
	}
	if limit <= 0 {
		limit = defaultWALLimit
	}
	ctx, stop := context.WithCancel(context.Background())
	conn, err := db.Conn(ctx)
	if err == nil {
		if _, err = conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, busyWait.Milliseconds())); err != nil {
			discard(conn)
		}
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("sqlite: checkpoint connection: %w", err)
	}
	c := &checkpointer{conn: conn, turn: turn, every: int64(every), limit: int64(limit),
		wake: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

// wrote counts a write turn that ended; every Every of them wake the
// checkpointer. It never blocks.
func (c *checkpointer) wrote() {
	if c.writes.Add(1)%c.every != 0 {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	for {
		select {
		case <-c.wake:
		case <-ctx.Done():
			return
		}
		switch err := c.checkpoint(ctx); {
		case err == nil:
			c.failed.Store(nil)
		case ctx.Err() == nil:
			c.failed.Store(&err)
		}
	}
}

// checkpoint runs a passive checkpoint now and, when the log holds Limit
// pages or more, truncates it in the writers' turn.
func (c *checkpointer) checkpoint(ctx context.Context) error {
	var busy, pages, copied int64
	if err := c.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &pages, &copied); err != nil {
		return fmt.Errorf("sqlite: passive checkpoint: %w", err)
	}
	c.passive.Add(1)
	if pages < c.limit {
		return nil
	}
	end, err := c.turn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: truncate the log: %w", err)
	}
	defer end()
	if err := c.conn.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &pages, &copied); err != nil {
		return fmt.Errorf("sqlite: truncate the log: %w", err)
	}
	// Busy: a reader (of another process, as this one's reads are single
	// statements) still used the log after busyWait; the next wake tries
	// again, rather than keep every writer waiting.
	if busy == 0 {
		c.truncated.Add(1)
	}
	return nil
}

// counts reports how many passive and truncating checkpoints ran.
func (c *checkpointer) counts() (passive, truncated int64) {
	return c.passive.Load(), c.truncated.Load()
}

// close stops the checkpointer and releases its connection; the database's
// own close then checkpoints what is left. It reports the last background
// checkpoint's error if that failed (a failed checkpoint is tried again at
// the next wake and leaves the log longer meanwhile; nothing is lost).
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	discard(c.conn)
	if p := c.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// discard closes conn without handing it back to its pool, whose other
// connections wait longer for locks than it does.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
}
