package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"

	"github.com/moku/sellerapi/shared/store"
)

// cache holds items the store has read, valid only while nothing has been
// committed to the database since: before answering from it, a read asks
// SQLite for the database's data version (PRAGMA data_version on the
// store's own watch connection, which never writes), which changes with
// every commit of any other connection, this process's or another's; on a
// change the cache is emptied. So a read never sees less than a read of
// the file would: a commit that finished before the read began, by this
// process or another sharing the data directory, is always seen. The
// check costs one trivial statement instead of the batch read.
type cache struct {
	mu    sync.Mutex
	watch *sql.Conn
	// version is PRAGMA data_version prepared on watch's driver
	// connection, run without database/sql's bookkeeping (which cost as
	// much again as the statement); row is its result.
	version driver.StmtQueryContext
	row     [1]driver.Value

	// seen is the data version the entries are valid for.
	seen    int64
	items   map[store.Key]store.Item
	pages   map[store.Query]page
	bytes   int
	maxSize int
}

// page is a query's result and when (Unix seconds) it was read: it holds
// while none of its items has expired and the clock has not gone back
// (either could change which items the query finds).
type page struct {
	items []store.Item
	at    int64
}

// cacheBytes bounds the documents the cache holds; past it, it starts
// again empty.
const cacheBytes = 16 << 20

func newCache(db *sql.DB) (*cache, error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: watch connection: %w", err)
	}
	c := &cache{watch: conn, seen: -1, maxSize: cacheBytes}
	c.empty()
	err = conn.Raw(func(dc any) error {
		st, err := dc.(driver.ConnPrepareContext).PrepareContext(ctx, `PRAGMA data_version`)
		if err != nil {
			return err
		}
		q, ok := st.(driver.StmtQueryContext)
		if !ok {
			st.Close()
			return errors.New("the driver's statements take no context")
		}
		c.version = q
		return nil
	})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("sqlite: prepare data_version: %w", err)
	}
	return c, nil
}

func (c *cache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch.Raw(func(any) error { return c.version.(driver.Stmt).Close() })
	return c.watch.Close()
}

// current asks the database's data version and empties the cache when it
// moved; it returns the version the caller's reads will be valid for.
func (c *cache) current(ctx context.Context) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var v int64
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	err := c.watch.Raw(func(any) error {
		// Not under ctx: the statement takes microseconds and never waits
		// for a writer (WAL), and a cancellable statement costs the
		// driver a goroutine.
		rows, err := c.version.QueryContext(context.Background(), nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := rows.Next(c.row[:]); err != nil {
			if err == io.EOF {
				return errors.New("no row")
			}
			return err
		}
		n, ok := c.row[0].(int64)
		if !ok {
			return fmt.Errorf("a %T", c.row[0])
		}
		v = n
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	if v != c.seen {
		c.seen = v
		c.empty()
	}
	return v, nil
}

func (c *cache) empty() {
	c.items, c.pages, c.bytes = map[store.Key]store.Item{}, map[store.Query]page{}, 0
}

// own is a copy of items a reader can change without changing the cache.
func own(items []store.Item) []store.Item {
	out := make([]store.Item, len(items))
	for i, it := range items {
		it.Nums = maps.Clone(it.Nums)
		out[i] = it
	}
	return out
}

// room makes room for n more bytes of documents.
func (c *cache) room(n int) {
	if c.bytes+n > c.maxSize {
		c.empty()
	}
	c.bytes += n
}

// lookupPage returns the cached result of q at now, when the data version
// is still v.
func (c *cache) lookupPage(v int64, q store.Query, now int64) ([]store.Item, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[q]
	if v != c.seen || !ok || now < p.at {
		return nil, false
	}
	for _, it := range p.items {
		if it.ExpiresAt != 0 && it.ExpiresAt <= now {
			return nil, false
		}
	}
	return own(p.items), true
}

// fillPage remembers q's result read at now and data version v, unless a
// commit has been seen since.
func (c *cache) fillPage(v int64, q store.Query, now int64, items []store.Item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v != c.seen {
		return
	}
	n := 0
	for _, it := range items {
		n += len(it.Data)
	}
	c.room(n)
	c.pages[q] = page{items: own(items), at: now}
}

// lookup returns the cached items of keys (a zero PK where not held) and
// how many it held, provided the data version is still v.
func (c *cache) lookup(v int64, keys []store.Key, out []store.Item) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v != c.seen {
		return 0
	}
	n := 0
	for i, k := range keys {
		if it, ok := c.items[k]; ok {
			// The numeric attributes are a map: each reader gets its
			// own, so that none can change what the next is answered.
			it.Nums = maps.Clone(it.Nums)
			out[i] = it
			n++
		}
	}
	return n
}

// fill remembers items read at data version v, unless a commit has been
// seen since (then they may be older than what the next read must see).
func (c *cache) fill(v int64, items []store.Item) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v != c.seen {
		return
	}
	for _, it := range items {
		if it.PK == "" {
			continue
		}
		if old, ok := c.items[it.Key()]; ok {
			c.bytes -= len(old.Data)
		}
		c.room(len(it.Data))
		it.Nums = maps.Clone(it.Nums)
		c.items[it.Key()] = it
	}
}
