package lambdaapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeQueues records what a worker asks of the queue service.
type fakeQueues struct {
	sent    []string
	hidden  map[string]time.Duration // receipt handle → visibility
	failVis bool
}

func (f *fakeQueues) Send(_ context.Context, q string, body []byte, _ time.Duration) error {
	f.sent = append(f.sent, q+":"+string(body))
	return nil
}

func (f *fakeQueues) ChangeVisibility(_ context.Context, _, handle string, d time.Duration) error {
	if f.failVis {
		return errors.New("sqs unreachable")
	}
	if f.hidden == nil {
		f.hidden = map[string]time.Duration{}
	}
	f.hidden[handle] = d
	return nil
}

func sqsRecord(id, body string, receives string) events.SQSMessage {
	return events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": receives}, EventSource: "aws:sqs"}
}

// handler fails "later" with a retry delay and "bad" without one.
func handler(seen *[]queue.Message) queue.Handler {
	return func(_ context.Context, m queue.Message) error {
		*seen = append(*seen, m)
		switch string(m.Body) {
		case "later":
			return queue.RetryAfter(90*time.Second, errors.New("receiver answered 503"))
		case "bad":
			return errors.New("cannot decode")
		}
		return nil
	}
}

func failedIDs(r events.SQSEventResponse) []string {
	var ids []string
	for _, f := range r.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	return ids
}

// Each failed message is reported in the batch response and the others
// are left for Lambda to delete; a failure asking for a delay hides its
// message for that delay first.
func TestSQSHandlerPartialBatch(t *testing.T) {
	q := &fakeQueues{}
	var seen []queue.Message
	h := lambdaapi.NewSQSHandler(queue.WebhookDeliveries, handler(&seen), q, quiet)
	resp, err := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		sqsRecord("m1", "ok", "1"), sqsRecord("m2", "later", "3"), sqsRecord("m3", "bad", "1"), sqsRecord("m4", "ok", ""),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); !slices.Equal(got, []string{"m2", "m3"}) {
		t.Fatalf("failures %v, want [m2 m3]", got)
	}
	if len(q.hidden) != 1 || q.hidden["rh-m2"] != 90*time.Second {
		t.Fatalf("visibility changes %v, want m2 hidden for 90s", q.hidden)
	}
	if len(seen) != 4 || seen[1].Receives != 3 || seen[3].Receives != 1 || seen[0].Queue != queue.WebhookDeliveries || seen[0].ID != "m1" {
		t.Fatalf("messages handed to the work: %+v", seen)
	}
}

// A batch without failures answers an empty list (not null), and a
// visibility change that fails still reports the message failed.
func TestSQSHandlerEmptyFailuresAndFailedDelay(t *testing.T) {
	q := &fakeQueues{failVis: true}
	var seen []queue.Message
	h := lambdaapi.NewSQSHandler("jobs", handler(&seen), q, quiet)
	resp, _ := h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsRecord("m1", "ok", "1")}})
	if resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("response %+v, want an empty list", resp)
	}
	resp, _ = h(context.Background(), events.SQSEvent{Records: []events.SQSMessage{sqsRecord("m2", "later", "1")}})
	if got := failedIDs(resp); !slices.Equal(got, []string{"m2"}) {
		t.Fatalf("failures %v", got)
	}
}

// Messages still unhandled when the invocation's time is up are reported
// failed without being handled.
func TestSQSHandlerOutOfTime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var seen []queue.Message
	h := lambdaapi.NewSQSHandler("jobs", func(_ context.Context, m queue.Message) error {
		seen = append(seen, m)
		cancel()
		return nil
	}, &fakeQueues{}, quiet)
	resp, _ := h(ctx, events.SQSEvent{Records: []events.SQSMessage{sqsRecord("m1", "a", "1"), sqsRecord("m2", "b", "1")}})
	if len(seen) != 1 || !slices.Equal(failedIDs(resp), []string{"m2"}) {
		t.Fatalf("handled %d, failures %v", len(seen), failedIDs(resp))
	}
}

// A worker for a queue without registered work fails at init, naming the
// queue.
func TestNewWorkerWithoutWork(t *testing.T) {
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := app.New(context.Background(), config.Default(), app.WithStore(s), app.WithClock(clock.System{}))
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambdaapi.NewWorker(a, &fakeQueues{}, "no-such-queue")
	if err == nil || h != nil || !strings.Contains(err.Error(), "no-such-queue") {
		t.Fatalf("NewWorker = %v, %v", h, err)
	}
}

// The partial batch flow on the SQS emulator, with the test playing the
// event source mapping: it receives a batch, invokes the handler and
// deletes what the response does not name. The handled message is gone,
// the one failed with a delay comes back after it, the other failed one
// only after the visibility timeout.
func TestSQSHandlerOnEmulator(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{Visibility: 30 * time.Second}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	ctx := context.Background()
	for _, b := range []string{"ok", "soon", "bad"} {
		if err := q.Send(ctx, "jobs", []byte(b), 0); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	h := lambdaapi.NewSQSHandler("jobs", func(_ context.Context, m queue.Message) error {
		seen = append(seen, string(m.Body))
		switch string(m.Body) {
		case "soon":
			return queue.RetryAfter(time.Second, errors.New("busy"))
		case "bad":
			return errors.New("bad")
		}
		return nil
	}, q, quiet)
	invoke := func(ds []sqsqueue.Delivery) {
		var ev events.SQSEvent
		for _, d := range ds {
			ev.Records = append(ev.Records, sqsRecord(d.ID, string(d.Body), "1"))
			ev.Records[len(ev.Records)-1].ReceiptHandle = d.ReceiptHandle
		}
		resp, err := h(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		failed := failedIDs(resp)
		for _, d := range ds {
			if !slices.Contains(failed, d.ID) {
				if err := q.Delete(ctx, "jobs", d.ReceiptHandle); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(seen) < 3 && time.Now().Before(deadline) {
		ds, err := q.Receive(ctx, "jobs", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		invoke(ds)
	}
	time.Sleep(time.Second)
	var ds []sqsqueue.Delivery
	for deadline := time.Now().Add(3 * time.Second); len(ds) == 0 && time.Now().Before(deadline); {
		got, err := q.Receive(ctx, "jobs", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		ds = got
	}
	if len(ds) != 1 || string(ds[0].Body) != "soon" {
		t.Fatalf("after the delay the queue gave %d messages (%v), want only the delayed retry", len(ds), ds)
	}
}

// The parallel handler handles a batch's messages at once: each handler
// below waits until every message of the batch has started, which a
// handler taking them in turn never sees (it gives up at a deadline and
// fails). Failures are still reported message by message.
func TestParallelSQSHandlerHandlesABatchAtOnce(t *testing.T) {
	const n = 10
	var started sync.WaitGroup
	started.Add(n - 1)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := lambdaapi.NewParallelSQSHandler("deliveries", func(ctx context.Context, m queue.Message) error {
		if string(m.Body) == "bad" {
			return errors.New("cannot decode")
		}
		started.Done()
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}, &fakeQueues{}, quiet)
	var ev events.SQSEvent
	for i := range n - 1 {
		ev.Records = append(ev.Records, sqsRecord(fmt.Sprintf("m%d", i), "ok", "1"))
	}
	ev.Records = append(ev.Records, sqsRecord("m-bad", "bad", "1"))
	resp, err := h(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := failedIDs(resp); !slices.Equal(got, []string{"m-bad"}) {
		t.Fatalf("failed %v, want only m-bad (the others waited for each other: handled at once)", got)
	}
}
