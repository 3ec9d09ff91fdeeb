package sqlite_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// read reads k through Get and through GetMany (beside another key), and
// fails unless both agree; it returns the document, "" when absent.
func read(t *testing.T, s *sqlite.Store, k store.Key) string {
	t.Helper()
	ctx := context.Background()
	it, err := s.Get(ctx, k)
	if errors.Is(err, store.ErrNotFound) {
		it = store.Item{}
	} else if err != nil {
		t.Fatal(err)
	}
	many, err := s.GetMany(ctx, []store.Key{{PK: "P", SK: "other"}, k})
	if err != nil {
		t.Fatal(err)
	}
	if string(many[1].Data) != string(it.Data) || many[1].Version != it.Version {
		t.Fatalf("Get answered %q v%d, GetMany %q v%d", it.Data, it.Version, many[1].Data, many[1].Version)
	}
	page, err := s.Query(ctx, store.Query{PK: k.PK, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var found store.Item
	for _, p := range page {
		if p.SK == k.SK {
			found = p
		}
	}
	if string(found.Data) != string(it.Data) || found.Version != it.Version {
		t.Fatalf("Get answered %q v%d, Query %q v%d", it.Data, it.Version, found.Data, found.Version)
	}
	return string(it.Data)
}

func put(t *testing.T, s *sqlite.Store, k store.Key, v int64, data string) {
	t.Helper()
	if err := s.Transact(context.Background(), store.Put(store.Item{PK: k.PK, SK: k.SK, Version: v, Data: []byte(data)}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
}

// openTwo opens two stores on one data directory, as two processes do.
func openTwo(t *testing.T, now func() time.Time) (*sqlite.Store, *sqlite.Store) {
	t.Helper()
	dir := t.TempDir()
	var out [2]*sqlite.Store
	for i := range out {
		s, err := sqlite.Open(dir, sqlite.WithClock(now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out[i] = s
	}
	return out[0], out[1]
}

// TestReadsSeeEveryFinishedCommit: whatever the store keeps of items it
// read, a read that starts after a commit finished sees that commit,
// whether this store made it (a transaction, an increment, a statement on
// its DB) or another store on the same data directory did, as another
// process (the CLI beside the local server) would.
func TestReadsSeeEveryFinishedCommit(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	a, b := openTwo(t, c.Now)
	ctx := context.Background()
	k := store.Key{PK: "P", SK: "k"}

	put(t, a, k, 1, `"one"`)
	for range 3 { // read it often enough to be held
		if got := read(t, a, k); got != `"one"` {
			t.Fatalf("read %s", got)
		}
	}
	put(t, b, k, 2, `"two"`)
	if got := read(t, a, k); got != `"two"` {
		t.Fatalf("after another process's commit: %s", got)
	}
	put(t, a, k, 3, `"three"`)
	if got := read(t, a, k); got != `"three"` {
		t.Fatalf("after its own commit: %s", got)
	}
	if got := read(t, b, k); got != `"three"` {
		t.Fatalf("the other process after the first's commit: %s", got)
	}
	if _, err := b.DB().ExecContext(ctx, `UPDATE items SET d = '"four"', v = 4 WHERE pk = 'P' AND sk = 'k'`); err != nil {
		t.Fatal(err)
	}
	if got := read(t, a, k); got != `"four"` {
		t.Fatalf("after a raw statement: %s", got)
	}
	if _, err := a.Increment(ctx, k, "n", 5, 100, 0); err != nil {
		t.Fatal(err)
	}
	if it, err := a.Get(ctx, k); err != nil || it.Nums["n"] != 5 {
		t.Fatalf("after an increment: %+v %v", it, err)
	}
	if err := b.Transact(ctx, store.Delete(k, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if got := read(t, a, k); got != "" {
		t.Fatalf("after another process's delete: %s", got)
	}

	// Expiry is judged by the clock at each read, held or not.
	e := store.Key{PK: "P", SK: "expiring"}
	if err := a.Transact(ctx, store.Put(store.Item{PK: e.PK, SK: e.SK, Version: 1, Data: []byte(`"x"`), ExpiresAt: c.Now().Add(time.Minute).Unix()}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got := read(t, a, e); got != `"x"` {
			t.Fatalf("live expiring item: %s", got)
		}
	}
	c.Advance(time.Minute)
	if got := read(t, a, e); got != "" {
		t.Fatalf("an expired item was read: %s", got)
	}
	// A clock set back finds the item live again, as the database would.
	c.Advance(-time.Minute)
	if got := read(t, a, e); got != `"x"` {
		t.Fatalf("after the clock went back: %s", got)
	}
}

// TestCachedItemsAreTheirReadersOwn: a reader changing the numeric
// attributes it was given does not change what the next read answers.
func TestCachedItemsAreTheirReadersOwn(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	k := store.Key{PK: "P", SK: "n"}
	if _, err := s.Increment(ctx, k, "n", 1, 10, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		it, err := s.Get(ctx, k)
		if err != nil || it.Nums["n"] != 1 {
			t.Fatalf("%+v %v", it, err)
		}
		it.Nums["n"] = 99
		page, err := s.Query(ctx, store.Query{PK: k.PK, Limit: 10})
		if err != nil || len(page) != 1 || page[0].Nums["n"] != 1 {
			t.Fatalf("%+v %v", page, err)
		}
		page[0].Nums["n"] = 99
		page[0].Version = 99
	}
}

// TestConcurrentReadersSeeWritesInOrder: goroutines reading while
// another store on the same directory writes a rising version never read
// a version older than one whose commit finished before their read began.
func TestConcurrentReadersSeeWritesInOrder(t *testing.T) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	reader, writer := openTwo(t, c.Now)
	ctx := context.Background()
	k := store.Key{PK: "P", SK: "rising"}
	put(t, writer, k, 1, `1`)
	var mu sync.Mutex
	last := int64(1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				mu.Lock()
				floor := last
				mu.Unlock()
				it, err := reader.Get(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				if it.Version < floor {
					t.Errorf("read version %d after version %d was committed", it.Version, floor)
					return
				}
			}
		}()
	}
	for v := int64(2); v <= 200; v++ {
		put(t, writer, k, v, fmt.Sprint(v))
		mu.Lock()
		last = v
		mu.Unlock()
	}
	close(done)
	wg.Wait()
}

// TestAnotherProcessesCommitsAreSeen: a writer in a process of its own
// (this test binary, run again) commits a rising version and says so
// after each commit; every read this process starts after hearing it
// sees that version or a later one, while the writer also truncates the
// log now and then (which restarts it). It is the case the WAL index's
// header check must not miss: another process's commit, seen through
// the page cache rather than this process's own mapping.
func TestAnotherProcessesCommitsAreSeen(t *testing.T) {
	if dir := os.Getenv("SELLERAPI_SQLITE_WRITER_DIR"); dir != "" {
		writeRising(t, dir)
		return
	}
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	dir := t.TempDir()
	reader, err := sqlite.Open(dir, sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	k := store.Key{PK: "P", SK: "rising"}
	put(t, reader, k, 1, `1`)

	cmd := exec.Command(os.Args[0], "-test.run=^TestAnotherProcessesCommitsAreSeen$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SELLERAPI_SQLITE_WRITER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := 0
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		committed, err := strconv.ParseInt(strings.TrimPrefix(lines.Text(), "committed "), 10, 64)
		if err != nil {
			continue // the test binary's own output
		}
		for range 3 { // the second and third reads take the header's path
			it, err := reader.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if it.Version < committed {
				t.Fatalf("read version %d after the other process committed %d", it.Version, committed)
			}
		}
		seen++
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	if seen < risingTo-1 {
		t.Fatalf("heard of %d commits", seen)
	}
}

const risingTo = 300

// writeRising is the writer process of TestAnotherProcessesCommitsAreSeen.
func writeRising(t *testing.T, dir string) {
	c := clocktest.Fake(2026, 3, 1, 12, 0, 0)
	w, err := sqlite.Open(dir, sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	k := store.Key{PK: "P", SK: "rising"}
	for v := int64(2); v <= risingTo; v++ {
		put(t, w, k, v, fmt.Sprint(v))
		if v%50 == 0 {
			if _, err := w.DB().ExecContext(context.Background(), `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Printf("committed %d\n", v)
	}
}
