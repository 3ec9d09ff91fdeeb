package lambdaapi

// The stream-router Lambda: batches of the table's DynamoDB stream, turned
// into store changes and routed to the work queues by the works' rules.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// StreamHandler is the function Lambda invokes with a batch of stream
// records. Its event source mapping must report batch item failures
// (FunctionResponseTypes: ReportBatchItemFailures).
type StreamHandler = func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// Route routes changes in order and reports how many it routed before a
// failure (pipeline.Router.Route).
type Route = func(ctx context.Context, changes []store.Change) (int, error)

// NewStreamHandler converts a batch's records and routes them in order.
// When routing stops at a record (or a record cannot be converted), the
// response names that record's sequence number as the batch's only
// failure: Lambda then counts every earlier record done and retries from
// that one, so work is sent at least once and never skipped.
func NewStreamHandler(route Route, log *slog.Logger) StreamHandler {
	return func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
		n, err := dynamodb.RouteRecords(ctx, ev.Records, dynamodb.ChangeFromLambda, route)
		if n < len(ev.Records) {
			rec := ev.Records[n]
			log.ErrorContext(ctx, "stream batch stopped; Lambda retries from the failed record", "routed", n,
				"records", len(ev.Records), "sequence_number", rec.Change.SequenceNumber, "event_id", rec.EventID, "error", err)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: rec.Change.SequenceNumber})
		}
		return resp, nil
	}
}

// NewStreamRouter returns the stream handler over the app's router (the
// rules of every registered work), sending through q.
func NewStreamRouter(a *app.App, q queue.Sender) StreamHandler {
	r := a.Router(q)
	if len(r.Rules) == 0 {
		a.Log.Warn("the stream router has no rules: no work is registered in shared/app/work.go")
	}
	return NewStreamHandler(r.Route, a.Log)
}

// StreamRouterMain is the composition root of the stream-router Lambda
// called name: configuration from the environment (the store, and the URL
// of every work queue: any rule may send to any), the adapters and the
// services over them (boot), the router over every work's rule, built
// once, then the Lambda loop. An init failure is printed as
// "<name>: init: <err>" and exits with status 1.
func StreamRouterMain(name string) {
	a, q := boot(context.Background(), name, queue.Names()...)
	lambda.Start(NewRouterHandler(NewStreamRouter(a, q), a.SweepUnrouted, q))
}

// SweepEvent is what the stream-router's schedule sends it: a sweep of the
// changes the stream did not route (pipeline.Sweep), older than
// GraceSeconds (default pipeline.SweepGrace; an operator re-driving at
// once gives 0).
type SweepEvent struct {
	Sweep *struct {
		GraceSeconds *int `json:"grace_seconds"`
	} `json:"sweep"`
}

// Sweep routes again what the stream did not route within grace.
type Sweep = func(ctx context.Context, q queue.Sender, grace time.Duration) (pipeline.Swept, error)

// NewRouterHandler is the stream-router's handler of both its triggers: a
// batch of stream records goes to stream, a SweepEvent (its schedule) to
// sweep, whose counts it returns. Anything else is an error.
func NewRouterHandler(stream StreamHandler, sweep Sweep, q queue.Sender) func(context.Context, json.RawMessage) (any, error) {
	return func(ctx context.Context, payload json.RawMessage) (any, error) {
		var sw SweepEvent
		if err := json.Unmarshal(payload, &sw); err == nil && sw.Sweep != nil {
			grace := pipeline.SweepGrace
			if g := sw.Sweep.GraceSeconds; g != nil && *g >= 0 {
				grace = time.Duration(*g) * time.Second
			}
			return sweep(ctx, q, grace)
		}
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(payload, &ev); err != nil || len(ev.Records) == 0 {
			return nil, fmt.Errorf("stream-router: neither a stream batch nor a sweep: %.200s", payload)
		}
		return stream(ctx, ev)
	}
}
