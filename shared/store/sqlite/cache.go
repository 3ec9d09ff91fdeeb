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
// check costs one trivial statement instead of the batch read, and
// less when the WAL index's header says no commit happened (walIndex).
type cache struct {
	mu    sync.Mutex
	watch *sql.Conn
	// shm is the WAL index; header is its header as read before the
	// statement that found seen (valid when held).
	shm    walIndex
	header walHeader
	held   bool
	// version is PRAGMA data_version prepared on watch's driver
	// connection, run without database/sql's bookkeeping (which cost as
	// much again as the statement); row is its result.
	version driver.StmtQueryContext
	row     [1]driver.Value

	// flights shares the statement among the reads that ask at once.
	flights flights

	// seen is the data version the entries are valid for, read by the
	// flight numbered applied.
	seen    int64
	applied uint64
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

func newCache(db *sql.DB, shmPath string) (*cache, error) {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: watch connection: %w", err)
	}
	c := &cache{watch: conn, seen: -1, maxSize: cacheBytes}
	c.flights.ended = sync.NewCond(&c.flights.mu)
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
	// The schema's statements made the WAL index; without it (another
	// journal mode, or the index kept in the process's heap) every check
	// runs the statement.
	c.shm.open(shmPath)
	return c, nil
}

func (c *cache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watch.Raw(func(any) error { return c.version.(driver.Stmt).Close() })
	c.shm.close()
	return c.watch.Close()
}

// current asks the database's data version and empties the cache when it
// moved; it returns the version the caller's reads will be valid for.
// The version is read after the caller asked (see flights), so a commit
// that finished before then is always seen.
func (c *cache) current(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", err)
	}
	// Read after the caller asked: the same header as before the last
	// statement means no commit since that statement, so its version
	// still holds.
	h, ok := c.shm.header()
	c.mu.Lock()
	if ok && c.held && h == c.header {
		v := c.seen
		c.mu.Unlock()
		return v, nil
	}
	c.mu.Unlock()

	f := c.flights.join(c.dataVersion)
	if f.err != nil {
		return 0, fmt.Errorf("sqlite: data version: %w", f.err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Flights end in the order they ran, but their readers may get here
	// in another: only a later flight moves what the entries are valid
	// for. A reader of an earlier one finds its version unlike seen and
	// reads the database (and fills nothing). h was read before the
	// flight started, so before its statement.
	if f.seq > c.applied {
		c.applied = f.seq
		c.header, c.held = h, ok
		if f.v != c.seen {
			c.seen = f.v
			c.empty()
		}
	}
	return f.v, nil
}

// dataVersion runs PRAGMA data_version on the watch connection (one
// flight at a time, so the statement and row are never shared).
func (c *cache) dataVersion() (int64, error) {
	var v int64
	err := c.watch.Raw(func(any) error {
		// Not under a context: the statement takes microseconds and
		// never waits for a writer (WAL), and a cancellable statement
		// costs the driver a goroutine.
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
	return v, err
}

// flights runs one statement at a time for every reader that asks for it.
// A reader joins the next flight to start, never one already running:
// its answer is read after it asked. Readers that ask while a flight runs
// share the next one, so under load a statement answers several reads
// (the reads of one request, which start side by side, and of other
// requests) where each read ran its own.
type flights struct {
	mu      sync.Mutex
	ended   *sync.Cond // a flight ended: the next may start
	running bool
	next    *flight
	seq     uint64
}

type flight struct {
	seq     uint64
	started bool
	done    chan struct{}
	v       int64
	err     error
}

// join returns the answer of a flight of read that started after the
// call: the next one, led by whichever of its readers finds no flight
// running.
func (fs *flights) join(read func() (int64, error)) *flight {
	fs.mu.Lock()
	f := fs.next
	if f == nil {
		f = &flight{done: make(chan struct{})}
		fs.next = f
	}
	for !f.started && fs.running {
		fs.ended.Wait()
	}
	if f.started {
		fs.mu.Unlock()
		<-f.done
		return f
	}
	fs.seq++
	f.seq, f.started, fs.running, fs.next = fs.seq, true, true, nil
	fs.mu.Unlock()

	// Ended even if read panics (net/http recovers a handler's panic, and
	// the next flight must still start); its readers then get an error.
	f.err = errors.New("the data version's statement did not return")
	defer func() {
		close(f.done)
		fs.mu.Lock()
		fs.running = false
		fs.ended.Broadcast()
		fs.mu.Unlock()
	}()
	f.v, f.err = read()
	return f
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
