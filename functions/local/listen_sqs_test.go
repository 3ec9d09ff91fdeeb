package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/queue/sqsqueue/sqstest"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// listenQueue creates a queue on the SQS emulator, deleted when the test
// ends, and returns its URL (on loopback).
func listenQueue(t *testing.T, c *sqs.Client) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("listen-" + hex.EncodeToString(b[:]))})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	u := aws.ToString(out.QueueUrl)
	t.Cleanup(func() { c.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}) })
	return u
}

// queued is how many messages the queue holds, in flight or not.
func queued(t *testing.T, c *sqs.Client, q string) string {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)]
}

// waitFor polls out until it matches re, for at most 30 seconds.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
	}
	t.Fatalf("listen did not print %s: %q", re, out.String())
	return nil
}

// TestListenSQS: listen --sqs subscribes a queue (the emulator's, on
// loopback) and follows it as the seller's consumer would: the test
// delivery and a triggered change arrive as messages whose attributes
// verify; each is printed, forwarded with its signature (which the target
// verifies with the printed secret) and deleted; a forged message is
// reported and left in the queue; the subscription is gone once listen
// stops. With --secret, listen follows the vendor's own subscription to
// the queue and leaves it in place.
func TestListenSQS(t *testing.T) {
	sq := sqstest.Client(t)
	queue := listenQueue(t, sq)
	forged := `{"id":"evt_forged"}`
	if _, err := sq.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(forged),
		MessageAttributes: map[string]sqstypes.MessageAttributeValue{
			"Moku-Event-Id":  {DataType: aws.String("String"), StringValue: aws.String("evt_forged")},
			"Moku-Signature": {DataType: aws.String("String"), StringValue: aws.String(signature.Sign("whsec_not_ours", time.Now(), []byte(forged)))},
		}}); err != nil {
		t.Fatal(err)
	}
	base, vendorID, token := serveForTest(t)

	target := newForwardTarget(t)

	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"listen", "--base", base, "--token", token, "--sqs", queue, "--events", "inventory_item.adjusted",
			"--forward-to", target.URL, "--test", "--wait", "1s"}, &out, io.Discard)
	}()
	m := waitFor(t, &out, regexp.MustCompile(`Ready: subscription (\S+) sends inventory_item.adjusted to (\S+) \(signing secret (whsec_\S+)\)`))
	if m[2] != queue {
		t.Fatalf("the subscription sends to %s, want %s", m[2], queue)
	}
	target.secret <- m[3]
	test := waitFor(t, &out, regexp.MustCompile(`Test delivery (evt_\S+): delivered \{"MessageId":"[^"]+"\} in \d+ ms`))
	var trig syncBuffer
	if err := run(context.Background(), []string{"trigger", "inventory_item.adjusted", "--base", base, "--token", token}, &trig, io.Discard); err != nil {
		t.Fatalf("trigger: %v\n%s", err, trig.String())
	}
	waitFor(t, &out, regexp.MustCompile(`<-- 204 from .*\n(.*\n)*.*<-- 204 from `))
	waitFor(t, &out, regexp.MustCompile(`rejected a message \S+ \(left in the queue\): client: webhook signature`))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("listen: %v", err)
	}
	got := target.deliveries()
	types := map[client.EventType]client.Delivery{}
	for _, d := range got {
		types[d.Event.Type] = d
	}
	if len(got) != 2 || types["webhook_subscription.test"].EventID != test[1] || types["inventory_item.adjusted"].Event.VendorID != vendorID {
		t.Fatalf("forwarded %+v; listen printed %q", got, out.String())
	}
	if !strings.Contains(out.String(), "--> inventory_item.adjusted") || strings.Count(out.String(), "signature verified") != 2 ||
		strings.Count(out.String(), "rejected") != 1 || !strings.Contains(out.String(), "Removed subscription "+m[1]) {
		t.Fatalf("listen printed %q", out.String())
	}
	// The deliveries were deleted; the forged message is left.
	if n := queued(t, sq, queue); n != "1" {
		t.Fatalf("the queue holds %s messages, want the forged one", n)
	}
	c := client.New(base, token)
	for sub, err := range c.AllWebhookSubscriptions(context.Background(), client.ListWebhookSubscriptionsRequest{VendorID: vendorID}) {
		if err != nil {
			t.Fatal(err)
		}
		t.Fatalf("subscription %s outlived listen", sub.ID)
	}

	// The vendor's own subscription to a queue, followed with its secret.
	// (Another queue: the emulator keeps the long poll listen abandoned
	// when it stopped open for its whole wait, and it would take what
	// arrives meanwhile; SQS may do the same. The message would come back
	// after its visibility timeout.)
	queue = listenQueue(t, sq)
	own, _, err := c.CreateWebhookSubscription(context.Background(), client.CreateWebhookSubscriptionRequest{VendorID: vendorID,
		Body: client.WebhookSubscriptionCreate{Destination: &client.WebhookDestination{Type: client.WebhookDestinationTypeSqs, QueueURL: &queue},
			EventTypes: []string{"product.created"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop = context.WithCancel(context.Background())
	var followed syncBuffer
	go func() {
		done <- run(ctx, []string{"listen", "--base", base, "--token", token, "--sqs", queue, "--secret", own.Secret, "--wait", "1s", "--print-json"}, &followed, io.Discard)
	}()
	waitFor(t, &followed, regexp.MustCompile(`Ready: subscription `+own.ID+` sends product.created to `))
	if err := run(context.Background(), []string{"trigger", "product.created", "--base", base, "--token", token}, io.Discard, io.Discard); err != nil {
		t.Fatalf("trigger: %v", err)
	}
	waitFor(t, &followed, regexp.MustCompile(`--> product.created \[evt_\S+\] product/\S+ \(delivery dlv_\S+, attempt 1, signature verified\)\n\{"`))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("listen --secret: %v", err)
	}
	if !strings.Contains(followed.String(), "Left subscription "+own.ID+" in place.") {
		t.Fatalf("listen --secret printed %q", followed.String())
	}
	if _, _, err := c.GetWebhookSubscription(context.Background(), client.GetWebhookSubscriptionRequest{VendorID: vendorID, SubscriptionID: own.ID}); err != nil {
		t.Fatalf("the followed subscription: %v", err)
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--secret", "whsec_x"}, "pass --sqs too"},
		{[]string{"--sqs", queue + "-none", "--secret", "whsec_x"}, "no subscription to"},
		{[]string{"--sqs", queue, "--wait", "0s"}, "--wait"},
	} {
		err := run(context.Background(), append([]string{"listen", "--base", base, "--token", token}, bad.args...), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("listen %v: %v, want an error saying %q", bad.args, err, bad.want)
		}
	}
}
