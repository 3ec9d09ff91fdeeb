package sqsqueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/store"
)

// batchCalls counts the SendMessageBatch calls a client makes, and the
// entries of each; it can also play SQS failing entries on its side
// (SenderFault false), which the emulator never does: the first
// faults[body] calls carrying such a body leave it out of the request and
// answer it Failed with InternalError.
type batchCalls struct {
	mu      sync.Mutex
	entries []int
	faults  map[string]int
}

func (b *batchCalls) client(c *sqs.Client) *sqs.Client {
	return sqs.New(c.Options(), func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(middleware.InitializeMiddlewareFunc("batchCalls", b.handle), middleware.Before)
		})
	})
}

func (b *batchCalls) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	req, ok := in.Parameters.(*sqs.SendMessageBatchInput)
	if !ok {
		return next.HandleInitialize(ctx, in)
	}
	b.mu.Lock()
	b.entries = append(b.entries, len(req.Entries))
	var kept []types.SendMessageBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, e := range req.Entries {
		if body := aws.ToString(e.MessageBody); b.faults[body] > 0 {
			b.faults[body]--
			failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError"), Message: aws.String("try again"), SenderFault: false})
			continue
		}
		kept = append(kept, e)
	}
	b.mu.Unlock()
	if len(kept) == 0 {
		return middleware.InitializeOutput{Result: &sqs.SendMessageBatchOutput{Failed: failed}}, middleware.Metadata{}, nil
	}
	in.Parameters = &sqs.SendMessageBatchInput{QueueUrl: req.QueueUrl, Entries: kept}
	out, md, err := next.HandleInitialize(ctx, in)
	if res, ok := out.Result.(*sqs.SendMessageBatchOutput); ok && err == nil {
		res.Failed = append(res.Failed, failed...)
	}
	return out, md, err
}

func (b *batchCalls) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.entries)
}

// SendEach sends more than ten messages to two queues in calls of at most
// ten of one queue each, every message with its own delay: the delayed
// ones stay hidden until their delay has passed, and all arrive once.
func TestSendEachInBatches(t *testing.T) {
	calls := &batchCalls{}
	c := calls.client(sqstest.Client(t))
	qs := sqstest.NewQueues(t, c, sqstest.Layout{}, "jobs", "hooks")
	q := sqsqueue.New(c, qs.URLs)
	var msgs []queue.Outgoing
	var wantJobs, wantHooks []string
	for i := range 13 {
		body := fmt.Sprintf("job-%02d", i)
		var delay time.Duration
		if i%4 == 0 {
			body, delay = fmt.Sprintf("job-%02d-later", i), 2*time.Second
		}
		msgs = append(msgs, queue.Outgoing{Queue: "jobs", Body: []byte(body), Delay: delay})
		wantJobs = append(wantJobs, body)
		if i < 12 {
			hook := fmt.Sprintf("hook-%02d", i)
			msgs = append(msgs, queue.Outgoing{Queue: "hooks", Body: []byte(hook)})
			wantHooks = append(wantHooks, hook)
		}
	}
	errs := q.SendEach(context.Background(), msgs)
	if len(errs) != len(msgs) {
		t.Fatalf("%d errors for %d messages", len(errs), len(msgs))
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("message %d (%s): %v", i, msgs[i].Body, err)
		}
	}
	if got := calls.sizes(); !slices.Equal(got, []int{10, 3, 10, 2}) {
		t.Fatalf("SendMessageBatch calls of %v entries, want 10 and 3 to jobs, 10 and 2 to hooks", got)
	}
	early := bodies(receiveAll(t, q, "jobs", 9, 5*time.Second))
	for _, b := range early {
		if strings.HasSuffix(b, "-later") {
			t.Fatalf("%s received before its delay", b)
		}
	}
	late := bodies(receiveAll(t, q, "jobs", 4, 8*time.Second))
	got := append(early, late...)
	slices.Sort(got)
	slices.Sort(wantJobs)
	if !slices.Equal(got, wantJobs) {
		t.Fatalf("jobs received %v, want %v", got, wantJobs)
	}
	if got := bodies(receiveAll(t, q, "hooks", 12, 5*time.Second)); !slices.Equal(got, wantHooks) {
		t.Fatalf("hooks received %v, want %v", got, wantHooks)
	}
}

// An entry SQS refuses fails alone, named with SQS's reason, and the
// others of its call are sent; an entry SQS failed on its side is sent
// again, a bounded number of times; an unknown queue, or a body that is
// not UTF-8 or has a character SQS refuses, fails before any call.
func TestSendEachPartialFailure(t *testing.T) {
	calls := &batchCalls{faults: map[string]int{"flaky": 1, "down": 100}}
	c := calls.client(sqstest.Client(t))
	qs := sqstest.NewQueues(t, c, sqstest.Layout{MaxMessageSize: 1024}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	msgs := []queue.Outgoing{
		{Queue: "jobs", Body: []byte("first")},
		{Queue: "jobs", Body: []byte(strings.Repeat("x", 2000))},
		{Queue: "jobs", Body: []byte("flaky")},
		{Queue: "jobs", Body: []byte("down")},
		{Queue: "nowhere", Body: []byte("lost")},
		{Queue: "jobs", Body: []byte{0xff}},
		{Queue: "jobs", Body: []byte("{\"name\":\"\uffff\"}")},
		{Queue: "jobs", Body: []byte("bell\a")},
		{Queue: "jobs", Body: []byte("last \t\n\U0001F600")},
	}
	errs := q.SendEach(context.Background(), msgs)
	for i, want := range []string{"", "shorter than 1024", "", "InternalError", `"nowhere"`, "UTF-8", "U+FFFF", "U+0007", ""} {
		switch {
		case want == "" && errs[i] != nil:
			t.Errorf("message %d: %v, want sent", i, errs[i])
		case want != "" && (errs[i] == nil || !strings.Contains(errs[i].Error(), want)):
			t.Errorf("message %d: %v, want an error saying %q", i, errs[i], want)
		}
	}
	// One call of five, then "flaky" and "down" again, then "down" once
	// more: three calls at most for a fault on SQS's side.
	if got := calls.sizes(); !slices.Equal(got, []int{5, 2, 1}) {
		t.Fatalf("SendMessageBatch calls of %v entries, want 5, 2, 1", got)
	}
	if got := bodies(receiveAll(t, q, "jobs", 3, 5*time.Second)); !slices.Equal(got, []string{"first", "flaky", "last \t\n\U0001F600"}) {
		t.Fatalf("received %v", got)
	}
}

// The router over SQS: a pass of twelve changes, one of whose messages
// SQS refuses (too long for the queue), routes the changes before it and
// fails from it on; every other change's messages arrive, in three calls
// for 24 messages to one queue.
func TestRouterOverSQS(t *testing.T) {
	calls := &batchCalls{}
	c := calls.client(sqstest.Client(t))
	qs := sqstest.NewQueues(t, c, sqstest.Layout{MaxMessageSize: 1024}, "jobs")
	q := sqsqueue.New(c, qs.URLs)
	rule := func(_ context.Context, ch store.Change) ([]pipeline.Outgoing, error) {
		second := ch.Key.SK + "/b"
		if ch.Key.SK == "JOB#05" {
			second = strings.Repeat("y", 2000)
		}
		return []pipeline.Outgoing{{Queue: "jobs", Body: []byte(ch.Key.SK + "/a")}, {Queue: "jobs", Body: []byte(second), Delay: time.Second}}, nil
	}
	var changes []store.Change
	var want []string
	for i := range 12 {
		sk := fmt.Sprintf("JOB#%02d", i)
		changes = append(changes, store.Change{Kind: store.Inserted, Key: store.Key{PK: "V", SK: sk}})
		want = append(want, sk+"/a")
		if i != 5 {
			want = append(want, sk+"/b")
		}
	}
	slices.Sort(want)
	n, err := pipeline.Router{Rules: []pipeline.Rule{rule}, Queue: q}.Route(context.Background(), changes)
	if n != 5 || err == nil || !strings.Contains(err.Error(), "shorter than 1024") {
		t.Fatalf("routed %d, %v; want 5 and the refused message's error", n, err)
	}
	got := calls.sizes() // made at once, in any order
	slices.Sort(got)
	if !slices.Equal(got, []int{4, 10, 10}) {
		t.Fatalf("SendMessageBatch calls of %v entries, want 10, 10, 4", got)
	}
	if got := bodies(receiveAll(t, q, "jobs", len(want), 8*time.Second)); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
}
