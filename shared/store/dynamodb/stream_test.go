package dynamodb_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
)

// streamsClient is a DynamoDB Streams client of the emulator the table is on.
func streamsClient(t *testing.T) *dynamodbstreams.Client {
	t.Helper()
	c, err := dynamodb.NewStreamsClient(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithBaseEndpoint(os.Getenv(ddbtest.EndpointEnv)),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("local", "local", "")),
	)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect is a route that keeps every change it is given.
type collect struct {
	changes []store.Change
	// failAt, when positive, makes the route fail on that change (counted
	// from 1 over the whole test), once.
	failAt int
}

func (c *collect) route(_ context.Context, changes []store.Change) (int, error) {
	for i, ch := range changes {
		if c.failAt > 0 && len(c.changes)+1 == c.failAt {
			c.failAt = 0
			return i, errors.New("queue unreachable")
		}
		c.changes = append(c.changes, ch)
	}
	return len(changes), nil
}

// The store's writes read back from the table's stream as changes whose
// images decode exactly as the store's reads: an insert with its new item,
// a modify with both, a remove with the old one.
func TestStreamChanges(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	streams := streamsClient(t)
	r, err := dynamodb.NewStreamReader(ctx, c, streams, table, dynamodb.FromTrimHorizon)
	if err != nil {
		t.Fatal(err)
	}
	k := store.Key{PK: "VENDOR#ven_1", SK: "EVENT#evt_1"}
	first := store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{"id":"evt_1","type":"product.created"}`),
		Nums: map[string]int64{"n": 3}, ExpiresAt: 4102444800}
	if err := s.Transact(ctx, store.Put(first, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, store.Update(k, []byte(`{"id":"evt_1","v":2}`), 2, map[string]int64{"n": -1, "m": 5}, store.IfVersion(1))); err != nil {
		t.Fatal(err)
	}
	second, err := s.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, store.Delete(k, store.Cond{Exists: true})); err != nil {
		t.Fatal(err)
	}

	got := &collect{failAt: 2}
	if n, err := r.Poll(ctx, got.route); err == nil || n != 1 {
		t.Fatalf("poll with a failing route = %d, %v; want 1 and the failure", n, err)
	}
	for i := 0; len(got.changes) < 3 && i < 20; i++ {
		if _, err := r.Poll(ctx, got.route); err != nil {
			t.Fatal(err)
		}
	}
	want := []store.Change{
		{Kind: store.Inserted, Key: k, New: &first},
		{Kind: store.Modified, Key: k, New: &second, Old: &first},
		{Kind: store.Removed, Key: k, Old: &second},
	}
	if !reflect.DeepEqual(got.changes, want) {
		t.Fatalf("changes:\n got %s\nwant %s", show(got.changes), show(want))
	}
	if n, err := r.Poll(ctx, got.route); err != nil || n != 0 {
		t.Fatalf("a poll with nothing new = %d, %v", n, err)
	}
}

func show(cs []store.Change) string {
	b, _ := json.Marshal(cs)
	return string(b)
}

// A reader from the latest position skips what the stream held before it
// was made.
func TestStreamFromLatest(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	put := func(sk string) {
		if err := s.Transact(ctx, store.Put(store.Item{PK: "P", SK: sk, Version: 1}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
	}
	put("before")
	r, err := dynamodb.NewStreamReader(ctx, c, streamsClient(t), table, dynamodb.FromLatest)
	if err != nil {
		t.Fatal(err)
	}
	put("after")
	got := &collect{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got.changes) == 0 && time.Now().Before(deadline) {
		if _, err := r.Poll(ctx, got.route); err != nil {
			t.Fatal(err)
		}
	}
	if len(got.changes) != 1 || got.changes[0].Key.SK != "after" {
		t.Fatalf("changes %s, want only the write after the reader started", show(got.changes))
	}
}

// Lambda's view of a stream record (the JSON it invokes the stream router
// with, binary attributes in base64) converts to the same change as the
// record read from the stream.
func TestChangeFromLambdaMatchesStream(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	streams := streamsClient(t)
	k := store.Key{PK: "VENDOR#ven_1", SK: "BULK#bulk_1"}
	if err := s.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte{'{', '}', 0xff}, ExpiresAt: 99}, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, store.Add(k, map[string]int64{"done": 1}, 0, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	// A product's item, its document packed (packed_test.go).
	product := variableProduct(t, 8)
	if err := s.Transact(ctx, store.Put(product, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	// Read the raw records.
	desc, err := streams.ListStreams(ctx, &dynamodbstreams.ListStreamsInput{TableName: aws.String(table)})
	if err != nil || len(desc.Streams) != 1 {
		t.Fatalf("streams of %s: %v, %v", table, desc, err)
	}
	arn := desc.Streams[0].StreamArn
	sd, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		t.Fatal(err)
	}
	var records []streamtypes.Record
	for _, sh := range sd.StreamDescription.Shards {
		it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId,
			ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		out, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, out.Records...)
	}
	if len(records) != 3 {
		t.Fatalf("%d records, want 3", len(records))
	}
	packed := 0
	for _, rec := range records {
		if _, ok := rec.Dynamodb.NewImage["Z"]; ok {
			packed++
		}
	}
	if packed != 1 {
		t.Fatalf("%d stream images with a packed document, want the product's", packed)
	}
	for _, rec := range records {
		want, err := dynamodb.ChangeFromStream(rec)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.DynamoDBEventRecord
		if err := json.Unmarshal(lambdaJSON(t, rec), &ev); err != nil {
			t.Fatal(err)
		}
		got, err := dynamodb.ChangeFromLambda(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("from Lambda %s\n from stream %s", show([]store.Change{got}), show([]store.Change{want}))
		}
		if got.Key == product.Key() && (got.New == nil || !bytes.Equal(got.New.Data, product.Data)) {
			t.Fatalf("the product's change carries %+v, want its document", got.New)
		}
	}
}

// lambdaJSON renders a stream record as Lambda's event JSON shows it.
func lambdaJSON(t *testing.T, rec streamtypes.Record) []byte {
	t.Helper()
	img := func(m map[string]streamtypes.AttributeValue) map[string]any {
		if m == nil {
			return nil
		}
		out := map[string]any{}
		for name, av := range m {
			switch v := av.(type) {
			case *streamtypes.AttributeValueMemberS:
				out[name] = map[string]string{"S": v.Value}
			case *streamtypes.AttributeValueMemberN:
				out[name] = map[string]string{"N": v.Value}
			case *streamtypes.AttributeValueMemberB:
				out[name] = map[string]string{"B": base64.StdEncoding.EncodeToString(v.Value)}
			default:
				t.Fatalf("attribute %s of an unexpected type %T", name, av)
			}
		}
		return out
	}
	d := map[string]any{
		"Keys":           img(rec.Dynamodb.Keys),
		"SequenceNumber": aws.ToString(rec.Dynamodb.SequenceNumber),
		"StreamViewType": string(rec.Dynamodb.StreamViewType),
	}
	if rec.Dynamodb.NewImage != nil {
		d["NewImage"] = img(rec.Dynamodb.NewImage)
	}
	if rec.Dynamodb.OldImage != nil {
		d["OldImage"] = img(rec.Dynamodb.OldImage)
	}
	b, err := json.Marshal(map[string]any{"eventID": aws.ToString(rec.EventID), "eventName": string(rec.EventName),
		"eventSource": "aws:dynamodb", "eventVersion": "1.1", "awsRegion": "us-east-1", "dynamodb": d})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An unknown event name is refused rather than routed as something else.
func TestChangeFromLambdaRefusesUnknownEvent(t *testing.T) {
	_, err := dynamodb.ChangeFromLambda(events.DynamoDBEventRecord{EventName: "UPSERT", Change: events.DynamoDBStreamRecord{
		Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("P"), "sk": events.NewStringAttribute("S")}}})
	if err == nil {
		t.Fatal("converted an UPSERT")
	}
}
