package main

// The table's stream feeding the stream router as its event source mapping
// says: batches, partial batch responses, bisection, retries, record age and
// the on-failure destination.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func (s *Sources) stream(ctx context.Context, m *StreamMapping) {
	fn := s.Tpl.Functions[m.Function]
	done := map[string]bool{}     // finished shards
	iters := map[string]*string{} // shard → next iterator
	reading := map[string]*lanes{}
	fetched := map[string]string{} // shard → sequence number of the last record read
	at := &fetchTimes{}            // when the poller read each record (for the trace)
	defer func() {
		for _, l := range reading {
			l.stop()
		}
	}()
	// The shards are described again when one ends (its children follow
	// it), when none is being read, and every describeEvery; each poll
	// otherwise only reads records, as Lambda's pollers read each shard
	// (DescribeStream allows 10 calls a second in all). Described on every
	// poll, the call cost DynamoDB Local as much as the reads.
	var desc *dynamodbstreams.DescribeStreamOutput
	var described time.Time
	ended := false
	for ctx.Err() == nil {
		began := time.Now()
		var describing, getting time.Duration
		records := 0
		if desc == nil || ended || len(iters) == 0 || time.Since(described) >= describeEvery {
			out, err := s.Streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.StreamARN)})
			if err != nil {
				if ctx.Err() == nil {
					s.Log.Error("stream: describe", "error", err)
				}
				sleep(ctx, time.Second)
				continue
			}
			desc, described, describing, ended = out, time.Now(), time.Since(began), false
		}
		// busy: records to route were read (read again at once); full: a
		// shard's lanes had no room (read again soon).
		busy, full := false, false
		for _, sh := range desc.StreamDescription.Shards {
			id := aws.ToString(sh.ShardId)
			if done[id] || (sh.ParentShardId != nil && !done[*sh.ParentShardId] && knownShard(desc.StreamDescription.Shards, *sh.ParentShardId)) {
				continue
			}
			if _, ok := iters[id]; !ok {
				in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.StreamARN), ShardId: sh.ShardId,
					ShardIteratorType: streamtypes.ShardIteratorType(m.StartingPosition)}
				switch {
				case fetched[id] != "":
					// A lost iterator resumes after what was read.
					in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(fetched[id])
				case len(done) > 0 || len(iters) > 0:
					in.ShardIteratorType = streamtypes.ShardIteratorTypeTrimHorizon // a child shard is read whole
				}
				out, err := s.Streams.GetShardIterator(ctx, in)
				if err != nil {
					s.Log.Error("stream: shard iterator", "shard", id, "error", err)
					continue
				}
				iters[id] = out.ShardIterator
			}
			l := reading[id]
			if l == nil {
				l = s.newLanes(ctx, fn, m, id, at)
				reading[id] = l
			}
			if iters[id] != nil && !l.room() {
				full = true
			} else if iters[id] != nil {
				t := time.Now()
				limit := min(1000, m.BatchSize)
				out, err := s.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iters[id], Limit: aws.Int32(int32(limit))})
				getting += time.Since(t)
				if err != nil {
					if ctx.Err() == nil {
						s.Log.Error("stream: get records", "shard", id, "error", err)
					}
					delete(iters, id)
					continue
				}
				var keep []streamtypes.Record
				for _, r := range out.Records {
					// Records the mapping's filters drop are never sent.
					if m.Filters.Match(asDoc(lambdaRecord(r, s.StreamARN))) {
						keep = append(keep, r)
					}
				}
				at.read(keep)
				l.add(keep)
				records += len(out.Records)
				if n := len(out.Records); n > 0 {
					fetched[id] = aws.ToString(out.Records[n-1].Dynamodb.SequenceNumber)
				}
				// Read again at once when there was work or more may wait.
				busy = busy || len(keep) > 0 || len(out.Records) == limit
				iters[id] = out.NextShardIterator
			}
			if iters[id] == nil && l.idle() {
				l.stop()
				delete(reading, id)
				done[id] = true
				ended = true // its children, if any, are read next
			}
		}
		s.Trace.write(TraceLine{Kind: "poll", Start: ms(began), Took: msOf(time.Since(began)), Describe: msOf(describing), Get: msOf(getting), Batch: records})
		switch {
		case busy:
		case full:
			sleep(ctx, 20*time.Millisecond)
		default:
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// laneBatches is how many batches a lane holds before the shard's reader
// waits for it (backpressure): the reader reads a shard only while each of
// its lanes holds fewer than laneBatches × BatchSize records.
const laneBatches = 10

// lanes holds one shard's records between its reader and the function:
// the mapping's Parallel lanes, each record in the lane its keys hash to,
// each lane invoking the function with its own batches in order (deliver),
// so a slow batch holds its lane and no other.
type lanes struct {
	s      *Sources
	fn     *Function
	m      *StreamMapping
	shard  string
	at     *fetchTimes
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	queued [][]streamtypes.Record // each lane's records not yet done
	busy   []bool                 // a lane's batch is with the function
	wake   []chan struct{}        // each lane's signal that records came
}

func (s *Sources) newLanes(ctx context.Context, fn *Function, m *StreamMapping, shard string, at *fetchTimes) *lanes {
	n := max(1, m.Parallel)
	ctx, cancel := context.WithCancel(ctx)
	l := &lanes{s: s, fn: fn, m: m, shard: shard, at: at, cancel: cancel,
		queued: make([][]streamtypes.Record, n), busy: make([]bool, n), wake: make([]chan struct{}, n)}
	for i := range n {
		l.wake[i] = make(chan struct{}, 1)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.run(ctx, i)
		}()
	}
	return l
}

// add queues records (in stream order) in their lanes.
func (l *lanes) add(recs []streamtypes.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		i := laneOf(r, len(l.queued))
		l.queued[i] = append(l.queued[i], r)
		select {
		case l.wake[i] <- struct{}{}:
		default:
		}
	}
}

// room reports whether every lane can take another read.
func (l *lanes) room() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, q := range l.queued {
		if len(q) >= laneBatches*l.m.BatchSize {
			return false
		}
	}
	return true
}

// idle reports whether every record added is done.
func (l *lanes) idle() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.queued {
		if len(q) > 0 || l.busy[i] {
			return false
		}
	}
	return true
}

// stop ends the lanes' invocations and waits for them.
func (l *lanes) stop() {
	l.cancel()
	l.wg.Wait()
}

// run is lane i: its next batch (up to BatchSize of its records, in
// order) goes to the function until done, then the next.
func (l *lanes) run(ctx context.Context, i int) {
	for {
		l.mu.Lock()
		batch := l.queued[i][:min(len(l.queued[i]), l.m.BatchSize)]
		l.busy[i] = len(batch) > 0
		l.mu.Unlock()
		if len(batch) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-l.wake[i]:
				continue
			}
		}
		n := l.s.deliver(ctx, l.fn, l.m, l.shard, batch, l.at)
		l.at.drop(batch[:n])
		l.mu.Lock()
		l.queued[i] = l.queued[i][n:]
		l.busy[i] = false
		l.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// laneOf is the lane of a record among n: a hash of its item's keys, so
// every record of an item takes the same lane and stays in order.
func laneOf(r streamtypes.Record, n int) int {
	if n <= 1 {
		return 0
	}
	names := make([]string, 0, len(r.Dynamodb.Keys))
	for k := range r.Dynamodb.Keys {
		names = append(names, k)
	}
	slices.Sort(names)
	h := fnv.New32a()
	for _, k := range names {
		v, _ := json.Marshal(lambdaValue(r.Dynamodb.Keys[k]))
		fmt.Fprintf(h, "%s=%s;", k, v)
	}
	return int(h.Sum32() % uint32(n))
}

// fetchTimes is when the poller read each record it still holds, by
// sequence number, for the trace; a nil *fetchTimes keeps nothing.
type fetchTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (f *fetchTimes) read(recs []streamtypes.Record) {
	if f == nil {
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.at == nil {
		f.at = map[string]time.Time{}
	}
	for _, r := range recs {
		f.at[aws.ToString(r.Dynamodb.SequenceNumber)] = now
	}
}

func (f *fetchTimes) of(r streamtypes.Record) time.Time {
	if f == nil {
		return time.Time{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at[aws.ToString(r.Dynamodb.SequenceNumber)]
}

func (f *fetchTimes) drop(recs []streamtypes.Record) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range recs {
		delete(f.at, aws.ToString(r.Dynamodb.SequenceNumber))
	}
}

// describeEvery is how often the stream poller looks for new shards when
// none has ended.
const describeEvery = 5 * time.Second

func knownShard(shards []streamtypes.Shard, id string) bool {
	for _, s := range shards {
		if aws.ToString(s.ShardId) == id {
			return true
		}
	}
	return false
}

// deliver invokes the stream function with batch until it is done, the
// retries run out or the records expire, and returns how many records are
// finished with (the whole batch, unless ctx ended).
func (s *Sources) deliver(ctx context.Context, fn *Function, m *StreamMapping, shard string, batch []streamtypes.Record, fetchedAt *fetchTimes) int {
	// Records past the maximum age are not sent; their batch goes to the
	// on-failure destination.
	if m.MaxRecordAge > 0 {
		n := 0
		for n < len(batch) && time.Since(aws.ToTime(batch[n].Dynamodb.ApproximateCreationDateTime)) > m.MaxRecordAge {
			n++
		}
		if n > 0 {
			s.failed(ctx, m, shard, batch[:n], "RecordAgeExceeded", 0)
			return n
		}
	}
	retries := 0
	for {
		if ctx.Err() != nil {
			return 0
		}
		invoked := time.Now()
		failedAt, err := s.invokeStream(ctx, fn, m, batch)
		s.traceStream(m, batch, fetchedAt, invoked, err != nil || failedAt >= 0)
		if err == nil && failedAt < 0 {
			return len(batch)
		}
		if err == nil && failedAt > 0 {
			// Partial success: everything before the failed record is done;
			// the next batch starts there.
			return failedAt
		}
		if err != nil && m.Bisect && len(batch) > 1 {
			half := len(batch) / 2
			s.Log.Warn("stream: function error; bisecting the batch", "function", fn.Name, "records", len(batch), "error", err)
			n := s.deliver(ctx, fn, m, shard, batch[:half], fetchedAt)
			if n < half {
				return n
			}
			return half + s.deliver(ctx, fn, m, shard, batch[half:], fetchedAt)
		}
		if m.MaxRetries >= 0 && retries >= m.MaxRetries {
			s.failed(ctx, m, shard, batch, "RetryAttemptsExhausted", retries)
			return len(batch)
		}
		retries++
		s.Log.Warn("stream: batch failed; retrying", "function", fn.Name, "records", len(batch), "retry", retries, "error", err)
		if !sleep(ctx, backoff(retries)) {
			return 0
		}
	}
}

// traceStream writes a trace line for each record of a batch the router
// was invoked on, with its shard lane when the mapping has more than one.
func (s *Sources) traceStream(m *StreamMapping, batch []streamtypes.Record, fetchedAt *fetchTimes, invoked time.Time, failed bool) {
	if s.Trace == nil {
		return
	}
	done := time.Now()
	for _, r := range batch {
		var pk, sk string
		if v, ok := r.Dynamodb.Keys["pk"].(*streamtypes.AttributeValueMemberS); ok {
			pk = v.Value
		}
		if v, ok := r.Dynamodb.Keys["sk"].(*streamtypes.AttributeValueMemberS); ok {
			sk = v.Value
		}
		lane := ""
		if m.Parallel > 1 {
			lane = strconv.Itoa(laneOf(r, m.Parallel))
		}
		s.Trace.write(TraceLine{Kind: "stream", PK: pk, SK: sk, Lane: lane, Created: ms(aws.ToTime(r.Dynamodb.ApproximateCreationDateTime)), Batch: len(batch),
			Fetched: ms(fetchedAt.of(r)), Invoked: ms(invoked), Done: ms(done), Failed: failed})
	}
}

func backoff(n int) time.Duration {
	d := 100 * time.Millisecond << min(n, 7)
	return min(d, 10*time.Second)
}

// invokeStream returns the index of the first failed record (-1: none),
// or an error for a failed invocation (which fails the whole batch).
func (s *Sources) invokeStream(ctx context.Context, fn *Function, m *StreamMapping, batch []streamtypes.Record) (int, error) {
	ev := events.DynamoDBEvent{}
	for _, r := range batch {
		ev.Records = append(ev.Records, lambdaRecord(r, s.StreamARN))
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return 0, err
	}
	out, err := s.Fns.Invoke(ctx, fn.Logical, payload)
	if err != nil {
		return 0, err
	}
	if !m.PartialBatch {
		return -1, nil
	}
	var res events.DynamoDBEventResponse
	if len(out) > 0 && string(out) != "null" {
		if err := json.Unmarshal(out, &res); err != nil {
			return 0, fmt.Errorf("the partial batch response %s: %w", out, err)
		}
	}
	first := -1
	for _, f := range res.BatchItemFailures {
		i := -1
		for j, r := range batch {
			if aws.ToString(r.Dynamodb.SequenceNumber) == f.ItemIdentifier {
				i = j
			}
		}
		if i < 0 {
			// Lambda treats an unknown or empty identifier as a failure of
			// the whole batch.
			return 0, fmt.Errorf("the partial batch response names %q, which is not in the batch", f.ItemIdentifier)
		}
		if first < 0 || i < first {
			first = i
		}
	}
	if first == 0 {
		return 0, errors.New("the batch's first record failed")
	}
	return first, nil
}

// failed sends the description of a dropped batch to the on-failure
// destination, as Lambda does (the records themselves are not included).
func (s *Sources) failed(ctx context.Context, m *StreamMapping, shard string, batch []streamtypes.Record, condition string, retries int) {
	s.Log.Error("stream: batch dropped", "condition", condition, "records", len(batch), "first_sequence_number", aws.ToString(batch[0].Dynamodb.SequenceNumber))
	if m.OnFailure == "" {
		return
	}
	doc := map[string]any{
		"requestContext": map[string]any{
			"functionArn":            "arn:aws:lambda:" + region() + ":" + localAccount + ":function:" + s.Tpl.Functions[m.Function].Name,
			"condition":              condition,
			"approximateInvokeCount": retries + 1,
		},
		"version":   "1.0",
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": map[string]any{
			"shardId":                         shard,
			"startSequenceNumber":             aws.ToString(batch[0].Dynamodb.SequenceNumber),
			"endSequenceNumber":               aws.ToString(batch[len(batch)-1].Dynamodb.SequenceNumber),
			"approximateArrivalOfFirstRecord": aws.ToTime(batch[0].Dynamodb.ApproximateCreationDateTime).UTC().Format(time.RFC3339),
			"approximateArrivalOfLastRecord":  aws.ToTime(batch[len(batch)-1].Dynamodb.ApproximateCreationDateTime).UTC().Format(time.RFC3339),
			"batchSize":                       len(batch),
			"streamArn":                       s.StreamARN,
		},
	}
	b, _ := json.Marshal(doc)
	q := s.Tpl.Queues[m.OnFailure]
	if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(string(b))}); err != nil {
		s.Log.Error("stream: on-failure destination", "queue", q.Name, "error", err)
	}
}

func lambdaRecord(r streamtypes.Record, arn string) events.DynamoDBEventRecord {
	d := r.Dynamodb
	return events.DynamoDBEventRecord{
		AWSRegion:      region(),
		EventID:        aws.ToString(r.EventID),
		EventName:      string(r.EventName),
		EventSource:    "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: arn,
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: aws.ToTime(d.ApproximateCreationDateTime)},
			Keys:                        lambdaImage(d.Keys),
			NewImage:                    lambdaImage(d.NewImage),
			OldImage:                    lambdaImage(d.OldImage),
			SequenceNumber:              aws.ToString(d.SequenceNumber),
			SizeBytes:                   aws.ToInt64(d.SizeBytes),
			StreamViewType:              string(d.StreamViewType),
		},
	}
}

func lambdaImage(m map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if m == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		out[k] = lambdaValue(v)
	}
	return out
}

func lambdaValue(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch x := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(x.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(x.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(x.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(x.Value)
	case *streamtypes.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(x.Value)
	case *streamtypes.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(x.Value))
		for i, e := range x.Value {
			l[i] = lambdaValue(e)
		}
		return events.NewListAttribute(l)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(lambdaImage(x.Value))
	}
	return events.NewNullAttribute()
}
