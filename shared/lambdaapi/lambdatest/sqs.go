package lambdatest

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// SQSEvent reads the SQS batch sample at path, relative to the repository's
// events/ folder (say "bulk-worker/bulk-operation.json"), as a worker of
// queueName receives it. It fails the test on a field Lambda does not send,
// a record not from SQS or not from a queue whose name ends in queueName
// (the stack prefixes names), a body whose MD5 is not md5OfBody, or a
// missing ApproximateReceiveCount.
func SQSEvent(t testing.TB, path, queueName string) events.SQSEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "events", filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ev events.SQSEvent
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(ev.Records) == 0 {
		t.Fatalf("%s: no records", path)
	}
	for i, r := range ev.Records {
		sum := md5.Sum([]byte(r.Body))
		if r.EventSource != "aws:sqs" || !strings.HasPrefix(r.EventSourceARN, "arn:aws:sqs:"+r.AWSRegion+":") ||
			!strings.HasSuffix(r.EventSourceARN, "-"+queueName) || r.MessageId == "" || r.ReceiptHandle == "" {
			t.Errorf("%s: record %d is not a message of the %s queue: %+v", path, i, queueName, r)
		}
		if r.Md5OfBody != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: record %d: md5OfBody %s does not match its body", path, i, r.Md5OfBody)
		}
		if r.Attributes["ApproximateReceiveCount"] == "" {
			t.Errorf("%s: record %d has no ApproximateReceiveCount", path, i)
		}
	}
	return ev
}

// Sent is a message a worker or the router sent.
type Sent struct {
	Queue string
	Body  []byte
	Delay time.Duration
}

// Queues stands in for the SQS queues in tests of the router and the
// workers (a lambdaapi.Queues): it keeps what is sent and which received
// messages were hidden for how long.
type Queues struct {
	mu     sync.Mutex
	sent   []Sent
	Hidden map[string]time.Duration // receipt handle → visibility
}

// Send keeps the message.
func (q *Queues) Send(_ context.Context, name string, body []byte, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, Sent{Queue: name, Body: append([]byte(nil), body...), Delay: delay})
	return nil
}

// ChangeVisibility keeps the new visibility of a received message.
func (q *Queues) ChangeVisibility(_ context.Context, _, receiptHandle string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.Hidden == nil {
		q.Hidden = map[string]time.Duration{}
	}
	q.Hidden[receiptHandle] = d
	return nil
}

// Take removes and returns the messages sent to the named queue.
func (q *Queues) Take(name string) []Sent {
	q.mu.Lock()
	defer q.mu.Unlock()
	var took, kept []Sent
	for _, s := range q.sent {
		if s.Queue == name {
			took = append(took, s)
		} else {
			kept = append(kept, s)
		}
	}
	q.sent = kept
	return took
}

// SQSBatch wraps messages of the named queue as its event source mapping
// hands them to the worker: one record each, received for the first time,
// each with a fresh random message id as SQS gives one (workers claim
// attempts by message id, so ids must never repeat across batches).
func SQSBatch(queueName string, msgs ...Sent) events.SQSEvent {
	var ev events.SQSEvent
	for _, m := range msgs {
		id := messageID()
		sum := md5.Sum(m.Body)
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId:      id,
			ReceiptHandle:  "rh-" + id,
			Body:           string(m.Body),
			Md5OfBody:      hex.EncodeToString(sum[:]),
			Attributes:     map[string]string{"ApproximateReceiveCount": "1"},
			EventSource:    "aws:sqs",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:sellerapi-test-" + queueName,
			AWSRegion:      "us-east-1",
		})
	}
	return ev
}

// messageID is a random version 4 UUID, the shape of an SQS message id.
func messageID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
