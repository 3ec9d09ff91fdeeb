package awsdest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/webhook"
	"github.com/moku/sellerapi/shared/webhook/awsdest/awsdesttest"
)

// fakeSQS records each SendMessage with the options its call ended with.
type fakeSQS struct {
	in   []*sqs.SendMessageInput
	opts []sqs.Options
	err  error
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	o := sqs.Options{Region: "us-east-1"}
	for _, fn := range optFns {
		fn(&o)
	}
	f.in, f.opts = append(f.in, in), append(f.opts, o)
	if f.err != nil {
		return nil, f.err
	}
	return &sqs.SendMessageOutput{MessageId: aws.String("msg-1")}, nil
}

// fakeSTS records each AssumeRole and answers with credentials named
// after the session.
type fakeSTS struct {
	mu sync.Mutex
	in []*sts.AssumeRoleInput
}

func (f *fakeSTS) AssumeRole(_ context.Context, in *sts.AssumeRoleInput, _ ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = append(f.in, in)
	return &sts.AssumeRoleOutput{Credentials: &ststypes.Credentials{AccessKeyId: aws.String("AK-" + aws.ToString(in.RoleSessionName)),
		SecretAccessKey: aws.String("s"), SessionToken: aws.String("t"), Expiration: aws.Time(time.Now().Add(time.Hour))}}, nil
}

func message(dest webhook.Destination) webhook.AWSMessage {
	return webhook.AWSMessage{VendorID: "ven_1", SubscriptionID: "whsub_1", Destination: dest, Body: []byte(`{"id":"evt_1","type":"product.created"}`),
		EventID: "evt_1", EventType: "product.created", EventTime: clocktest.Date(2026, 1, 2, 3, 4, 5), DeliveryID: "dlv_1", Attempt: 2,
		Signature: "t=1767323045,v1=abc", Timestamp: time.Unix(1767323045, 0)}
}

// TestSQSSendsTheBodyAndTheHeaders: one message whose body is the event and
// whose String attributes are the delivery's headers, to the region of the
// queue's URL, with the process's own credentials when no role is set.
func TestSQSSendsTheBodyAndTheHeaders(t *testing.T) {
	f := &fakeSQS{}
	q := "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"
	id, err := SQS{API: f}.SendToQueue(context.Background(), message(webhook.Destination{Type: webhook.DestinationSQS, QueueURL: q}))
	if err != nil || id != "msg-1" {
		t.Fatalf("send: %q %v", id, err)
	}
	in, o := f.in[0], f.opts[0]
	if aws.ToString(in.QueueUrl) != q || aws.ToString(in.MessageBody) != `{"id":"evt_1","type":"product.created"}` {
		t.Errorf("input: %+v", in)
	}
	want := map[string]string{"Moku-Event-Id": "evt_1", "Moku-Delivery-Id": "dlv_1", "Moku-Delivery-Attempt": "2",
		"Moku-Signature": "t=1767323045,v1=abc", "Moku-Timestamp": "1767323045"}
	if len(in.MessageAttributes) != len(want) {
		t.Errorf("attributes: %d, want %d", len(in.MessageAttributes), len(want))
	}
	for k, v := range want {
		a := in.MessageAttributes[k]
		if aws.ToString(a.DataType) != "String" || aws.ToString(a.StringValue) != v {
			t.Errorf("attribute %s: %s %q, want String %q", k, aws.ToString(a.DataType), aws.ToString(a.StringValue), v)
		}
	}
	if in.MessageGroupId != nil || in.MessageDeduplicationId != nil {
		t.Error("a standard queue got FIFO fields")
	}
	if o.Region != "eu-west-1" || o.BaseEndpoint != nil || o.Credentials != nil {
		t.Errorf("options: region %q endpoint %v credentials %v", o.Region, o.BaseEndpoint, o.Credentials)
	}

	fifo := q + ".fifo"
	if _, err := (SQS{API: f}).SendToQueue(context.Background(), message(webhook.Destination{Type: webhook.DestinationSQS, QueueURL: fifo})); err != nil {
		t.Fatal(err)
	}
	if in := f.in[1]; aws.ToString(in.MessageGroupId) != "whsub_1" || aws.ToString(in.MessageDeduplicationId) != "dlv_1" {
		t.Errorf("fifo: group %q dedup %q", aws.ToString(in.MessageGroupId), aws.ToString(in.MessageDeduplicationId))
	}
}

// TestSQSLoopbackEmulator: an emulator's queue URL is sent to the emulator
// itself, with dummy credentials, never the process's or a role's.
func TestSQSLoopbackEmulator(t *testing.T) {
	f := &fakeSQS{}
	st := &fakeSTS{}
	s := SQS{API: f, Roles: &Roles{STS: st, RoleARN: "arn:aws:iam::111111111111:role/delivery"}}
	if _, err := s.SendToQueue(context.Background(), message(webhook.Destination{Type: webhook.DestinationSQS, QueueURL: "http://127.0.0.1:9324/000000000000/q"})); err != nil {
		t.Fatal(err)
	}
	o := f.opts[0]
	if aws.ToString(o.BaseEndpoint) != "http://127.0.0.1:9324" || o.Region != "us-east-1" {
		t.Errorf("endpoint %q region %q", aws.ToString(o.BaseEndpoint), o.Region)
	}
	c, err := o.Credentials.Retrieve(context.Background())
	if err != nil || c.AccessKeyID != "local" {
		t.Errorf("credentials %q %v", c.AccessKeyID, err)
	}
	if len(st.in) != 0 {
		t.Errorf("the role was assumed for an emulator: %d calls", len(st.in))
	}
}

// TestRolesTagTheVendor: with a delivery role, each vendor's deliveries
// sign with the role assumed under a session tagged with the vendor's id
// (what a seller's policy conditions on), once per vendor while the
// credentials last.
func TestRolesTagTheVendor(t *testing.T) {
	st := &fakeSTS{}
	f := &fakeSQS{}
	roles := &Roles{STS: st, RoleARN: "arn:aws:iam::111111111111:role/delivery"}
	s := SQS{API: f, Roles: roles}
	q := webhook.Destination{Type: webhook.DestinationSQS, QueueURL: "https://sqs.us-east-2.amazonaws.com/123456789012/q"}
	for _, vendor := range []string{"ven_1", "ven_1", "ven_2"} {
		m := message(q)
		m.VendorID = vendor
		if _, err := s.SendToQueue(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		c, err := f.opts[len(f.opts)-1].Credentials.Retrieve(context.Background())
		if err != nil || c.AccessKeyID != "AK-delivery-"+vendor {
			t.Fatalf("%s: credentials %q %v", vendor, c.AccessKeyID, err)
		}
	}
	if len(st.in) != 2 {
		t.Fatalf("AssumeRole calls: %d, want 2 (one per vendor)", len(st.in))
	}
	for i, vendor := range []string{"ven_1", "ven_2"} {
		in := st.in[i]
		if aws.ToString(in.RoleArn) != roles.RoleARN || aws.ToString(in.RoleSessionName) != "delivery-"+vendor {
			t.Errorf("assume %d: role %q session %q", i, aws.ToString(in.RoleArn), aws.ToString(in.RoleSessionName))
		}
		if len(in.Tags) != 1 || aws.ToString(in.Tags[0].Key) != VendorTag || aws.ToString(in.Tags[0].Value) != vendor {
			t.Errorf("assume %d: tags %+v", i, in.Tags)
		}
	}
}

func TestSessionName(t *testing.T) {
	if got := sessionName("ven_01H/x y"); got != "delivery-ven_01H-x-y" {
		t.Errorf("got %q", got)
	}
	if got := sessionName(strings.Repeat("a", 100)); len(got) != 64 {
		t.Errorf("length %d", len(got))
	}
}

// TestSQSErrorsAreShort: an error the API answered reads as its code and
// message, and still unwraps to the SDK's error.
func TestSQSErrorsAreShort(t *testing.T) {
	f := &fakeSQS{err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "not authorized"}}
	_, err := SQS{API: f}.SendToQueue(context.Background(), message(webhook.Destination{Type: webhook.DestinationSQS, QueueURL: "https://sqs.us-east-1.amazonaws.com/123456789012/q"}))
	var ae smithy.APIError
	if err == nil || err.Error() != "sqs SendMessage: AccessDenied: not authorized" || !errors.As(err, &ae) {
		t.Fatalf("error: %v", err)
	}
}

// TestEventBridgeEntry: one entry on the bus, in its region: source,
// detail type the event's type, detail the body, time the event's; a
// failed entry is an error.
func TestEventBridgeEntry(t *testing.T) {
	f := &awsdesttest.EventBridge{}
	bus := "arn:aws:events:ap-southeast-2:123456789012:event-bus/orders"
	dest := webhook.Destination{Type: webhook.DestinationEventBridge, EventBusARN: bus}
	id, err := EventBridge{API: f}.PutOnBus(context.Background(), message(dest))
	if err != nil || id != "eb-1" {
		t.Fatalf("put: %q %v", id, err)
	}
	in, opts := f.Calls()
	if len(in) != 1 || len(in[0].Entries) != 1 {
		t.Fatalf("calls %d", len(in))
	}
	e := in[0].Entries[0]
	if aws.ToString(e.EventBusName) != bus || aws.ToString(e.Source) != Source || aws.ToString(e.DetailType) != "product.created" ||
		aws.ToString(e.Detail) != `{"id":"evt_1","type":"product.created"}` || !aws.ToTime(e.Time).Equal(clocktest.Date(2026, 1, 2, 3, 4, 5)) {
		t.Errorf("entry: %+v", e)
	}
	if opts[0].Region != "ap-southeast-2" {
		t.Errorf("region %q", opts[0].Region)
	}

	f.Fail("AccessDeniedException", "denied")
	_, err = EventBridge{API: f}.PutOnBus(context.Background(), message(dest))
	if err == nil || !strings.Contains(err.Error(), "AccessDeniedException: denied") {
		t.Fatalf("failed entry: %v", err)
	}
}
