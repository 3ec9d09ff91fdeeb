package sqlitequeue_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// open opens a queue in its own file, as the local server does.
func open(t *testing.T) (*sqlitequeue.Queue, *clock.Fake) {
	fake := clocktest.Fake(2026, 1, 1, 0, 0, 0)
	q, err := sqlitequeue.Open(filepath.Join(t.TempDir(), "queue.db"), fake.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q, fake
}

// TestBatchesSendAndDeleteTogether sends a batch to two queues and deletes
// several messages at once; an empty batch does nothing.
func TestBatchesSendAndDeleteTogether(t *testing.T) {
	ctx := context.Background()
	q, fake := open(t)
	if err := q.SendBatch(ctx, nil); err != nil {
		t.Fatal(err)
	}
	err := q.SendBatch(ctx, []queue.Outgoing{
		{Queue: "work", Body: []byte("a")}, {Queue: "work", Body: []byte("b")},
		{Queue: "work", Body: []byte("later"), Delay: time.Minute}, {Queue: "other", Body: []byte("x")},
	})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := q.Receive(ctx, "work", 10)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("received %+v, %v; want a and b", msgs, err)
	}
	if err := q.DeleteBatch(ctx, []string{msgs[0].ID, msgs[1].ID}); err != nil {
		t.Fatal(err)
	}
	fake.Advance(q.Visibility)
	if again, _ := q.Receive(ctx, "work", 10); len(again) != 0 {
		t.Fatalf("deleted messages came back: %+v", again)
	}
	if p, _ := q.Pending(ctx, "work"); p != 1 {
		t.Fatalf("%d pending on work, want the delayed one", p)
	}
	if p, _ := q.Pending(ctx, "other"); p != 1 {
		t.Fatalf("%d pending on other", p)
	}
}

// TestAdoptMovesTheStoresQueuedMessages: a data directory from before the
// queue had its own file keeps its messages in the store's database; the
// queue's file takes them over with their state (receives, visibility,
// dead letters), and the old table goes, so a second adoption moves none.
func TestAdoptMovesTheStoresQueuedMessages(t *testing.T) {
	ctx := context.Background()
	fake := clocktest.Fake(2026, 1, 1, 0, 0, 0)
	dir := t.TempDir()
	st, err := sqlite.Open(dir, sqlite.WithClock(fake.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	old, err := sqlitequeue.New(st.DB(), fake.Now)
	if err != nil {
		t.Fatal(err)
	}
	old.MaxReceives = 1
	old.Send(ctx, "work", []byte("ready"), 0)
	old.Send(ctx, "work", []byte("later"), time.Minute)
	old.Send(ctx, "poison", []byte("p"), 0)
	old.Receive(ctx, "poison", 1)
	fake.Advance(old.Visibility)
	old.Receive(ctx, "poison", 1) // a second receive: dead

	q, err := sqlitequeue.Open(filepath.Join(dir, "queue.db"), fake.Now)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if n, err := q.Adopt(ctx, st.DB()); err != nil || n != 3 {
		t.Fatalf("adopted %d, %v; want 3", n, err)
	}
	if n, err := q.Adopt(ctx, st.DB()); err != nil || n != 0 {
		t.Fatalf("adopted %d again, %v", n, err)
	}
	msgs, _ := q.Receive(ctx, "work", 10)
	if len(msgs) != 1 || string(msgs[0].Body) != "ready" || msgs[0].Receives != 1 {
		t.Fatalf("received %+v, want the ready message", msgs)
	}
	q.Delete(ctx, msgs[0].ID)
	fake.Advance(time.Minute)
	if later, _ := q.Receive(ctx, "work", 10); len(later) != 1 || string(later[0].Body) != "later" {
		t.Fatalf("received %+v, want the delayed message once due", later)
	}
	if dead, _ := q.Dead(ctx, "poison"); len(dead) != 1 {
		t.Fatalf("dead letters %+v", dead)
	}
	var tables int
	st.DB().QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name = 'queue_messages'`).Scan(&tables)
	if tables != 0 {
		t.Fatal("the store's database still has the old queue table")
	}
}

func TestVisibilityRetryAndDeadLetter(t *testing.T) {
	ctx := context.Background()
	q, fake := open(t)
	q.MaxReceives = 3
	if err := q.Send(ctx, "work", []byte("a"), 0); err != nil {
		t.Fatal(err)
	}
	q.Send(ctx, "work", []byte("later"), time.Minute)
	q.Send(ctx, "other", []byte("x"), 0)

	msgs, err := q.Receive(ctx, "work", 10)
	if err != nil || len(msgs) != 1 || string(msgs[0].Body) != "a" || msgs[0].Receives != 1 {
		t.Fatalf("first receive: %+v %v", msgs, err)
	}
	// Hidden while in flight.
	if again, _ := q.Receive(ctx, "work", 10); len(again) != 0 {
		t.Fatalf("in-flight message received again: %+v", again)
	}
	fake.Advance(q.Visibility)
	again, _ := q.Receive(ctx, "work", 10)
	if len(again) != 1 || again[0].Receives != 2 {
		t.Fatalf("after visibility: %+v", again)
	}
	// A failure with a delay retries after that delay.
	failing := func(context.Context, queue.Message) error {
		return queue.RetryAfter(10*time.Second, errors.New("down"))
	}
	fake.Advance(q.Visibility)
	if n, err := q.Work(ctx, "work", 10, failing); n != 2 || err != nil {
		t.Fatalf("work: %d %v", n, err)
	}
	fake.Advance(10 * time.Second)
	// The third receive is the last; the fourth is dead-lettered.
	if n, _ := q.Work(ctx, "work", 10, failing); n != 1 {
		t.Fatalf("third receive handled %d", n)
	}
	fake.Advance(time.Hour)
	var got []string
	n, _ := q.Work(ctx, "work", 10, func(_ context.Context, m queue.Message) error { got = append(got, string(m.Body)); return nil })
	if n != 1 || len(got) != 1 || got[0] != "later" {
		t.Fatalf("after dead-lettering handled %d: %v", n, got)
	}
	dead, _ := q.Dead(ctx, "work")
	if len(dead) != 1 || string(dead[0].Body) != "a" {
		t.Fatalf("dead letters: %+v", dead)
	}
	if p, _ := q.Pending(ctx, "work"); p != 0 {
		t.Fatalf("%d pending", p)
	}
	if p, _ := q.Pending(ctx, "other"); p != 1 {
		t.Fatalf("other queue: %d pending", p)
	}
}

// TestConcurrentWorkersHandleEachMessageOnce runs several workers on one
// queue: each message is handled exactly once while nothing fails.
func TestConcurrentWorkersHandleEachMessageOnce(t *testing.T) {
	ctx := context.Background()
	q, _ := open(t)
	for i := 0; i < 100; i++ {
		q.Send(ctx, "work", []byte{byte(i)}, 0)
	}
	var mu sync.Mutex
	seen := map[byte]int{}
	var handled atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for handled.Load() < 100 {
				q.Work(ctx, "work", 7, func(_ context.Context, m queue.Message) error {
					mu.Lock()
					seen[m.Body[0]]++
					mu.Unlock()
					handled.Add(1)
					return nil
				})
			}
		}()
	}
	wg.Wait()
	if len(seen) != 100 {
		t.Fatalf("%d distinct messages handled", len(seen))
	}
	for b, n := range seen {
		if n != 1 {
			t.Fatalf("message %d handled %d times", b, n)
		}
	}
}

// TestDurableQueuesAreSynced: a batch with a message for a queue Durable
// names is committed on the synchronous=FULL connection, so the file is
// synced before the router's cursor moves past it; a batch for other
// queues is not, and every message arrives either way.
func TestDurableQueuesAreSynced(t *testing.T) {
	ctx := context.Background()
	q, _ := open(t)
	q.Durable = func(name string) bool { return name == "jobs" }
	if n, err := q.DurableSync(ctx); err != nil || n != 2 {
		t.Fatalf("durable sends' synchronous = %d, %v; want 2 (FULL)", n, err)
	}
	if err := q.SendBatch(ctx, []queue.Outgoing{{Queue: "hints", Body: []byte("h")}}); err != nil {
		t.Fatal(err)
	}
	if n := q.DurableCommits(); n != 0 {
		t.Fatalf("%d durable commits after a batch of hints, want 0", n)
	}
	err := q.SendBatch(ctx, []queue.Outgoing{{Queue: "hints", Body: []byte("h2")}, {Queue: "jobs", Body: []byte("j")}})
	if err != nil {
		t.Fatal(err)
	}
	if n := q.DurableCommits(); n != 1 {
		t.Fatalf("%d durable commits after a batch with a job, want 1", n)
	}
	if err := q.Send(ctx, "jobs", []byte("j2"), 0); err != nil {
		t.Fatal(err)
	}
	if n := q.DurableCommits(); n != 2 {
		t.Fatalf("%d durable commits after a job's send, want 2", n)
	}
	for name, want := range map[string]int{"hints": 2, "jobs": 2} {
		if msgs, err := q.Receive(ctx, name, 10); err != nil || len(msgs) != want {
			t.Fatalf("received %d from %s (%v), want %d", len(msgs), name, err, want)
		}
	}
}
