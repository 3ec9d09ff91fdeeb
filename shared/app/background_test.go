package app_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/app/embedded"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// testWork is a work whose rule starts a job for each inserted JOB# item
// and whose handler records the jobs it ran.
type testWork struct {
	mu  sync.Mutex
	ran []string
}

const testQueue = "test-jobs"

func (w *testWork) work() app.Work {
	return app.Work{
		Queue: testQueue,
		Rule: func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
			if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, datamodel.BulkPrefix) {
				return nil, nil
			}
			return []pipeline.Outgoing{{Queue: testQueue, Body: c.New.Data}}, nil
		},
		Handle: func(_ context.Context, m queue.Message) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.ran = append(w.ran, string(m.Body))
			return nil
		},
	}
}

func (w *testWork) jobs() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ran...)
}

// The AWS shape end to end on the emulators, as the local binary wires it
// with --store dynamodb: a write through the DynamoDB store reaches the
// table's stream, the local background routes it to an SQS queue and runs
// the work's handler, once.
func TestLocalBackgroundOnDynamoDBAndSQS(t *testing.T) {
	ctx := context.Background()
	c, table := ddbtest.NewTable(t)
	sc := sqstest.Client(t)
	qs := sqstest.NewQueues(t, sc, sqstest.Layout{}, testQueue)
	cfg := config.Default()
	cfg.Store, cfg.Table, cfg.QueueURLs = config.StoreDynamoDB, table, qs.URLs
	st := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	streams, err := dynamodb.NewStreamsClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Stream(ctx, streams, dynamodb.FromTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	w := &testWork{}
	local := app.Local{
		Changes: func(ctx context.Context, rt pipeline.Router) (int, error) { return r.Poll(ctx, rt.Route) },
		Queue:   sqsqueue.New(sc, qs.URLs),
	}
	a, err := app.New(ctx, cfg, app.WithStore(st), app.WithClock(clock.System{}), app.WithLocal(local),
		app.WithWorks(func(queue.Sender) []app.Work { return []app.Work{w.work()} }))
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range []store.Item{
		{PK: "VENDOR#ven_1", SK: datamodel.BulkPrefix + "1", Version: 1, Data: []byte(`{"job":1}`)},
		{PK: "VENDOR#ven_1", SK: "OTHER#1", Version: 1, Data: []byte(`{}`)},
	} {
		if err := a.Store.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
	// The emulator may take a moment to make the sent message visible.
	deadline := time.Now().Add(5 * time.Second)
	for len(w.jobs()) == 0 && time.Now().Before(deadline) {
		if err := a.Drain(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.jobs(); len(got) != 1 || got[0] != `{"job":1}` {
		t.Fatalf("jobs run: %v", got)
	}
	if err := a.Drain(ctx); err != nil || len(w.jobs()) != 1 {
		t.Fatalf("a drain after the work = %v, jobs %v; want nothing more", err, w.jobs())
	}
}

// OpenQueues wants a URL for each required queue, and says which variable
// is missing.
func TestOpenQueuesNamesMissingURL(t *testing.T) {
	cfg := config.Default()
	cfg.QueueURLs = map[string]string{queue.WebhookDeliveries: "http://127.0.0.1:1/000000000000/w"}
	if _, err := awsapp.OpenQueues(context.Background(), cfg, queue.WebhookDeliveries); err != nil {
		t.Fatalf("OpenQueues of the configured queue: %v", err)
	}
	_, err := awsapp.OpenQueues(context.Background(), cfg, queue.Names()...)
	if err == nil || !strings.Contains(err.Error(), config.EnvQueueURLWebhookSlowLane) {
		t.Fatalf("OpenQueues of every queue with one URL: %v", err)
	}
}

// handled records the bodies of the messages a work got.
type handled struct {
	mu   sync.Mutex
	got  []string
	done chan struct{}
}

func (h *handled) handle(_ context.Context, m queue.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, string(m.Body))
	select {
	case h.done <- struct{}{}:
	default:
	}
	return nil
}

// On the embedded store, a commit that inserts an item that starts work
// wakes the router, and the router's send wakes the queue's consumer: with
// ticks of an hour, the work is done only if the signals work.
func TestCommitsWakeTheLocalBackground(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st, local, err := embedded.Open(t.TempDir(), clock.System{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := &handled{done: make(chan struct{}, 1)}
	work := app.Work{Queue: queue.SyncJobs, Handle: h.handle,
		Rule: func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
			return []pipeline.Outgoing{{Queue: queue.SyncJobs, Body: c.New.Data}}, nil
		}}
	a, err := app.New(ctx, config.Default(), app.WithStore(st), app.WithClock(clock.System{}), app.WithLocal(local),
		app.WithLogOutput(t.Output()), app.WithWorks(func(queue.Sender) []app.Work { return []app.Work{work} }))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { a.RunBackground(ctx, time.Hour) })
	defer wg.Wait()
	defer cancel()

	put := func(sk, body string) {
		t.Helper()
		if err := st.Transact(ctx, store.Put(store.Item{PK: "VENDOR#ven_1", SK: sk, Version: 1, Data: []byte(body)}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
	put("OTHER#1", `{}`) // routes nothing
	for _, it := range []struct{ sk, body string }{{datamodel.SyncJobPrefix + "1", `{"n":1}`}, {datamodel.ReplayPrefix + "2", `{"n":2}`}} {
		put(it.sk, it.body)
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the insert of %s was not worked without a tick", it.sk)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Join(h.got, " ") != `{"n":1} {"n":2}` {
		t.Fatalf("worked %v", h.got)
	}
}

// Under concurrent writers, the embedded pipeline (batched sends, batched
// receives, batched deletes) works every job exactly once and settles
// every message: the queue ends empty.
func TestLocalBackgroundWorksEachJobOnceUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	st, local, err := embedded.Open(t.TempDir(), clock.System{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h := &handled{done: make(chan struct{}, 1)}
	work := app.Work{Queue: queue.SyncJobs, Handle: h.handle,
		Rule: func(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
			return []pipeline.Outgoing{{Queue: queue.SyncJobs, Body: []byte(c.Key.SK)}}, nil
		}}
	a, err := app.New(ctx, config.Default(), app.WithStore(st), app.WithClock(clock.System{}), app.WithLocal(local),
		app.WithLogOutput(t.Output()), app.WithWorks(func(queue.Sender) []app.Work { return []app.Work{work} }))
	if err != nil {
		t.Fatal(err)
	}
	var bg sync.WaitGroup
	bg.Go(func() { a.RunBackground(ctx, time.Hour) })
	defer bg.Wait()
	defer cancel()

	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				sk := fmt.Sprintf("%s%d-%d", datamodel.SyncJobPrefix, w, i)
				if err := st.Transact(ctx, store.Put(store.Item{PK: "VENDOR#ven_1", SK: sk, Version: 1}, store.IfAbsent())); err != nil {
					t.Error(err)
				}
				// Stock-like writes that route nothing, between the jobs.
				st.Transact(ctx, store.Put(store.Item{PK: "VENDOR#ven_1", SK: fmt.Sprintf("OTHER#%d", w), Version: int64(i + 1)}, store.Cond{}))
			}
		})
	}
	wg.Wait()
	q := local.Queue.(*sqlitequeue.Queue)
	deadline := time.After(60 * time.Second)
	for {
		h.mu.Lock()
		n := len(h.got)
		h.mu.Unlock()
		pending, err := q.Pending(ctx, queue.SyncJobs)
		if err != nil {
			t.Fatal(err)
		}
		if n >= writers*each && pending == 0 {
			break
		}
		select {
		case <-h.done:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d of %d jobs worked, %d messages pending", n, writers*each, pending)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]int{}
	for _, sk := range h.got {
		seen[sk]++
	}
	if len(seen) != writers*each || len(h.got) != writers*each {
		t.Fatalf("%d jobs worked, %d distinct; want %d once each", len(h.got), len(seen), writers*each)
	}
}
