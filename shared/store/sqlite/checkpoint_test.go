package sqlite

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
)

// openCheckpointing opens a store whose background checkpoints come every
// `every` write turns, with the log's limit in pages (0: the default).
func openCheckpointing(t *testing.T, every, limit int) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), WithClock(clock.System{}.Now), func(s *Store) { s.checkpointEvery, s.walLimit = every, limit })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// walPages is how many pages the store's write-ahead log holds (a passive
// checkpoint on a connection of the test's reports it, copying what it
// can).
func walPages(t *testing.T, s *Store) int64 {
	t.Helper()
	var busy, pages, copied int64
	if err := s.DB().QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &pages, &copied); err != nil {
		t.Fatal(err)
	}
	return pages
}

// walBytes is the size of the write-ahead log's file.
func walBytes(t *testing.T, s *Store) int64 {
	t.Helper()
	fi, err := os.Stat(s.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func putN(t *testing.T, s *Store, prefix string, n int) {
	t.Helper()
	for i := range n {
		it := store.Item{PK: "P", SK: fmt.Sprintf("%s-%d", prefix, i), Version: 1, Data: []byte(`{"pad":"` + fmt.Sprintf("%0400d", i) + `"}`)}
		if err := s.Transact(context.Background(), store.Put(it, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCommitsLeaveCheckpointsToTheCheckpointer: no commit checkpoints
// the log (SQLite's automatic checkpoint would, with an fsync, in the
// commit that takes it past 1000 pages, while every other writer waited
// its turn): with the background checkpointer idle, the log keeps every
// page written.
func TestCommitsLeaveCheckpointsToTheCheckpointer(t *testing.T) {
	s := openCheckpointing(t, 1<<30, 0)
	putN(t, s, "a", 600)
	if pages := walPages(t, s); pages < 1200 {
		t.Fatalf("the log holds %d pages after 600 writes of 2 or more each: a commit checkpointed it", pages)
	}
	if passive, truncated := s.checkpoints.counts(); passive != 0 || truncated != 0 {
		t.Fatalf("checkpoints ran: %d passive, %d truncating", passive, truncated)
	}
}

// TestTheCheckpointerCopiesTheLogInTheBackground: every few write turns
// wake a passive checkpoint, which runs on the checkpointer's own
// connection.
func TestTheCheckpointerCopiesTheLogInTheBackground(t *testing.T) {
	s := openCheckpointing(t, 10, 0)
	putN(t, s, "a", 100)
	for i := 0; ; i++ {
		if passive, _ := s.checkpoints.counts(); passive > 0 {
			break
		}
		if i == 5000 {
			t.Fatal("no background checkpoint ran after 100 writes, one due every 10")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTheLogIsTruncatedPastItsLimit: a checkpoint that finds the log at
// its limit takes the writers' turn and empties the log's file; nothing
// written is lost.
func TestTheLogIsTruncatedPastItsLimit(t *testing.T) {
	s := openCheckpointing(t, 1<<30, 100)
	putN(t, s, "a", 100)
	if err := s.checkpoints.checkpoint(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, truncated := s.checkpoints.counts(); truncated != 1 {
		t.Fatalf("%d truncating checkpoints, want 1", truncated)
	}
	if n := walBytes(t, s); n != 0 {
		t.Fatalf("the log's file holds %d bytes after truncation", n)
	}
	for i := range 100 {
		if _, err := s.Get(context.Background(), store.Key{PK: "P", SK: fmt.Sprintf("a-%d", i)}); err != nil {
			t.Fatalf("item %d after truncation: %v", i, err)
		}
	}
}

// TestTheLogStaysBoundedUnderSustainedWrites: writers that never pause
// (so no passive checkpoint ever finds the log fully copied, which is
// what lets SQLite start it over) and readers beside them: the log's file
// stays within a few times its limit (what the writers add while a
// checkpoint runs comes on top of it), and every write commits. Without
// the limit the log kept every page the writers wrote, about 16,700.
func TestTheLogStaysBoundedUnderSustainedWrites(t *testing.T) {
	const limit = 1000
	s := openCheckpointing(t, 5, limit)
	ctx := context.Background()
	var writers, readers sync.WaitGroup
	var stop atomic.Bool
	var largest atomic.Int64
	for w := range 8 {
		writers.Go(func() {
			for i := range 400 {
				it := store.Item{PK: "P", SK: fmt.Sprintf("w%d-%d", w, i), Version: 1, Data: []byte(fmt.Sprintf(`{"pad":"%0400d"}`, i))}
				if err := s.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for range 2 {
		readers.Go(func() {
			for !stop.Load() {
				if _, err := s.Query(ctx, store.Query{PK: "P", Limit: 10}); err != nil {
					t.Error(err)
					return
				}
				if fi, err := os.Stat(s.Path() + "-wal"); err == nil && fi.Size() > largest.Load() {
					largest.Store(fi.Size())
				}
			}
		})
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	got, err := s.Query(ctx, store.Query{PK: "P", Limit: 4000})
	if err != nil || len(got) != 3200 {
		t.Fatalf("%d items committed, want 3200 (%v)", len(got), err)
	}
	// A page in the log is 4096 bytes and a 24-byte frame header.
	passive, truncated := s.checkpoints.counts()
	t.Logf("%d passive checkpoints, %d truncating, the log's file at most %d pages", passive, truncated, largest.Load()/4120)
	if pages := largest.Load() / 4120; pages > 8*limit {
		t.Fatalf("the log grew to %d pages, limit %d", pages, limit)
	}
}
