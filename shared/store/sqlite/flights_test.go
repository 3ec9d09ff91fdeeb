package sqlite

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/store"
)

// TestAFlightStartsAfterItsReadersAsk: a reader that asks while a flight
// runs is answered by a later flight, never by the running one (whose
// statement may have run before the reader's commit finished).
func TestAFlightStartsAfterItsReadersAsk(t *testing.T) {
	var fs flights
	fs.ended = sync.NewCond(&fs.mu)
	var (
		mu      sync.Mutex
		runs    int64
		entered = make(chan struct{}, 8)
		release = make(chan struct{})
	)
	read := func() (int64, error) {
		mu.Lock()
		runs++
		n := runs
		mu.Unlock()
		entered <- struct{}{}
		<-release
		return n, nil
	}

	first := make(chan *flight)
	go func() { first <- fs.join(read) }()
	<-entered // flight 1 is running

	const late = 5
	answers := make(chan *flight, late)
	for range late {
		go func() { answers <- fs.join(read) }()
	}
	// Wait until a late reader has joined the next flight.
	for {
		fs.mu.Lock()
		waiting := fs.next != nil && !fs.next.started
		fs.mu.Unlock()
		if waiting {
			break
		}
	}
	release <- struct{}{}
	if f := <-first; f.v != 1 || f.err != nil {
		t.Fatalf("the first reader got %+v", f)
	}
	<-entered // flight 2 runs for the late readers
	close(release)
	for range late {
		f := <-answers
		if f.v < 2 {
			t.Fatalf("a reader that asked during flight 1 got its answer (%d)", f.v)
		}
	}
}

// TestAPanickingFlightEnds: a statement that panics ends its flight with
// an error for its readers, and the next flight still runs.
func TestAPanickingFlightEnds(t *testing.T) {
	var fs flights
	fs.ended = sync.NewCond(&fs.mu)
	func() {
		defer func() { recover() }()
		fs.join(func() (int64, error) { panic("driver") })
	}()
	f := fs.join(func() (int64, error) { return 7, nil })
	if f.v != 7 || f.err != nil {
		t.Fatalf("after a panic: %+v", f)
	}
}

// TestTheWALIndexSparesTheStatement: reads with no commit between them run
// the data-version statement once; a commit of another process, a
// checkpoint that restarts the log and then a commit, and a commit of the
// store itself each make the next read run it again and see the commit.
func TestTheWALIndexSparesTheStatement(t *testing.T) {
	ctx := context.Background()
	now := func() time.Time { return clocktest.Date(2026, 3, 1, 12, 0, 0) }
	dir := t.TempDir()
	a, err := Open(dir, WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir, WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.cache.shm.f == nil {
		t.Fatal("the WAL index was not opened")
	}
	k := store.Key{PK: "P", SK: "k"}
	put := func(s *Store, v int64) {
		t.Helper()
		var c store.Cond
		if v > 1 {
			c = store.Cond{Version: v - 1}
		}
		if err := s.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: v, Data: []byte(`{}`)}, c)); err != nil {
			t.Fatal(err)
		}
	}
	statements := func() uint64 {
		a.cache.flights.mu.Lock()
		defer a.cache.flights.mu.Unlock()
		return a.cache.flights.seq
	}
	version := func() int64 {
		t.Helper()
		it, err := a.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return it.Version
	}

	put(b, 1)
	version()
	before := statements()
	for range 5 {
		if v := version(); v != 1 {
			t.Fatalf("version %d", v)
		}
	}
	if n := statements() - before; n != 0 {
		t.Fatalf("%d statements for five reads with no commit between", n)
	}
	for _, step := range []struct {
		name   string
		commit func()
		want   int64
	}{
		{"another process's commit", func() { put(b, 2) }, 2},
		{"a checkpoint that restarts the log, then a commit", func() {
			if _, err := b.DB().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			put(b, 3)
		}, 3},
		{"its own commit", func() { put(a, 4) }, 4},
	} {
		before := statements()
		step.commit()
		if v := version(); v != step.want {
			t.Fatalf("after %s: version %d", step.name, v)
		}
		if n := statements() - before; n != 1 {
			t.Fatalf("after %s: %d statements", step.name, n)
		}
	}
}
