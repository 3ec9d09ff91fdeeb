package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/webhook"
)

// sample reads events/stream-router/insert-event.json as Lambda decodes it.
func sample(t *testing.T) events.DynamoDBEvent {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "stream-router", "insert-event.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var ev events.DynamoDBEvent
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("insert-event.json: %v", err)
	}
	return ev
}

// sender records messages and fails the sends whose body contains fail.
type sender struct {
	sent []string
	fail string
}

func (s *sender) Send(_ context.Context, q string, body []byte, _ time.Duration) error {
	if s.fail != "" && strings.Contains(string(body), s.fail) {
		return errors.New("sqs unreachable")
	}
	s.sent = append(s.sent, q+" "+string(body))
	return nil
}

// eventRule is a rule like the webhook work's: one message per new event.
func eventRule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, datamodel.EventPrefix) {
		return nil, nil
	}
	e, err := event.Decode(*c.New)
	if err != nil {
		return nil, err
	}
	return []pipeline.Outgoing{{Queue: "deliveries", Body: []byte(e.ID + " " + e.Type)}}, nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// The sample is an INSERT of an event item as the stream shows it: keys,
// and a new image with the version, the event's JSON document (binary,
// base64 in the JSON) and its 90-day expiry.
func TestSampleIsAnEventInsert(t *testing.T) {
	ev := sample(t)
	if len(ev.Records) != 1 {
		t.Fatalf("%d records", len(ev.Records))
	}
	r := ev.Records[0]
	if r.EventSource != "aws:dynamodb" || r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" || r.Change.SequenceNumber == "" ||
		!strings.Contains(r.EventSourceArn, ":table/") || !strings.Contains(r.EventSourceArn, "/stream/") {
		t.Fatalf("record %+v is not shaped like a DynamoDB stream record", r)
	}
	c, err := dynamodb.ChangeFromLambda(r)
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind != store.Inserted || c.Old != nil || c.New == nil || c.New.Key() != c.Key || c.New.Version != 1 {
		t.Fatalf("change %+v", c)
	}
	e, err := event.Decode(*c.New)
	if err != nil {
		t.Fatal(err)
	}
	if datamodel.EventKey(e.VendorID, e.ID) != c.Key || e.Type != event.ProductCreated || c.New.ExpiresAt != e.CreatedAt.Add(event.Retention).Unix() {
		t.Fatalf("event %+v in item %+v", e, c.New)
	}
}

// The handler routes the sample's event to its queue and reports no
// failure.
func TestRoutesSample(t *testing.T) {
	s := &sender{}
	h := lambdaapi.NewStreamHandler(pipeline.Router{Rules: []pipeline.Rule{eventRule}, Queue: s}.Route, quiet)
	resp, err := h(context.Background(), sample(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if len(s.sent) != 1 || s.sent[0] != "deliveries evt_06ds1vc9o3cetb9r28hmqner3s product.created" {
		t.Fatalf("sent %q", s.sent)
	}
}

// When a send fails midway through a batch, the records before it are
// done and the response names the failed record's sequence number, so
// Lambda retries from it; the retry sends what was not sent.
func TestFailedSendReportsItsRecord(t *testing.T) {
	one := sample(t).Records[0]
	second := one
	second.EventID = "9f61408e3afb633e50cdf1b20de6f466"
	second.Change.SequenceNumber = "4421584600000000017450439207"
	second.Change.NewImage = dynamodb.LambdaImage(store.Item{PK: "VENDOR#ven_2lgkxvntt4ayxh7fa7fvrxm2uq", SK: "EVENT#evt_06ds1vc9o3cetb9r28hmqner4a", Version: 1,
		Data: []byte(`{"id":"evt_06ds1vc9o3cetb9r28hmqner4a","type":"product.published","vendor_id":"ven_2lgkxvntt4ayxh7fa7fvrxm2uq"}`)})
	second.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": second.Change.NewImage["pk"], "sk": second.Change.NewImage["sk"]}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{one, second}}

	s := &sender{fail: "product.published"}
	h := lambdaapi.NewStreamHandler(pipeline.Router{Rules: []pipeline.Rule{eventRule}, Queue: s}.Route, quiet)
	resp, err := h(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "4421584600000000017450439207" {
		t.Fatalf("failures %+v, want the second record's sequence number", resp.BatchItemFailures)
	}
	if len(s.sent) != 1 || !strings.Contains(s.sent[0], "product.created") {
		t.Fatalf("sent %q before the failure", s.sent)
	}
	// Lambda's retry starts at the failed record.
	s.fail = ""
	resp, _ = h(context.Background(), events.DynamoDBEvent{Records: batch.Records[1:]})
	if len(resp.BatchItemFailures) != 0 || len(s.sent) != 2 || !strings.Contains(s.sent[1], "product.published") {
		t.Fatalf("retry: failures %+v, sent %q", resp.BatchItemFailures, s.sent)
	}
}

// The function's own handler, over the app's registered works, fans a new
// event out to one webhook delivery per subscription that receives it,
// from the stream record Lambda hands it.
func TestRouterOfTheRegisteredWorks(t *testing.T) {
	ctx := context.Background()
	// A loopback subscriber (the local flag) needs no DNS.
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.AllowPrivateWebhooks = true }})
	r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/webhook-subscriptions", Token: e.Token,
		Headers: map[string]string{"Idempotency-Key": "stream-router-1"},
		Body:    map[string]any{"url": "http://127.0.0.1:9/hooks", "event_types": []string{event.ProductCreated}}})
	var sub struct{ Data struct{ ID string } }
	r.JSON(t, &sub)
	if r.Status != http.StatusCreated {
		t.Fatalf("subscribe: %d %s", r.Status, r.Body)
	}
	ev := event.New(e.Clock.Now(), e.Vendor.ID, event.ProductCreated, "product", "prd_1", nil)
	op, err := event.Op(ev)
	if err != nil {
		t.Fatal(err)
	}
	rec := sample(t).Records[0]
	rec.Change.NewImage = dynamodb.LambdaImage(op.Item)
	rec.Change.Keys = map[string]events.DynamoDBAttributeValue{"pk": rec.Change.NewImage["pk"], "sk": rec.Change.NewImage["sk"]}

	q := &lambdatest.Queues{}
	resp, err := lambdaapi.NewStreamRouter(e.App, q)(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("handler: %+v, %v", resp, err)
	}
	sent := q.Take(queue.WebhookDeliveries)
	if len(sent) != 1 {
		t.Fatalf("%d deliveries, want 1", len(sent))
	}
	var m webhook.Message
	if err := json.Unmarshal(sent[0].Body, &m); err != nil || m.EventID != ev.ID || m.SubscriptionID != sub.Data.ID {
		t.Fatalf("delivery %s, %v", sent[0].Body, err)
	}
}
