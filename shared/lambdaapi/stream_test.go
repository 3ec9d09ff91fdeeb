package lambdaapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

func streamRecord(seq, event, sk string) events.DynamoDBEventRecord {
	it := store.Item{PK: "VENDOR#ven_1", SK: sk, Version: 1, Data: []byte(`{}`)}
	r := events.DynamoDBEventRecord{EventID: "id-" + seq, EventName: event, EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{SequenceNumber: seq, StreamViewType: "NEW_AND_OLD_IMAGES",
			Keys: map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(it.PK), "sk": events.NewStringAttribute(it.SK)}}}
	if event != "REMOVE" {
		r.Change.NewImage = dynamodb.LambdaImage(it)
	}
	if event != "INSERT" {
		r.Change.OldImage = dynamodb.LambdaImage(it)
	}
	return r
}

// routeUntil routes changes in order and fails at the one whose sort key
// is stop.
func routeUntil(stop string, routed *[]string) lambdaapi.Route {
	return func(_ context.Context, cs []store.Change) (int, error) {
		for i, c := range cs {
			if c.Key.SK == stop {
				return i, errors.New("queue unreachable")
			}
			*routed = append(*routed, string(c.Kind)+" "+c.Key.SK)
		}
		return len(cs), nil
	}
}

func TestStreamHandlerPartialBatch(t *testing.T) {
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord("100", "INSERT", "EVENT#a"), streamRecord("200", "MODIFY", "EVENT#b"),
		streamRecord("300", "REMOVE", "EVENT#c"), streamRecord("400", "INSERT", "EVENT#d"),
	}}
	unknown := batch
	unknown.Records = append([]events.DynamoDBEventRecord(nil), batch.Records...)
	unknown.Records[2].EventName = "UPSERT"
	for _, tc := range []struct {
		name   string
		ev     events.DynamoDBEvent
		stop   string
		routed int
		failed string // the sequence number reported, or none
	}{
		{"all routed", batch, "", 4, ""},
		{"routing stops at the second record", batch, "EVENT#b", 1, "200"},
		{"routing stops at the first record", batch, "EVENT#a", 0, "100"},
		{"an unconvertible third record", unknown, "", 2, "300"},
		{"an empty batch", events.DynamoDBEvent{}, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var routed []string
			resp, err := lambdaapi.NewStreamHandler(routeUntil(tc.stop, &routed), quiet)(context.Background(), tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(routed) != tc.routed {
				t.Fatalf("routed %v, want %d changes", routed, tc.routed)
			}
			if tc.failed == "" {
				if resp.BatchItemFailures == nil || len(resp.BatchItemFailures) != 0 {
					t.Fatalf("failures %+v, want an empty list", resp.BatchItemFailures)
				}
				return
			}
			if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != tc.failed {
				t.Fatalf("failures %+v, want only sequence number %s", resp.BatchItemFailures, tc.failed)
			}
		})
	}
}

// TestRouterHandlerTellsItsTriggersApart: the stream-router takes stream
// batches from its mapping and sweeps from its schedule (with the grace
// the schedule names, or the default); any other payload is an error.
func TestRouterHandlerTellsItsTriggersApart(t *testing.T) {
	ctx := context.Background()
	var routed []string
	stream := lambdaapi.NewStreamHandler(routeUntil("", &routed), slog.New(slog.DiscardHandler))
	var graces []time.Duration
	sweep := func(_ context.Context, _ queue.Sender, grace time.Duration) (pipeline.Swept, error) {
		graces = append(graces, grace)
		return pipeline.Swept{Routed: 2}, nil
	}
	h := lambdaapi.NewRouterHandler(stream, sweep, nil)
	batch, err := json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{streamRecord("1", "INSERT", "EVENT#1")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h(ctx, batch); err != nil || len(routed) != 1 {
		t.Fatalf("stream batch: routed %v, %v", routed, err)
	}
	out, err := h(ctx, json.RawMessage(`{"sweep":{"grace_seconds":30}}`))
	if err != nil || out.(pipeline.Swept).Routed != 2 {
		t.Fatalf("sweep: %v, %v", out, err)
	}
	for _, p := range []string{`{"sweep":{}}`, `{"sweep":{"grace_seconds":0}}`} {
		if _, err := h(ctx, json.RawMessage(p)); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(graces, []time.Duration{30 * time.Second, pipeline.SweepGrace, 0}) {
		t.Fatalf("graces %v", graces)
	}
	for _, p := range []string{`{}`, `{"Records":[]}`, `[1]`, `{"source":"aws.events"}`} {
		if _, err := h(ctx, json.RawMessage(p)); err == nil {
			t.Errorf("%s: no error", p)
		}
	}
}
