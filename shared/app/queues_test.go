package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
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

// The AWS shape end to end on the emulators: a write through the DynamoDB
// store reaches the table's stream, one poll of the stream routes it to an
// SQS queue, and one poll of the queue runs the work's handler, once.
func TestStreamPipelineOnDynamoDBAndSQS(t *testing.T) {
	ctx := context.Background()
	c, table := ddbtest.NewTable(t)
	sc := sqstest.Client(t)
	qs := sqstest.NewQueues(t, sc, sqstest.Layout{}, testQueue)
	cfg := config.Default()
	cfg.Store, cfg.Table, cfg.QueueURLs = config.StoreDynamoDB, table, qs.URLs
	a, err := app.New(ctx, cfg, app.WithStore(dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))), app.WithClock(clock.System{}))
	if err != nil {
		t.Fatal(err)
	}
	w := &testWork{}
	p, err := a.NewStreamPipeline(ctx, sqsqueue.New(sc, qs.URLs), []app.Work{w.work()}, dynamodb.FromTrimHorizon)
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
	if n, err := p.Route(ctx); err != nil || n != 2 {
		t.Fatalf("one poll of the stream routed %d changes, %v; want 2", n, err)
	}
	// The emulator may take a moment to make the sent message visible.
	deadline := time.Now().Add(5 * time.Second)
	for len(w.jobs()) == 0 && time.Now().Before(deadline) {
		if _, err := p.Work(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.jobs(); len(got) != 1 || got[0] != `{"job":1}` {
		t.Fatalf("jobs run: %v", got)
	}
	if busy, err := p.Once(ctx); err != nil || busy {
		t.Fatalf("a pass after the work = busy %v, %v; want idle", busy, err)
	}
}

// OpenQueues wants a URL for each required queue, and says which variable
// is missing.
func TestOpenQueuesNamesMissingURL(t *testing.T) {
	cfg := config.Default()
	cfg.QueueURLs = map[string]string{queue.WebhookDeliveries: "http://127.0.0.1:1/000000000000/w"}
	if _, err := app.OpenQueues(context.Background(), cfg, queue.WebhookDeliveries); err != nil {
		t.Fatalf("OpenQueues of the configured queue: %v", err)
	}
	_, err := app.OpenQueues(context.Background(), cfg, queue.Names()...)
	if err == nil || !strings.Contains(err.Error(), config.EnvQueueURLBulkOperations) {
		t.Fatalf("OpenQueues of every queue with one URL: %v", err)
	}
}
