package lambdatest

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/store"
)

// SQSSample reads the SQS batch sample at path as SQSEvent does, and wants
// its first record's body a JSON object with each of keys: the message the
// work of queueName reads.
func SQSSample(t testing.TB, path, queueName string, keys ...string) events.SQSEvent {
	t.Helper()
	ev := SQSEvent(t, path, queueName)
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &body); err != nil {
		t.Fatalf("%s: body: %v", path, err)
	}
	for _, k := range keys {
		if body[k] == nil {
			t.Errorf("%s: body %s has no %s", path, ev.Records[0].Body, k)
		}
	}
	return ev
}

// Work runs the insert of item through the Lambdas as in AWS: the stream
// router's rules over a's works turn it into messages, exactly one of them
// for queueName, which the worker of queueName (lambdaapi.NewWorker, as
// lambdaapi.WorkerMain builds it) handles as SQS delivers it, with no
// failure. It returns the queues, holding what the router sent to other
// queues and what the worker sent.
func Work(t testing.TB, a *app.App, item store.Item, queueName string) *Queues {
	t.Helper()
	ctx := t.Context()
	q := &Queues{}
	if _, err := a.Router(q).Route(ctx, []store.Change{{Kind: store.Inserted, Key: item.Key(), New: &item}}); err != nil {
		t.Fatalf("route: %v", err)
	}
	msgs := q.Take(queueName)
	if len(msgs) != 1 {
		t.Fatalf("routed %d messages to %s, want 1", len(msgs), queueName)
	}
	h, err := lambdaapi.NewWorker(a, q, queueName)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h(ctx, SQSBatch(queueName, msgs...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("worker of %s: %+v, %v", queueName, resp, err)
	}
	return q
}

// WorkStored is Work on the item stored at k in a's store.
func WorkStored(t testing.TB, a *app.App, k store.Key, queueName string) *Queues {
	t.Helper()
	it, err := a.Store.Get(t.Context(), k)
	if err != nil {
		t.Fatalf("get %v: %v", k, err)
	}
	return Work(t, a, it, queueName)
}
