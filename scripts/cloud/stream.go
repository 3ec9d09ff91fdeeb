package main

// The table's stream feeding the stream router as its event source mapping
// says: batches, partial batch responses, bisection, retries, record age and
// the on-failure destination.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	pending := map[string][]streamtypes.Record{}
	fetchedAt := map[string]time.Time{} // sequence number → when the poller read it (for the trace)
	fetched := map[string]string{}      // shard → sequence number of the last record read
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
		busy := false
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
			if iters[id] != nil && len(pending[id]) < m.BatchSize {
				t := time.Now()
				out, err := s.Streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iters[id], Limit: aws.Int32(int32(min(1000, m.BatchSize)))})
				getting += time.Since(t)
				if err != nil {
					if ctx.Err() == nil {
						s.Log.Error("stream: get records", "shard", id, "error", err)
					}
					delete(iters, id)
					continue
				}
				for _, r := range out.Records {
					// Records the mapping's filters drop are never sent.
					if m.Filters.Match(asDoc(lambdaRecord(r, s.StreamARN))) {
						pending[id] = append(pending[id], r)
						if s.Trace != nil {
							fetchedAt[aws.ToString(r.Dynamodb.SequenceNumber)] = time.Now()
						}
					}
				}
				records += len(out.Records)
				if n := len(out.Records); n > 0 {
					fetched[id] = aws.ToString(out.Records[n-1].Dynamodb.SequenceNumber)
				}
				iters[id] = out.NextShardIterator
			}
			if len(pending[id]) > 0 {
				busy = true
				n := s.deliver(ctx, fn, m, id, pending[id][:min(len(pending[id]), m.BatchSize)], fetchedAt)
				for _, r := range pending[id][:n] {
					delete(fetchedAt, aws.ToString(r.Dynamodb.SequenceNumber))
				}
				pending[id] = pending[id][n:]
			}
			if iters[id] == nil && len(pending[id]) == 0 {
				done[id] = true
				ended = true // its children, if any, are read next
			}
		}
		s.Trace.write(TraceLine{Kind: "poll", Start: ms(began), Took: msOf(time.Since(began)), Describe: msOf(describing), Get: msOf(getting), Batch: records})
		if !busy {
			sleep(ctx, 200*time.Millisecond)
		}
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
func (s *Sources) deliver(ctx context.Context, fn *Function, m *StreamMapping, shard string, batch []streamtypes.Record, fetchedAt map[string]time.Time) int {
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
		s.traceStream(batch, fetchedAt, invoked, err != nil || failedAt >= 0)
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
// was invoked on.
func (s *Sources) traceStream(batch []streamtypes.Record, fetchedAt map[string]time.Time, invoked time.Time, failed bool) {
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
		s.Trace.write(TraceLine{Kind: "stream", PK: pk, SK: sk, Created: ms(aws.ToTime(r.Dynamodb.ApproximateCreationDateTime)), Batch: len(batch),
			Fetched: ms(fetchedAt[aws.ToString(r.Dynamodb.SequenceNumber)]), Invoked: ms(invoked), Done: ms(done), Failed: failed})
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
