package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
)

// router is a stream function that fails on poison records: with a
// partial batch response (reporting the first poison record) or, when
// crash is set, with a function error for the whole batch.
type router struct {
	mu      sync.Mutex
	poison  map[string]bool
	crash   bool
	done    []string   // records handled, in order
	batches [][]string // every invocation's records
}

func (r *router) Invoke(_ context.Context, _ string, payload []byte) ([]byte, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var seqs []string
	for _, rec := range ev.Records {
		seqs = append(seqs, rec.Change.SequenceNumber)
	}
	r.batches = append(r.batches, seqs)
	if r.crash && slices.ContainsFunc(seqs, func(s string) bool { return r.poison[s] }) {
		return nil, &FunctionError{Function: "router", Message: "panic: poison"}
	}
	for _, s := range seqs {
		if r.poison[s] {
			return json.Marshal(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: s}}})
		}
		r.done = append(r.done, s)
	}
	return json.Marshal(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}})
}

func records(n int, at time.Time) []streamtypes.Record {
	var out []streamtypes.Record
	for i := 1; i <= n; i++ {
		out = append(out, streamtypes.Record{EventName: streamtypes.OperationTypeInsert, EventID: aws.String(fmt.Sprint(i)),
			Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(fmt.Sprintf("%03d", i)), ApproximateCreationDateTime: aws.Time(at),
				Keys: map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "k"}}}})
	}
	return out
}

// drain runs deliver over recs as the stream loop does: each call takes a
// batch from the front and returns how many records are finished.
func drain(t *testing.T, s *Sources, m *StreamMapping, recs []streamtypes.Record) {
	t.Helper()
	for guard := 0; len(recs) > 0; guard++ {
		if guard > 100 {
			t.Fatal("the stream does not advance")
		}
		n := s.deliver(context.Background(), s.Tpl.Functions["R"], m, "shard-1", recs[:min(len(recs), m.BatchSize)], nil)
		recs = recs[n:]
	}
}

func streamSources(inv Invoker) *Sources {
	return &Sources{
		Tpl: &Template{Functions: map[string]*Function{"R": {Logical: "R", Name: "router"}}, Queues: map[string]*Queue{}},
		Fns: inv, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), StreamARN: "arn:stream",
	}
}

// TestStreamMapping plays the stream mapping's settings against a function
// that fails on one record.
func TestStreamMapping(t *testing.T) {
	now := time.Now()
	t.Run("partial batch response: the records before the failure are done, the batch restarts there", func(t *testing.T) {
		r := &router{poison: map[string]bool{"003": true}}
		s := streamSources(r)
		m := &StreamMapping{Function: "R", BatchSize: 5, PartialBatch: true, MaxRetries: 1, MaxRecordAge: -1}
		drain(t, s, m, records(5, now))
		// 001-005 fails at 003; 003-005 fails at once, is retried once and
		// then dropped whole (to the on-failure destination), as Lambda
		// drops a batch whose retries are spent.
		if !slices.Equal(r.done, []string{"001", "002"}) || len(r.batches) != 3 || !slices.Equal(r.batches[2], []string{"003", "004", "005"}) {
			t.Fatalf("handled %v; batches %v", r.done, r.batches)
		}
	})
	t.Run("partial batch response with bisect (the stack's settings): only the poison record is dropped", func(t *testing.T) {
		r := &router{poison: map[string]bool{"003": true}}
		s := streamSources(r)
		m := &StreamMapping{Function: "R", BatchSize: 5, Bisect: true, PartialBatch: true, MaxRetries: 1, MaxRecordAge: -1}
		drain(t, s, m, records(5, now))
		if !slices.Equal(r.done, []string{"001", "002", "004", "005"}) {
			t.Fatalf("handled %v; batches %v", r.done, r.batches)
		}
	})
	t.Run("bisect on a function error isolates the poison record", func(t *testing.T) {
		r := &router{poison: map[string]bool{"003": true}, crash: true}
		s := streamSources(r)
		m := &StreamMapping{Function: "R", BatchSize: 4, Bisect: true, PartialBatch: true, MaxRetries: 0, MaxRecordAge: -1}
		drain(t, s, m, records(4, now))
		if !slices.Equal(r.done, []string{"001", "002", "004"}) {
			t.Fatalf("handled %v; batches %v", r.done, r.batches)
		}
		if !slices.ContainsFunc(r.batches, func(b []string) bool { return slices.Equal(b, []string{"003"}) }) {
			t.Fatalf("the poison record was never invoked alone: %v", r.batches)
		}
	})
	t.Run("without bisect a function error retries the whole batch, then drops it", func(t *testing.T) {
		r := &router{poison: map[string]bool{"002": true}, crash: true}
		s := streamSources(r)
		m := &StreamMapping{Function: "R", BatchSize: 3, PartialBatch: true, MaxRetries: 2, MaxRecordAge: -1}
		drain(t, s, m, records(3, now))
		if len(r.batches) != 3 || len(r.done) != 0 {
			t.Fatalf("batches %v, handled %v", r.batches, r.done)
		}
	})
	t.Run("records past the maximum age are not sent", func(t *testing.T) {
		r := &router{}
		s := streamSources(r)
		m := &StreamMapping{Function: "R", BatchSize: 10, PartialBatch: true, MaxRetries: 1, MaxRecordAge: time.Hour}
		drain(t, s, m, append(records(2, now.Add(-2*time.Hour)), records(1, now)...))
		if len(r.batches) != 1 || len(r.batches[0]) != 1 {
			t.Fatalf("batches %v", r.batches)
		}
	})
	t.Run("an identifier not in the batch fails the whole batch", func(t *testing.T) {
		s := streamSources(invokerFunc(func() ([]byte, error) {
			return json.Marshal(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{ItemIdentifier: "nope"}}})
		}))
		_, err := s.invokeStream(context.Background(), s.Tpl.Functions["R"], &StreamMapping{PartialBatch: true}, records(2, now))
		if err == nil {
			t.Fatal("an unknown identifier was accepted")
		}
	})
}

// gate is a stream function that blocks on the records of the items in
// held until release is closed, telling entered when it does.
type gate struct {
	held    map[string]bool // sort keys
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	done    map[string][]string // sort key → its records' sequence numbers, in the order handled
}

func (g *gate) Invoke(_ context.Context, _ string, payload []byte) ([]byte, error) {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	for _, rec := range ev.Records {
		if sk := rec.Change.Keys["sk"].String(); g.held[sk] {
			g.entered <- sk
			<-g.release
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, rec := range ev.Records {
		sk := rec.Change.Keys["sk"].String()
		g.done[sk] = append(g.done[sk], rec.Change.SequenceNumber)
	}
	return json.Marshal(events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}})
}

func (g *gate) handled(sk string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.done[sk])
}

// itemRecords are records of the items sks, one after the other, in turn
// (sequence numbers 001, 002, ...): per item in order.
func itemRecords(each int, sks ...string) []streamtypes.Record {
	var out []streamtypes.Record
	for range each {
		for _, sk := range sks {
			n := len(out) + 1
			out = append(out, streamtypes.Record{EventName: streamtypes.OperationTypeInsert, EventID: aws.String(fmt.Sprint(n)),
				Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(fmt.Sprintf("%03d", n)), ApproximateCreationDateTime: aws.Time(time.Now()),
					Keys: map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: "V#1"}, "sk": &streamtypes.AttributeValueMemberS{Value: sk}}}})
		}
	}
	return out
}

// twoLanes returns the sort keys of two items (pk V#1) that hash to
// different lanes among n.
func twoLanes(t *testing.T, n int) (string, string) {
	t.Helper()
	first := itemRecords(1, "EVENT#0")[0]
	for i := 1; i < 100; i++ {
		sk := fmt.Sprintf("EVENT#%d", i)
		if laneOf(itemRecords(1, sk)[0], n) != laneOf(first, n) {
			return "EVENT#0", sk
		}
	}
	t.Fatal("every item takes the same lane")
	return "", ""
}

// TestStreamLanes plays a shard's lanes (ParallelizationFactor): a batch
// blocked on one item holds its lane; with a factor above 1 another item's
// records are still delivered meanwhile, each item's in order; with 1
// (Lambda's default) they wait behind it, as one shard did before.
func TestStreamLanes(t *testing.T) {
	for _, factor := range []int{1, 10} {
		t.Run(fmt.Sprintf("factor %d", factor), func(t *testing.T) {
			slow, fast := twoLanes(t, 10)
			g := &gate{held: map[string]bool{slow: true}, entered: make(chan string, 10), release: make(chan struct{}), done: map[string][]string{}}
			s := streamSources(g)
			m := &StreamMapping{Function: "R", BatchSize: 1, PartialBatch: true, MaxRetries: 1, MaxRecordAge: -1, Parallel: factor}
			l := s.newLanes(t.Context(), s.Tpl.Functions["R"], m, "shard-1", &fetchTimes{})
			defer l.stop()
			recs := itemRecords(3, slow, fast) // 001 slow, 002 fast, 003 slow, ...
			l.add(recs)
			if sk := <-g.entered; sk != slow {
				t.Fatalf("entered %s", sk)
			}
			if factor == 1 {
				// One lane: the function holds its first batch, the others wait.
				if got := g.handled(fast); len(got) != 0 || l.idle() {
					t.Fatalf("%s handled %v while the lane's first batch was held", fast, got)
				}
			} else {
				for deadline := time.Now().Add(30 * time.Second); len(g.handled(fast)) < 3; time.Sleep(10 * time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%s handled %v while %s was held, want all 3", fast, g.handled(fast), slow)
					}
				}
				if got := g.handled(slow); len(got) != 0 {
					t.Fatalf("%s handled %v before it was released", slow, got)
				}
			}
			close(g.release)
			for deadline := time.Now().Add(30 * time.Second); !l.idle(); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the lanes did not finish: %s %v, %s %v", slow, g.handled(slow), fast, g.handled(fast))
				}
			}
			if a, b := g.handled(slow), g.handled(fast); !slices.Equal(a, []string{"001", "003", "005"}) || !slices.Equal(b, []string{"002", "004", "006"}) {
				t.Fatalf("handled %s %v, %s %v; want each item's records once, in order", slow, a, fast, b)
			}
		})
	}
	t.Run("a full lane stops the shard's reads until it drains", func(t *testing.T) {
		slow, _ := twoLanes(t, 2)
		g := &gate{held: map[string]bool{slow: true}, entered: make(chan string, 100), release: make(chan struct{}), done: map[string][]string{}}
		s := streamSources(g)
		m := &StreamMapping{Function: "R", BatchSize: 1, PartialBatch: true, MaxRetries: 1, MaxRecordAge: -1, Parallel: 2}
		l := s.newLanes(t.Context(), s.Tpl.Functions["R"], m, "shard-1", nil)
		defer l.stop()
		l.add(itemRecords(laneBatches*m.BatchSize-1, slow))
		<-g.entered
		if !l.room() {
			t.Fatal("no room below the bound")
		}
		l.add(itemRecords(1, slow))
		if l.room() {
			t.Fatalf("room with %d records held in a lane", laneBatches*m.BatchSize)
		}
		close(g.release)
		for deadline := time.Now().Add(30 * time.Second); !l.idle(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the lane did not drain: %v", g.handled(slow))
			}
		}
		if !l.room() || len(g.handled(slow)) != laneBatches*m.BatchSize {
			t.Fatalf("after draining: room %v, handled %d", l.room(), len(g.handled(slow)))
		}
	})
}

type invokerFunc func() ([]byte, error)

func (f invokerFunc) Invoke(context.Context, string, []byte) ([]byte, error) { return f() }

// worker is an SQS function that fails the messages whose body is "bad",
// reporting them in its partial batch response.
type worker struct {
	mu       sync.Mutex
	receives map[string][]string // body → ApproximateReceiveCount of each delivery
}

func (w *worker) Invoke(_ context.Context, _ string, payload []byte) ([]byte, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		w.receives[m.Body] = append(w.receives[m.Body], m.Attributes["ApproximateReceiveCount"])
		if m.Body == "bad" {
			res.BatchItemFailures = append(res.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return json.Marshal(res)
}

func (w *worker) count(body string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.receives[body])
}

// TestQueueMapping plays an SQS mapping on the SQS emulator, with the queue
// created as createResources creates the template's: a message the worker
// reports failed comes back after the visibility timeout and goes to the
// dead-letter queue after maxReceiveCount receives; the others are deleted
// after one delivery.
func TestQueueMapping(t *testing.T) {
	c := sqstest.Client(t)
	// The visibility timeout is long enough that a loaded machine deletes a
	// handled message before it shows again.
	suffix := fmt.Sprint(time.Now().UnixNano())
	tpl := &Template{
		Functions: map[string]*Function{"W": {Logical: "W", Name: "worker"}},
		Queues: map[string]*Queue{
			"Q":   {Logical: "Q", Name: "cloud-q-" + suffix, VisibilityTimeout: 5 * time.Second, Retention: time.Hour, DeadLetter: "DLQ", MaxReceiveCount: 2},
			"DLQ": {Logical: "DLQ", Name: "cloud-dlq-" + suffix, VisibilityTimeout: 30 * time.Second, Retention: time.Hour},
		},
	}
	if err := createQueues(t.Context(), tpl, c); err != nil {
		t.Fatal(err)
	}
	w := &worker{receives: map[string][]string{}}
	s := &Sources{Tpl: tpl, Fns: w, SQS: c, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, body := range []string{"good-1", "bad", "good-2"} {
		if _, err := c.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(tpl.Queues["Q"].URL), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		s.queue(ctx, QueueMapping{Function: "W", Queue: "Q", BatchSize: 10, PartialBatch: true})
		close(done)
	}()
	defer func() { cancel(); <-done }()

	var dead []string
	for deadline := time.Now().Add(30 * time.Second); len(dead) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing reached the dead-letter queue; deliveries %v", w.receives)
		}
		out, err := c.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(tpl.Queues["DLQ"].URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			dead = append(dead, aws.ToString(m.Body))
		}
	}
	if !slices.Equal(dead, []string{"bad"}) || !slices.Equal(w.receives["bad"], []string{"1", "2"}) || w.count("good-1") != 1 || w.count("good-2") != 1 {
		t.Fatalf("dead letters %v; deliveries %v", dead, w.receives)
	}
}
