package sqsqueue_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
)

// receiveAll polls a queue until want messages came or the deadline passed.
// It polls without waiting: the emulator holds a long poll open for its
// whole wait, and would return a message again if its visibility timeout
// ended meanwhile.
func receiveAll(t *testing.T, q *sqsqueue.Queue, name string, want int, within time.Duration) []sqsqueue.Delivery {
	t.Helper()
	var got []sqsqueue.Delivery
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		ds, err := q.Receive(context.Background(), name, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ds...)
		if len(ds) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	return got
}

func bodies(ds []sqsqueue.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Body))
	}
	slices.Sort(out)
	return out
}

// A sent message is received once with its body and a receive count of 1,
// and gone once deleted.
func TestSendReceiveDelete(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{Visibility: time.Second}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	ctx := context.Background()
	if err := q.Send(ctx, "jobs", []byte(`{"id":"job_1"}`), 0); err != nil {
		t.Fatal(err)
	}
	ds := receiveAll(t, q, "jobs", 1, 5*time.Second)
	if len(ds) != 1 || string(ds[0].Body) != `{"id":"job_1"}` || ds[0].Receives != 1 || ds[0].Queue != "jobs" || ds[0].ID == "" {
		t.Fatalf("received %+v", ds)
	}
	if err := q.Delete(ctx, "jobs", ds[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the visibility timeout
	if again, err := q.Receive(ctx, "jobs", 10, 0); err != nil || len(again) != 0 {
		t.Fatalf("after delete: %v, %v", again, err)
	}
}

func TestUnknownQueueAndBadBody(t *testing.T) {
	q := sqsqueue.New(nil, map[string]string{"jobs": "http://127.0.0.1:1/000000000000/jobs"})
	if err := q.Send(context.Background(), "other", []byte("x"), 0); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("send to an unconfigured queue: %v", err)
	}
	if err := q.Send(context.Background(), "jobs", []byte{0xff, 0xfe}, 0); err == nil {
		t.Fatal("sent a body that is not UTF-8")
	}
}

// A delayed message stays invisible until its delay has passed; a delay
// beyond SQS's 15 minutes is cut to them rather than refused.
func TestSendDelay(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	ctx := context.Background()
	if err := q.Send(ctx, "jobs", []byte("later"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := q.Send(ctx, "jobs", []byte("much later"), 24*time.Hour); err != nil {
		t.Fatalf("a delay over the maximum: %v", err)
	}
	if ds, err := q.Receive(ctx, "jobs", 10, 0); err != nil || len(ds) != 0 {
		t.Fatalf("received before the delay: %v, %v", bodies(ds), err)
	}
	ds := receiveAll(t, q, "jobs", 1, 6*time.Second)
	if got := bodies(ds); len(got) != 1 || got[0] != "later" {
		t.Fatalf("after the delay: %v", got)
	}
}

// A message received and never deleted comes back after the visibility
// timeout with a growing receive count, and after the redrive policy's
// maxReceiveCount it lands in the dead-letter queue.
func TestRedriveToDeadLetterQueue(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{Visibility: time.Second, MaxReceives: 2}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	dlq := sqsqueue.New(c, map[string]string{"dlq": qs.DLQs["jobs"]})
	ctx := context.Background()
	if err := q.Send(ctx, "jobs", []byte("poison"), 0); err != nil {
		t.Fatal(err)
	}
	fail := func(context.Context, queue.Message) error { return errors.New("cannot handle") }
	var receives []int
	deadline := time.Now().Add(15 * time.Second)
	for len(receives) < 2 && time.Now().Before(deadline) {
		n, err := q.Work(ctx, "jobs", 10, 0, func(ctx context.Context, m queue.Message) error {
			receives = append(receives, m.Receives)
			return fail(ctx, m)
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !slices.Equal(receives, []int{1, 2}) {
		t.Fatalf("receive counts %v, want [1 2]", receives)
	}
	dead := receiveAll(t, dlq, "dlq", 1, 10*time.Second)
	if got := bodies(dead); len(got) != 1 || got[0] != "poison" {
		t.Fatalf("dead-letter queue holds %v", got)
	}
	if ds, err := q.Receive(ctx, "jobs", 10, 0); err != nil || len(ds) != 0 {
		t.Fatalf("the queue still holds %v, %v", bodies(ds), err)
	}
}

// Work handles a batch as the worker Lambda does with partial batch
// responses: handled messages are deleted, a failure asking for a delay
// comes back after that delay, another failure only after the visibility
// timeout.
func TestWorkPartialFailure(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{Visibility: 30 * time.Second}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	ctx := context.Background()
	for _, b := range []string{"ok", "retry-soon", "broken"} {
		if err := q.Send(ctx, "jobs", []byte(b), 0); err != nil {
			t.Fatal(err)
		}
	}
	handled := map[string]int{}
	h := func(_ context.Context, m queue.Message) error {
		handled[string(m.Body)]++
		switch string(m.Body) {
		case "retry-soon":
			return queue.RetryAfter(time.Second, errors.New("receiver busy"))
		case "broken":
			return errors.New("bad message")
		}
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(handled) < 3 {
		if _, err := q.Work(ctx, "jobs", 10, 0, h); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %v of 3 messages received", handled)
		}
	}
	again := receiveAll(t, q, "jobs", 1, 5*time.Second)
	// SQS counts this as the second receive; the emulator also counts the
	// visibility change as one, so it says 3.
	if got := bodies(again); len(got) != 1 || got[0] != "retry-soon" || again[0].Receives < 2 {
		t.Fatalf("after the retry delay: %v (%+v), want retry-soon, received again", got, again)
	}
	if fmt.Sprint(handled) != "map[broken:1 ok:1 retry-soon:1]" {
		t.Fatalf("handled %v", handled)
	}
}

// Resolve finds each queue's URL once by a name prefix.
func TestResolve(t *testing.T) {
	c := sqstest.Client(t)
	qs := sqstest.NewQueues(t, c, sqstest.Layout{}, queue.Names()...)
	urls, err := sqsqueue.Resolve(context.Background(), c, qs.Prefix, queue.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range queue.Names() {
		if urls[name] != qs.URLs[name] {
			t.Errorf("%s: resolved %q, want %q", name, urls[name], qs.URLs[name])
		}
	}
	if _, err := sqsqueue.Resolve(context.Background(), c, qs.Prefix, "missing"); err == nil {
		t.Fatal("resolved a queue that does not exist")
	}
}
