package main

// The event sources as Lambda's pollers play them: the table's stream
// mapping (batch size, bisect on error, retries, maximum record age,
// on-failure destination, partial batch responses), each queue's mapping
// (batch size, maximum concurrency, partial batch responses; visibility
// and redrive are the queue's own, kept by the SQS emulator) and each
// schedule.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Invoker invokes a function (by logical id) with an event; *Functions is
// one.
type Invoker interface {
	Invoke(ctx context.Context, id string, payload []byte) ([]byte, error)
}

// Sources runs the template's event sources.
type Sources struct {
	Tpl     *Template
	Fns     Invoker
	Streams *dynamodbstreams.Client
	SQS     *sqs.Client
	Log     *slog.Logger
	// StreamARN is the table's stream as the emulator names it.
	StreamARN string
	// Trace, when set, gets a line per record and message handed to a
	// function (trace.go).
	Trace *Trace
}

// Run runs every source until ctx ends.
func (s *Sources) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if s.Tpl.Stream != nil {
		wg.Go(func() { s.stream(ctx, s.Tpl.Stream) })
	}
	for _, m := range s.Tpl.QueueFeeds {
		pollers := m.MaxConcurrency
		if pollers == 0 {
			pollers = 5 // Lambda's starting number of SQS pollers
		}
		for range pollers {
			wg.Go(func() { s.queue(ctx, m) })
		}
	}
	for _, sc := range s.Tpl.Schedules {
		wg.Go(func() { s.schedule(ctx, sc) })
	}
	wg.Wait()
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// queue is one poller of an SQS mapping: it receives up to a batch,
// invokes the function and deletes what succeeded. A message that fails is
// left for the queue's visibility timeout to show again, and its redrive
// policy to dead-letter.
func (s *Sources) queue(ctx context.Context, m QueueMapping) {
	fn, q := s.Tpl.Functions[m.Function], s.Tpl.Queues[m.Queue]
	arn := "arn:aws:sqs:" + region() + ":" + localAccount + ":" + q.Name
	for ctx.Err() == nil {
		var msgs []sqstypes.Message
		received := map[string]time.Time{} // message id → when its poll returned
		deadline := time.Now().Add(m.BatchWindow)
		for len(msgs) < m.BatchSize && ctx.Err() == nil {
			// SQS answers a long poll as soon as it holds a message, with
			// up to MaxNumberOfMessages of those it has; the emulator
			// answers only when it has them all or the wait is over, which
			// held every fresh message up to the whole second. So the
			// batch's first poll asks for one message, answered when it
			// comes; the next takes what else is there without waiting,
			// unless the mapping's batching window is still open.
			first := len(msgs) == 0
			take, wait := int32(min(10, m.BatchSize-len(msgs))), int32(1)
			switch {
			case first:
				take = 1
			case !time.Now().Before(deadline):
				wait = 0
			}
			out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:                    aws.String(q.URL),
				MaxNumberOfMessages:         take,
				WaitTimeSeconds:             wait,
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
				// The older name too: the emulator knows only it.
				AttributeNames:        []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll},
				MessageAttributeNames: []string{"All"},
			})
			if err != nil {
				if ctx.Err() == nil {
					s.Log.Error("sqs: receive", "queue", q.Name, "error", err)
					sleep(ctx, time.Second)
				}
				break
			}
			msgs = append(msgs, out.Messages...)
			for _, msg := range out.Messages {
				received[aws.ToString(msg.MessageId)] = time.Now()
			}
			if len(out.Messages) == 0 || (!first && time.Now().After(deadline)) {
				break
			}
		}
		if len(msgs) == 0 {
			continue
		}
		ev := events.SQSEvent{}
		var dropped []sqstypes.DeleteMessageBatchRequestEntry
		kept := msgs[:0]
		for i, msg := range msgs {
			rec := events.SQSMessage{
				MessageId:      aws.ToString(msg.MessageId),
				ReceiptHandle:  aws.ToString(msg.ReceiptHandle),
				Body:           aws.ToString(msg.Body),
				Md5OfBody:      aws.ToString(msg.MD5OfBody),
				Attributes:     msg.Attributes,
				EventSource:    "aws:sqs",
				EventSourceARN: arn,
				AWSRegion:      region(),
			}
			if len(msg.MessageAttributes) > 0 {
				rec.MessageAttributes = map[string]events.SQSMessageAttribute{}
				for k, a := range msg.MessageAttributes {
					rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue, DataType: aws.ToString(a.DataType)}
				}
			}
			if !m.Filters.Match(asDoc(rec)) {
				// Lambda deletes the messages its filters drop.
				dropped = append(dropped, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle})
				continue
			}
			kept = append(kept, msg)
			ev.Records = append(ev.Records, rec)
		}
		if len(dropped) > 0 {
			if _, err := s.SQS.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: dropped}); err != nil {
				s.Log.Error("sqs: delete filtered", "queue", q.Name, "error", err)
			}
		}
		msgs = kept
		if len(msgs) == 0 {
			continue
		}
		payload, _ := json.Marshal(ev)
		invoked := time.Now()
		out, err := s.Fns.Invoke(ctx, fn.Logical, payload)
		s.traceBatch(q.Name, msgs, received, invoked, err)
		if err != nil {
			s.Log.Warn("sqs: batch failed; its messages return after the visibility timeout", "function", fn.Name, "queue", q.Name, "messages", len(msgs), "error", err)
			continue
		}
		failed := map[string]bool{}
		if m.PartialBatch && len(out) > 0 && string(out) != "null" {
			var res events.SQSEventResponse
			if err := json.Unmarshal(out, &res); err != nil {
				s.Log.Warn("sqs: unreadable partial batch response; the batch failed", "function", fn.Name, "response", string(out))
				continue
			}
			whole := false
			for _, f := range res.BatchItemFailures {
				known := false
				for _, msg := range msgs {
					known = known || aws.ToString(msg.MessageId) == f.ItemIdentifier
				}
				whole = whole || !known
				failed[f.ItemIdentifier] = true
			}
			if whole {
				s.Log.Warn("sqs: the partial batch response names a message not in the batch; the batch failed", "function", fn.Name)
				continue
			}
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for i, msg := range msgs {
			if !failed[aws.ToString(msg.MessageId)] {
				del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: msg.ReceiptHandle})
			}
		}
		if len(del) > 0 {
			if _, err := s.SQS.DeleteMessageBatch(context.WithoutCancel(ctx), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: del}); err != nil {
				s.Log.Error("sqs: delete", "queue", q.Name, "error", err)
			}
		}
	}
}

// traceBatch writes a trace line for each message of a batch a worker was
// invoked on.
func (s *Sources) traceBatch(queue string, msgs []sqstypes.Message, received map[string]time.Time, invoked time.Time, err error) {
	if s.Trace == nil {
		return
	}
	done := time.Now()
	for _, msg := range msgs {
		var body struct {
			EventID   string `json:"event_id"`
			Attempt   int    `json:"attempt"`
			Lane      string `json:"lane"`
			Deferrals int    `json:"deferrals"`
		}
		_ = json.Unmarshal([]byte(aws.ToString(msg.Body)), &body)
		sent, _ := strconv.ParseInt(msg.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
		receives, _ := strconv.Atoi(msg.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		s.Trace.write(TraceLine{Kind: "sqs", Queue: queue, Message: aws.ToString(msg.MessageId), Event: body.EventID, Attempt: body.Attempt, Lane: body.Lane, Deferred: body.Deferrals,
			Sent: sent, Receives: receives, Batch: len(msgs), Fetched: ms(received[aws.ToString(msg.MessageId)]), Invoked: ms(invoked), Done: ms(done), Failed: err != nil})
	}
}

// schedule invokes a rule's function on its rate, with the rule's input
// or a scheduled event, retrying a failed invocation as the target's retry
// policy says.
func (s *Sources) schedule(ctx context.Context, sc Schedule) {
	fn := s.Tpl.Functions[sc.Function]
	tick := time.NewTicker(sc.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case at := <-tick.C:
			ev := events.EventBridgeEvent{
				Version: "0", ID: fmt.Sprintf("%d", at.UnixNano()), DetailType: "Scheduled Event", Source: "aws.events",
				AccountID: localAccount, Time: at.UTC(), Region: region(),
				Resources: []string{"arn:aws:events:" + region() + ":" + localAccount + ":rule/" + sc.Name},
				Detail:    json.RawMessage("{}"),
			}
			payload, _ := json.Marshal(ev)
			if sc.Input != nil {
				payload = sc.Input
			}
			for try := 0; ; try++ {
				_, err := s.Fns.Invoke(ctx, fn.Logical, payload)
				if err == nil || ctx.Err() != nil {
					break
				}
				if try >= sc.Retries || time.Since(at) > sc.MaxEventAge {
					s.Log.Error("schedule: invocation failed; retries exhausted", "rule", sc.Name, "function", fn.Name, "error", err)
					break
				}
				s.Log.Warn("schedule: invocation failed; retrying", "rule", sc.Name, "function", fn.Name, "error", err)
				if !sleep(ctx, backoff(try+1)) {
					return
				}
			}
		}
	}
}
