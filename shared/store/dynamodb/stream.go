package dynamodb

// The table's stream as store changes: the stream-router Lambda converts
// the records Lambda hands it (ChangeFromLambda), and the local binary on
// DynamoDB reads the stream itself (StreamReader, ChangeFromStream). Both
// decode images with the store's own item decoding, so a change's New and
// Old are exactly what Get would have returned.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/moku/sellerapi/shared/store"
)

// ItemFromImage decodes an item's attributes (a read's item, or a stream
// record's image) as the store decodes the items it reads. Only the S, N
// and B attributes the store writes count; others are ignored.
func ItemFromImage(m map[string]types.AttributeValue) (store.Item, error) {
	return (*codec)(nil).unmarshal(m)
}

func changeKind(name string) (store.ChangeKind, error) {
	switch k := store.ChangeKind(name); k {
	case store.Inserted, store.Modified, store.Removed:
		return k, nil
	}
	return "", fmt.Errorf("dynamodb: unknown stream event %q", name)
}

// image decodes an optional image; nil when the record has none.
func image(m map[string]types.AttributeValue) (*store.Item, error) {
	if len(m) == 0 {
		return nil, nil
	}
	it, err := (*codec)(nil).unmarshal(m)
	if err != nil {
		return nil, err
	}
	return &it, nil
}

// change assembles a change from a record's parts in the SDK's types.
func change(event, seq string, keys, newImage, oldImage map[string]types.AttributeValue) (store.Change, error) {
	kind, err := changeKind(event)
	if err != nil {
		return store.Change{}, err
	}
	k, err := (*codec)(nil).unmarshal(keys)
	if err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s keys: %w", seq, err)
	}
	c := store.Change{Kind: kind, Key: k.Key()}
	if c.Key.PK == "" || c.Key.SK == "" {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s has no pk and sk", seq)
	}
	if c.New, err = image(newImage); err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s new image: %w", seq, err)
	}
	if c.Old, err = image(oldImage); err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s old image: %w", seq, err)
	}
	return c, nil
}

// ChangeFromLambda converts a record of a DynamoDB stream event, as Lambda
// delivers it to the stream router.
func ChangeFromLambda(r events.DynamoDBEventRecord) (store.Change, error) {
	seq := r.Change.SequenceNumber
	keys, err := fromLambda(r.Change.Keys)
	if err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s keys: %w", seq, err)
	}
	newImage, err := fromLambda(r.Change.NewImage)
	if err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s new image: %w", seq, err)
	}
	oldImage, err := fromLambda(r.Change.OldImage)
	if err != nil {
		return store.Change{}, fmt.Errorf("dynamodb: stream record %s old image: %w", seq, err)
	}
	return change(r.EventName, seq, keys, newImage, oldImage)
}

// fromLambda converts the attributes the store writes (S, N, B) from
// aws-lambda-go's representation.
func fromLambda(m map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for name, av := range m {
		switch av.DataType() {
		case events.DataTypeString:
			out[name] = &types.AttributeValueMemberS{Value: av.String()}
		case events.DataTypeNumber:
			out[name] = &types.AttributeValueMemberN{Value: av.Number()}
		case events.DataTypeBinary:
			out[name] = &types.AttributeValueMemberB{Value: av.Binary()}
		}
	}
	return out, nil
}

// RouteRecords converts a batch of stream records (Lambda's or DynamoDB
// Streams') in order, up to the first that does not convert, and routes
// those changes: n is how many were routed, err the router's failure or
// else the conversion's. The records from n on are for the next read.
func RouteRecords[R any](ctx context.Context, recs []R, change func(R) (store.Change, error), route Route) (n int, err error) {
	changes := make([]store.Change, 0, len(recs))
	var cerr error
	for _, rec := range recs {
		c, err := change(rec)
		if err != nil {
			cerr = err
			break
		}
		changes = append(changes, c)
	}
	if len(changes) > 0 {
		n, err = route(ctx, changes)
	}
	if err == nil {
		err = cerr
	}
	return n, err
}

// ChangeFromStream converts a record read from DynamoDB Streams.
func ChangeFromStream(r streamtypes.Record) (store.Change, error) {
	if r.Dynamodb == nil {
		return store.Change{}, errors.New("dynamodb: stream record without its change")
	}
	d := r.Dynamodb
	return change(string(r.EventName), aws.ToString(d.SequenceNumber),
		fromStream(d.Keys), fromStream(d.NewImage), fromStream(d.OldImage))
}

// fromStream converts the attributes the store writes (S, N, B) from the
// DynamoDB Streams client's types, which mirror the DynamoDB client's.
func fromStream(m map[string]streamtypes.AttributeValue) map[string]types.AttributeValue {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]types.AttributeValue, len(m))
	for name, av := range m {
		switch v := av.(type) {
		case *streamtypes.AttributeValueMemberS:
			out[name] = &types.AttributeValueMemberS{Value: v.Value}
		case *streamtypes.AttributeValueMemberN:
			out[name] = &types.AttributeValueMemberN{Value: v.Value}
		case *streamtypes.AttributeValueMemberB:
			out[name] = &types.AttributeValueMemberB{Value: v.Value}
		}
	}
	return out
}

// LambdaImage is the inverse of the Lambda conversion for the store's
// attributes, for tests and sample events: an item as Lambda shows it in
// a stream record's NewImage or OldImage.
func LambdaImage(it store.Item) map[string]events.DynamoDBAttributeValue {
	out := make(map[string]events.DynamoDBAttributeValue)
	for name, av := range (*codec)(nil).marshal(it) {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			out[name] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			out[name] = events.NewNumberAttribute(v.Value)
		case *types.AttributeValueMemberB:
			out[name] = events.NewBinaryAttribute(v.Value)
		}
	}
	return out
}

// ---- reading the stream ----

// NewStreamsClient returns a DynamoDB Streams client from the default AWS
// configuration. DynamoDB Local and LocalStack serve streams on the
// DynamoDB endpoint, so when only AWS_ENDPOINT_URL_DYNAMODB names an
// endpoint (not AWS_ENDPOINT_URL_DYNAMODB_STREAMS, nor an option or
// AWS_ENDPOINT_URL), the client uses it too.
func NewStreamsClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*dynamodbstreams.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: load AWS config: %w", err)
	}
	ddbEndpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	fallback := cfg.BaseEndpoint == nil && os.Getenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS") == "" && ddbEndpoint != ""
	return dynamodbstreams.NewFromConfig(cfg, func(o *dynamodbstreams.Options) {
		if fallback {
			o.BaseEndpoint = aws.String(ddbEndpoint)
		}
	}), nil
}

// StreamStart is where a StreamReader starts reading the shards that are
// open when it is made; shards that appear later are read from their start.
type StreamStart = streamtypes.ShardIteratorType

const (
	// FromLatest skips what the stream already holds.
	FromLatest StreamStart = streamtypes.ShardIteratorTypeLatest
	// FromTrimHorizon reads everything the stream still holds (24 hours).
	FromTrimHorizon StreamStart = streamtypes.ShardIteratorTypeTrimHorizon
)

// StreamReader reads a table's stream shard by shard, as the stream
// router's event source mapping does in AWS, and keeps its position in
// memory: a change is read again until the caller has routed it, and a
// child shard is read only once its parent is finished, so the changes of
// one item keep their order.
type StreamReader struct {
	client *dynamodbstreams.Client
	arn    string
	start  StreamStart
	shards map[string]*shard
	order  []string // shard ids, in the order they were found
	// Limit is the most records one GetRecords returns (default 100).
	Limit int32
}

type shard struct {
	id, parent string
	iter       *string
	// at is the first record not yet routed after a failure, else after
	// the last routed record; both empty before the first record.
	at, after string
	done      bool
	start     StreamStart
}

// NewStreamReader finds the table's stream and its shards. Shards open now
// are read from start; shards already closed only with FromTrimHorizon.
func NewStreamReader(ctx context.Context, tables *ddb.Client, streams *dynamodbstreams.Client, table string, start StreamStart) (*StreamReader, error) {
	out, err := tables.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return nil, fmt.Errorf("dynamodb: describe table %s: %w", table, err)
	}
	arn := aws.ToString(out.Table.LatestStreamArn)
	if arn == "" {
		return nil, fmt.Errorf("dynamodb: table %s has no stream", table)
	}
	r := &StreamReader{client: streams, arn: arn, start: start, shards: map[string]*shard{}, Limit: 100}
	if err := r.discover(ctx, true); err != nil {
		return nil, err
	}
	if start == FromLatest {
		// "Latest" means now, not at the first poll. (Should an iterator
		// expire unused, 15 minutes on, the new one starts at that time.)
		for _, id := range r.order {
			if sh := r.shards[id]; !sh.done {
				if err := r.iterator(ctx, sh); err != nil {
					return nil, err
				}
			}
		}
	}
	return r, nil
}

// Stream returns a reader of the store's table's stream.
func (s *Store) Stream(ctx context.Context, streams *dynamodbstreams.Client, start StreamStart) (*StreamReader, error) {
	return NewStreamReader(ctx, s.client, streams, s.table, start)
}

// discover adds the stream's shards not seen yet.
func (r *StreamReader) discover(ctx context.Context, initial bool) error {
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(r.arn)}
	for {
		out, err := r.client.DescribeStream(ctx, in)
		if err != nil {
			return fmt.Errorf("dynamodb: describe stream: %w", err)
		}
		for _, s := range out.StreamDescription.Shards {
			id := aws.ToString(s.ShardId)
			if _, ok := r.shards[id]; ok {
				continue
			}
			sh := &shard{id: id, parent: aws.ToString(s.ParentShardId), start: FromTrimHorizon}
			if initial {
				sh.start = r.start
				closed := s.SequenceNumberRange != nil && s.SequenceNumberRange.EndingSequenceNumber != nil
				sh.done = closed && r.start == FromLatest
			}
			r.shards[id] = sh
			r.order = append(r.order, id)
		}
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

// ready reports whether a shard may be read: its parent, if the reader
// knows it, is finished.
func (r *StreamReader) ready(sh *shard) bool {
	if sh.done {
		return false
	}
	p, ok := r.shards[sh.parent]
	return !ok || p.done
}

func (r *StreamReader) iterator(ctx context.Context, sh *shard) error {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(r.arn), ShardId: aws.String(sh.id), ShardIteratorType: sh.start}
	switch {
	case sh.at != "":
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAtSequenceNumber, aws.String(sh.at)
	case sh.after != "":
		in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(sh.after)
	}
	out, err := r.client.GetShardIterator(ctx, in)
	if err != nil {
		return fmt.Errorf("dynamodb: iterator of shard %s: %w", sh.id, err)
	}
	sh.iter = out.ShardIterator
	if sh.iter == nil {
		sh.done = true
	}
	return nil
}

// Route is how a reader hands changes on: it routes them in order and
// reports how many it routed before any failure (pipeline.Router.Route).
type Route func(ctx context.Context, changes []store.Change) (int, error)

// Poll reads each ready shard once, up to Limit records, and hands their
// changes to route. It returns how many records it read and routed. When
// route stops early, the shard is read again from the first change it did
// not route, and Poll returns the error.
func (r *StreamReader) Poll(ctx context.Context, route Route) (int, error) {
	if err := r.discover(ctx, false); err != nil {
		return 0, err
	}
	total := 0
	for _, id := range r.order {
		sh := r.shards[id]
		if !r.ready(sh) {
			continue
		}
		n, err := r.pollShard(ctx, sh, route)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (r *StreamReader) pollShard(ctx context.Context, sh *shard, route Route) (int, error) {
	var out *dynamodbstreams.GetRecordsOutput
	for attempt := 0; ; attempt++ {
		if sh.iter == nil {
			if err := r.iterator(ctx, sh); err != nil || sh.done {
				return 0, err
			}
		}
		var err error
		out, err = r.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: sh.iter, Limit: aws.Int32(r.Limit)})
		var expired *streamtypes.ExpiredIteratorException
		if errors.As(err, &expired) && attempt == 0 {
			sh.iter = nil // iterators last 15 minutes; take a new one where we were
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("dynamodb: read shard %s: %w", sh.id, err)
		}
		break
	}
	n, err := RouteRecords(ctx, out.Records, ChangeFromStream, route)
	if n > 0 {
		sh.after, sh.at = seqOf(out.Records[n-1]), ""
	}
	if err != nil || n < len(out.Records) {
		// Read again from the first record not routed.
		if at := seqOf(out.Records[n]); at != "" {
			sh.at = at
		}
		sh.iter = nil
		if err == nil {
			err = fmt.Errorf("dynamodb: shard %s: routed %d of %d changes", sh.id, n, len(out.Records))
		}
		return n, err
	}
	sh.at = ""
	sh.iter = out.NextShardIterator
	if sh.iter == nil {
		sh.done = true // a closed shard, read to its end
	}
	return n, nil
}

func seqOf(r streamtypes.Record) string {
	if r.Dynamodb == nil {
		return ""
	}
	return aws.ToString(r.Dynamodb.SequenceNumber)
}
