package httpapi_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/webhook"
	"github.com/moku/sellerapi/shared/webhook/awsdest"
	"github.com/moku/sellerapi/shared/webhook/awsdest/awsdesttest"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

const (
	sellerBus   = "arn:aws:events:eu-west-1:123456789012:event-bus/orders"
	sellerQueue = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
)

// destinationEnv is an API whose deliveries to AWS destinations go
// through senders.
func destinationEnv(t *testing.T, kind apitest.StoreKind, allowPrivate bool, senders webhook.Senders) *apitest.Env {
	t.Helper()
	e := apitest.New(t, apitest.Options{Store: kind, WebhookResolver: publicHosts, WebhookAWS: senders, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		c.AllowPrivateWebhooks = allowPrivate
	}})
	e.Clock.Tick(time.Millisecond)
	return e
}

type destinationBody struct {
	Data struct {
		ID          string
		URL         string
		Version     int64
		Secret      string
		Destination map[string]string
	}
}

func subscribeTo(t *testing.T, e *apitest.Env, dest map[string]string, types ...string) destinationBody {
	t.Helper()
	r, s := apitest.Create[destinationBody](t, e, subsPath(e), "dest-"+strconv.FormatInt(time.Now().UnixNano(), 36),
		map[string]any{"destination": dest, "event_types": types})
	if r.Status != 201 {
		t.Fatalf("subscribe to %v: %d %s", dest, r.Status, r.Body)
	}
	return s
}

// emulatorQueue creates a queue in the SQS emulator, deleted when the test
// ends, and returns its URL (on loopback).
func emulatorQueue(t *testing.T, c *sqs.Client) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	ctx := context.Background()
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("seller-" + hex.EncodeToString(b[:]))})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { _, _ = c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

// receiveAll takes every message in the queue, with its attributes.
func receiveAll(t *testing.T, c *sqs.Client, q string) []sqstypes.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q), MaxNumberOfMessages: 10,
		MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 0, VisibilityTimeout: 60})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return out.Messages
}

// checkSQSDelivery checks one message as a seller's consumer would: the
// body is an event, the attributes carry the delivery's headers, and the
// signature verifies with the subscription's secret.
func checkSQSDelivery(t *testing.T, e *apitest.Env, m sqstypes.Message, secret string) map[string]any {
	t.Helper()
	attr := func(k string) string {
		a := m.MessageAttributes[k]
		if aws.ToString(a.DataType) != "String" {
			t.Fatalf("attribute %s: type %q", k, aws.ToString(a.DataType))
		}
		return aws.ToString(a.StringValue)
	}
	body := []byte(aws.ToString(m.Body))
	sig := attr("Moku-Signature")
	if err := signature.Verify(sig, body, secret, e.Clock.Now(), 0); err != nil {
		t.Fatalf("signature %q: %v", sig, err)
	}
	p, err := signature.Parse(sig)
	if err != nil || attr("Moku-Timestamp") != strconv.FormatInt(p.Timestamp, 10) {
		t.Fatalf("Moku-Timestamp %q, signature %q (%v)", attr("Moku-Timestamp"), sig, err)
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("body: %v", err)
	}
	if attr("Moku-Event-Id") != ev["id"] || !strings.HasPrefix(attr("Moku-Delivery-Id"), "dlv_") || attr("Moku-Delivery-Attempt") != "1" {
		t.Fatalf("attributes: %v", m.MessageAttributes)
	}
	return ev
}

// TestWebhookSQSDestination: a subscription to an SQS queue (the emulator's,
// accepted on loopback under --allow-private-webhooks) receives, through
// the real path (HTTP create, the write, the router, the worker), one
// message per event: the body an HTTPS delivery POSTs, the headers as
// message attributes, a signature that verifies. The delivery log records
// the queue's message id; a replay and a test delivery land in the queue
// too.
func TestWebhookSQSDestination(t *testing.T) {
	c := sqstest.Client(t)
	q := emulatorQueue(t, c)
	e := destinationEnv(t, apitest.SQLite, true, webhook.Senders{SQS: awsdest.SQS{API: c}})
	sub := subscribeTo(t, e, map[string]string{"type": "sqs", "queue_url": q}, "product.created")
	if sub.Data.URL != q || sub.Data.Destination["type"] != "sqs" || sub.Data.Destination["queue_url"] != q || len(sub.Data.Destination) != 2 {
		t.Fatalf("created: %+v", sub.Data)
	}

	ev := whProductEvent(t, e, "to-sqs")
	whDrain(t, e)
	msgs := receiveAll(t, c, q)
	if len(msgs) != 1 {
		t.Fatalf("the queue holds %d messages, want 1", len(msgs))
	}
	if got := checkSQSDelivery(t, e, msgs[0], sub.Data.Secret); !reflect.DeepEqual(got, ev) {
		t.Fatalf("body %v, want the event as GET /events shows it: %v", got, ev)
	}
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "succeeded" || as[0].StatusCode != nil || as[0].Error != nil || as[0].EventID != ev["id"] ||
		as[0].DeliveryID != aws.ToString(msgs[0].MessageAttributes["Moku-Delivery-Id"].StringValue) {
		t.Fatalf("attempts: %+v", as)
	}
	var page struct{ Data []map[string]any }
	e.Get(subsPath(e)+"/"+sub.Data.ID+"/deliveries").JSON(t, &page)
	if want := `{"MessageId":"` + aws.ToString(msgs[0].MessageId) + `"}`; page.Data[0]["response"] != want {
		t.Fatalf("response %v, want %s", page.Data[0]["response"], want)
	}

	// A replay is another delivery of the same event to the queue.
	evID := ev["id"].(string)
	r := postReplay(e, evID, map[string]any{})
	var rb replayBody
	r.JSON(t, &rb)
	if r.Status != 202 {
		t.Fatalf("replay: %d %s", r.Status, r.Body)
	}
	whDrain(t, e)
	whDrain(t, e)
	msgs = receiveAll(t, c, q)
	if len(msgs) != 1 {
		t.Fatalf("after the replay the queue holds %d messages, want 1", len(msgs))
	}
	if got := checkSQSDelivery(t, e, msgs[0], sub.Data.Secret); !reflect.DeepEqual(got, ev) ||
		aws.ToString(msgs[0].MessageAttributes["Moku-Delivery-Id"].StringValue) != webhook.DeliveryID(evID, sub.Data.ID, rb.Data.ReplayID) {
		t.Fatalf("replayed message: %v %v", got, msgs[0].MessageAttributes)
	}
	if g := getReplay(t, e, evID, rb.Data.ReplayID); g.Data.Delivered != 1 || g.Data.Failed != 0 {
		t.Fatalf("replay: %+v", g.Data)
	}

	res := postTest(e, e.Token, sub.Data.ID)
	var td testDelivery
	res.JSON(t, &td)
	if res.Status != 200 || !td.Data.Succeeded || td.Data.StatusCode != nil || td.Data.Error != nil || td.Data.Response == nil ||
		!strings.HasPrefix(*td.Data.Response, `{"MessageId":"`) {
		t.Fatalf("test delivery: %d %s", res.Status, res.Body)
	}
	msgs = receiveAll(t, c, q)
	if len(msgs) != 1 {
		t.Fatalf("after the test delivery the queue holds %d messages, want 1", len(msgs))
	}
	if got := checkSQSDelivery(t, e, msgs[0], sub.Data.Secret); got["type"] != event.WebhookSubscriptionTest || got["id"] != td.Data.EventID {
		t.Fatalf("test message: %v", got)
	}
}

// TestWebhookSQSDestinationFailureIsRetried: a queue that is not there (the
// emulator's answer) is a failed attempt with the API's error, retried as
// any failed delivery.
func TestWebhookSQSDestinationFailureIsRetried(t *testing.T) {
	c := sqstest.Client(t)
	q := emulatorQueue(t, c)
	gone := q + "-gone"
	e := destinationEnv(t, apitest.SQLite, true, webhook.Senders{SQS: awsdest.SQS{API: c}})
	sub := subscribeTo(t, e, map[string]string{"type": "sqs", "queue_url": gone}, "product.created")
	whProductEvent(t, e, "nowhere")
	whDrain(t, e)
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "failed" || as[0].NextAttemptAt == nil || as[0].Error == nil ||
		!strings.HasPrefix(*as[0].Error, "sqs SendMessage: ") {
		t.Fatalf("attempts: %+v", as)
	}
	// The seller fixes the queue: the retry lands there.
	if r := patchSubscription(e, sub.Data.ID, map[string]any{"expected_version": 1, "destination": map[string]string{"type": "sqs", "queue_url": q}}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	e.Clock.Advance(webhook.FirstRetryCeiling)
	whDrain(t, e)
	msgs := receiveAll(t, c, q)
	if len(msgs) != 1 || aws.ToString(msgs[0].MessageAttributes["Moku-Delivery-Attempt"].StringValue) != "2" {
		t.Fatalf("after the retry the queue holds %d messages", len(msgs))
	}
	if as := whAttempts(t, e, sub.Data.ID); len(as) != 2 || as[0].Outcome != "succeeded" || as[0].Attempt != 2 {
		t.Fatalf("attempts: %+v", as)
	}
}

// TestWebhookEventBridgeDestination: a subscription to an event bus gets
// one PutEvents entry per event (source moku.sellerapi, detail type the
// event's type, detail the body an HTTPS delivery POSTs, in the bus's
// region), proven with a recorded client. An entry the bus refuses
// (FailedEntryCount > 0) is a failed attempt, retried with backoff; one
// that keeps failing dies and disables the subscription, as for HTTPS.
func TestWebhookEventBridgeDestination(t *testing.T) {
	bus := &awsdesttest.EventBridge{}
	e := destinationEnv(t, apitest.SQLite, false, webhook.Senders{EventBridge: awsdest.EventBridge{API: bus}})
	sub := subscribeTo(t, e, map[string]string{"type": "eventbridge", "event_bus_arn": sellerBus}, "product.created")
	if sub.Data.URL != sellerBus || sub.Data.Destination["event_bus_arn"] != sellerBus {
		t.Fatalf("created: %+v", sub.Data)
	}

	ev := whProductEvent(t, e, "to-bus")
	whDrain(t, e)
	in, opts := bus.Calls()
	if len(in) != 1 || len(in[0].Entries) != 1 || opts[0].Region != "eu-west-1" {
		t.Fatalf("calls: %d", len(in))
	}
	entry := in[0].Entries[0]
	var detail map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(entry.Detail)), &detail); err != nil || !reflect.DeepEqual(detail, ev) {
		t.Fatalf("detail %s, want %v", aws.ToString(entry.Detail), ev)
	}
	if aws.ToString(entry.EventBusName) != sellerBus || aws.ToString(entry.Source) != awsdest.Source || aws.ToString(entry.DetailType) != "product.created" {
		t.Fatalf("entry: %+v", entry)
	}
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "succeeded" || as[0].StatusCode != nil {
		t.Fatalf("attempts: %+v", as)
	}

	// The bus refuses the entry: a failed attempt, a retry scheduled.
	bus.Fail("InternalFailure", "try again")
	refused := whProductEvent(t, e, "refused")
	whDrain(t, e)
	as = whAttempts(t, e, sub.Data.ID)
	if len(as) != 2 || as[0].EventID != refused["id"] || as[0].Outcome != "failed" || as[0].NextAttemptAt == nil || as[0].Error == nil ||
		!strings.Contains(*as[0].Error, "InternalFailure: try again") {
		t.Fatalf("attempts after a refused entry: %+v", as)
	}
	var g struct{ Data map[string]any }
	e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &g)
	if g.Data["failure_streak"] != float64(1) {
		t.Fatalf("failure streak: %v", g.Data["failure_streak"])
	}
	bus.Fail("", "")
	e.Clock.Advance(webhook.FirstRetryCeiling)
	whDrain(t, e)
	if in, _ := bus.Calls(); len(in) != 3 || aws.ToString(in[2].Entries[0].Detail) != aws.ToString(in[1].Entries[0].Detail) {
		t.Fatalf("the retry: %d calls", len(in))
	}
	if as := whAttempts(t, e, sub.Data.ID); as[0].Outcome != "succeeded" || as[0].Attempt != 2 {
		t.Fatalf("attempts after the retry: %+v", as)
	}

	// A test delivery goes to the bus at once.
	res := postTest(e, e.Token, sub.Data.ID)
	var td testDelivery
	res.JSON(t, &td)
	in, _ = bus.Calls()
	if res.Status != 200 || !td.Data.Succeeded || td.Data.Response == nil || *td.Data.Response != `{"EventId":"eb-4"}` ||
		len(in) != 4 || aws.ToString(in[3].Entries[0].DetailType) != event.WebhookSubscriptionTest {
		t.Fatalf("test delivery: %d %s (%d calls)", res.Status, res.Body, len(in))
	}

	// Refused for the whole window: the delivery dies, the subscription is
	// disabled.
	bus.Fail("AccessDeniedException", "not authorized")
	doomed := whProductEvent(t, e, "doomed")
	whDrain(t, e)
	whFailUntilDead(t, e, sub.Data.ID, doomed["id"].(string))
	e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &g)
	if g.Data["status"] != "disabled" || g.Data["disabled_reason"] != "deliveries_failing" {
		t.Fatalf("after a dead delivery: %v", g.Data)
	}
}

// TestWebhookDestinationWithoutSender: a deployment without a client for
// a destination's type records the attempt as failed and retries it.
func TestWebhookDestinationWithoutSender(t *testing.T) {
	e := destinationEnv(t, apitest.SQLite, false, webhook.Senders{})
	sub := subscribeTo(t, e, map[string]string{"type": "sqs", "queue_url": sellerQueue}, "product.created")
	whProductEvent(t, e, "no-client")
	whDrain(t, e)
	if as := whAttempts(t, e, sub.Data.ID); len(as) != 1 || as[0].Outcome != "failed" || as[0].Error == nil || as[0].NextAttemptAt == nil {
		t.Fatalf("attempts: %+v", as)
	}
}

// TestWebhookDestinationValidation: every malformed destination is a 400
// naming the field, and nothing is stored or written; a loopback queue
// (an emulator's) is accepted only where private webhooks are allowed.
// PATCH changes the destination, of any type, and a refused PATCH changes
// nothing.
func TestWebhookDestinationValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := destinationEnv(t, kind, false, webhook.Senders{})
		types := []string{"product.created"}
		refused := []struct {
			body map[string]any
			code string
			want string
		}{
			{map[string]any{"event_types": types}, "INVALID_REQUEST", "url: send url, or a destination object"},
			{map[string]any{"url": "https://hooks.example.com/x", "destination": map[string]string{"type": "sqs", "queue_url": sellerQueue}, "event_types": types}, "INVALID_REQUEST", "destination: send url or destination, not both"},
			{map[string]any{"destination": "sqs", "event_types": types}, "INVALID_REQUEST", "destination: must be an object"},
			{map[string]any{"destination": map[string]string{"queue_url": sellerQueue}, "event_types": types}, "INVALID_REQUEST", "destination.type"},
			{map[string]any{"destination": map[string]string{"type": "kafka"}, "event_types": types}, "INVALID_REQUEST", "destination.type"},
			{map[string]any{"destination": map[string]string{"type": "sqs"}, "event_types": types}, "INVALID_REQUEST", "destination.queue_url"},
			{map[string]any{"destination": map[string]string{"type": "sqs", "queue_url": sellerQueue, "event_bus_arn": sellerBus}, "event_types": types}, "INVALID_REQUEST", "destination.event_bus_arn: unknown property"},
			{map[string]any{"destination": map[string]string{"type": "https", "url": "http://hooks.example.com/x"}, "event_types": types}, "WEBHOOK_URL_NOT_ALLOWED", "url: must use https"},
		}
		for _, q := range []string{
			"http://127.0.0.1:9324/123456789012/orders",                           // an emulator: local runs only
			"https://sqs.eu-west-1.amazonaws.com.example.com/123456789012/orders", // not AWS's host
			"https://eu-west-1.queue.amazonaws.com/123456789012/orders",           // the legacy host
			"https://sqs.eu-west-1.amazonaws.com.cn/123456789012/orders",          // another partition
			"http://sqs.eu-west-1.amazonaws.com/123456789012/orders",              // plain http
			"https://sqs.eu-west-1.amazonaws.com/12345678901/orders",              // 11 digits
			"https://sqs.eu-west-1.amazonaws.com/123456789012/orders?x=1",         // a query
			"https://sqs.eu-west-1.amazonaws.com/123456789012/orders/more",        // a longer path
			"https://sqs.eu-west-1.amazonaws.com/123456789012/" + strings.Repeat("q", 81),
			"https://u:p@sqs.eu-west-1.amazonaws.com/123456789012/orders",
			"https://sqs.eu-west-1.amazonaws.com:8443/123456789012/orders",
		} {
			refused = append(refused, struct {
				body map[string]any
				code string
				want string
			}{map[string]any{"destination": map[string]string{"type": "sqs", "queue_url": q}, "event_types": types}, "INVALID_REQUEST", "destination.queue_url: must be a queue URL"})
		}
		for _, arn := range []string{
			"arn:aws:sqs:eu-west-1:123456789012:orders",
			"arn:aws-cn:events:cn-north-1:123456789012:event-bus/orders",
			"arn:aws:events:eu-west-1:123456789012:rule/orders",
			"arn:aws:events:eu-west-1:123456789012:event-bus/",
			"arn:aws:events:eu-west-1::event-bus/orders",
			"arn:aws:events:EU-WEST-1:123456789012:event-bus/orders",
			"arn:aws:events:eu-west-1:123456789012:event-bus/a/b",
			"arn:aws:events:eu-west-1:123456789012:event-bus/orders\n",
		} {
			refused = append(refused, struct {
				body map[string]any
				code string
				want string
			}{map[string]any{"destination": map[string]string{"type": "eventbridge", "event_bus_arn": arn}, "event_types": types}, "INVALID_REQUEST", "destination.event_bus_arn: must be an event bus ARN"})
		}
		for i, c := range refused {
			r, _ := createSubscription(t, e, "refused-"+strconv.Itoa(i), c.body)
			if p := r.WantProblem(t, 400, c.code); !strings.Contains(p.Detail, c.want) {
				t.Errorf("%v: detail %q, want it to say %q", c.body, p.Detail, c.want)
			}
		}
		if ids := mustList(t, e); len(ids) != 0 {
			t.Fatalf("refused creates stored %v", ids)
		}
		var events struct{ Data []map[string]any }
		e.Get("/vendors/"+e.Vendor.ID+"/events?type=webhook_subscription.created").JSON(t, &events)
		if len(events.Data) != 0 {
			t.Fatalf("refused creates wrote %d events", len(events.Data))
		}

		// The url alone is today's https destination, shown both ways.
		s := subscribeTo(t, e, map[string]string{"type": "https", "url": "https://hooks.example.com/a"}, "*")
		if s.Data.URL != "https://hooks.example.com/a" || s.Data.Destination["type"] != "https" || s.Data.Destination["url"] != s.Data.URL {
			t.Fatalf("https destination: %+v", s.Data)
		}
		plain := mustSubscribe(t, e, "https://hooks.example.com/b", "*")
		var g destinationBody
		e.Get(subsPath(e)+"/"+plain.Data.ID).JSON(t, &g)
		if g.Data.Destination["type"] != "https" || g.Data.Destination["url"] != "https://hooks.example.com/b" {
			t.Fatalf("url alone: %+v", g.Data)
		}

		// PATCH moves it to a bus, then to a queue, then back to a URL.
		path := subsPath(e) + "/" + plain.Data.ID
		r := patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 1, "destination": map[string]string{"type": "eventbridge", "event_bus_arn": sellerBus}})
		g = destinationBody{}
		r.JSON(t, &g)
		if r.Status != 200 || g.Data.Version != 2 || g.Data.URL != sellerBus || g.Data.Destination["type"] != "eventbridge" {
			t.Fatalf("patch to a bus: %d %s", r.Status, r.Body)
		}
		e.Get("/vendors/"+e.Vendor.ID+"/events?type=webhook_subscription.updated").JSON(t, &events)
		if len(events.Data) != 1 || !reflect.DeepEqual(events.Data[0]["data"].(map[string]any)["changed"], []any{"url", "destination"}) {
			t.Fatalf("updated events: %v", events.Data)
		}
		patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 2, "destination": map[string]string{"type": "sqs", "queue_url": "http://127.0.0.1:9324/123456789012/q"}}).
			WantProblem(t, 400, "INVALID_REQUEST")
		patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 2, "url": "https://hooks.example.com/c", "destination": map[string]string{"type": "sqs", "queue_url": sellerQueue}}).
			WantProblem(t, 400, "INVALID_REQUEST")
		g = destinationBody{}
		e.Get(path).JSON(t, &g)
		if g.Data.Version != 2 || g.Data.URL != sellerBus {
			t.Fatalf("a refused patch changed it: %+v", g.Data)
		}
		r = patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 2, "destination": map[string]string{"type": "sqs", "queue_url": sellerQueue}})
		g = destinationBody{}
		r.JSON(t, &g)
		if r.Status != 200 || g.Data.Version != 3 || g.Data.URL != sellerQueue || g.Data.Destination["queue_url"] != sellerQueue {
			t.Fatalf("patch to a queue: %d %s", r.Status, r.Body)
		}
		r = patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 3, "url": "https://hooks.example.com/d"})
		g = destinationBody{}
		r.JSON(t, &g)
		if r.Status != 200 || g.Data.Version != 4 || g.Data.Destination["type"] != "https" || g.Data.Destination["url"] != "https://hooks.example.com/d" || len(g.Data.Destination) != 2 {
			t.Fatalf("patch back to a URL: %d %s", r.Status, r.Body)
		}
		// The same destination again is a no-op.
		r = patchSubscription(e, plain.Data.ID, map[string]any{"expected_version": 4, "destination": map[string]string{"type": "https", "url": "https://hooks.example.com/d"}})
		g = destinationBody{}
		r.JSON(t, &g)
		if r.Status != 200 || g.Data.Version != 4 {
			t.Fatalf("same destination: %d %s", r.Status, r.Body)
		}
	})
}

// TestWebhookLoopbackQueueUnderTheLocalFlag: where private webhooks are
// allowed (a local run), a loopback queue URL (an emulator's) is
// accepted; a queue on a named host is not.
func TestWebhookLoopbackQueueUnderTheLocalFlag(t *testing.T) {
	e := destinationEnv(t, apitest.SQLite, true, webhook.Senders{})
	for _, q := range []string{"http://127.0.0.1:9324/123456789012/q", "http://[::1]:9324/123456789012/q", sellerQueue} {
		subscribeTo(t, e, map[string]string{"type": "sqs", "queue_url": q}, "*")
	}
	for i, q := range []string{"http://localhost:9324/123456789012/q", "http://127.0.0.1/123456789012/q", "http://127.0.0.1:9324/q"} {
		r, _ := createSubscription(t, e, "local-"+strconv.Itoa(i), map[string]any{"destination": map[string]string{"type": "sqs", "queue_url": q}, "event_types": []string{"*"}})
		r.WantProblem(t, 400, "INVALID_REQUEST")
	}
}
