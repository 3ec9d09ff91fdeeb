package main

// The trace (serve --trace FILE): one JSON line per thing the runner's
// pollers and functions did, with the times a delivery's way through the
// deployed shape can be cut at: when the stream poller read a record and
// invoked the router on it, when each message was sent, received by a
// queue's poller and handed to a worker invocation, and how long each
// invocation took, cold or warm. scripts/loadtest joins it with what its
// receivers got to split each delivery's latency into these segments.
// Times are Unix milliseconds of this machine's clock.

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Trace writes trace lines; a nil *Trace writes nothing.
type Trace struct {
	mu  sync.Mutex
	enc *json.Encoder
}

// NewTrace writes to w.
func NewTrace(w io.Writer) *Trace { return &Trace{enc: json.NewEncoder(w)} }

// TraceLine is one line. Kind says which fields are set: "stream" (a
// record the router was invoked on), "sqs" (a message a worker was invoked
// on), "invoke" (any invocation), "poll" (an iteration of the stream
// poller).
type TraceLine struct {
	Kind string `json:"k"`
	// stream: the record's keys and creation time.
	PK      string `json:"pk,omitempty"`
	SK      string `json:"sk,omitempty"`
	Created int64  `json:"created,omitempty"`
	// sqs: the queue, the message and what it carries.
	Queue    string `json:"queue,omitempty"`
	Message  string `json:"msg,omitempty"`
	Event    string `json:"event,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Lane     string `json:"lane,omitempty"` // also a stream record's lane of its shard, with a ParallelizationFactor above 1
	Deferred int    `json:"deferrals,omitempty"`
	Sent     int64  `json:"sent,omitempty"`     // SentTimestamp
	Receives int    `json:"receives,omitempty"` // ApproximateReceiveCount
	Batch    int    `json:"batch,omitempty"`    // records or messages in the invocation
	// stream and sqs: when the poller read it, invoked the function and
	// had its answer; whether the invocation failed it.
	Fetched int64 `json:"fetched,omitempty"`
	Invoked int64 `json:"invoked,omitempty"`
	Done    int64 `json:"done,omitempty"`
	Failed  bool  `json:"failed,omitempty"`
	// invoke: the function, whether it started a process, and how long it
	// took from the call to the answer.
	Function string  `json:"fn,omitempty"`
	Cold     bool    `json:"cold,omitempty"`
	Start    int64   `json:"start,omitempty"`
	Took     float64 `json:"took_ms,omitempty"`
	// poll (an iteration of the stream poller): its DescribeStream and
	// GetRecords calls' time (Took is the whole iteration's).
	Describe float64 `json:"describe_ms,omitempty"`
	Get      float64 `json:"get_ms,omitempty"`
}

func (t *Trace) write(l TraceLine) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.enc.Encode(l)
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
