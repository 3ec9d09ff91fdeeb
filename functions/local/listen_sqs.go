package main

// listen --sqs: following a subscription whose destination is an SQS
// queue, as a seller's consumer of that queue would.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/webhook/awsdest"
)

// queueVisibility is how long a received message stays hidden: one that
// did not verify, or that the forward target refused, is received again
// after it, as the seller's own consumer would retry it.
const queueVisibility = 30 * time.Second

// queueSubscription is the subscription listen --sqs follows: with the
// secret of one, the vendor's subscription to the queue, left in place;
// else a new one to the queue for types, which listen removes.
func queueSubscription(ctx context.Context, c *client.Client, vendorID, queue string, types []string, secret string) (listened, error) {
	if secret != "" {
		for s, err := range c.AllWebhookSubscriptions(ctx, client.ListWebhookSubscriptionsRequest{VendorID: vendorID}) {
			if err != nil {
				return listened{}, err
			}
			if s.Destination.Type == client.WebhookDestinationTypeSqs && deref(s.Destination.QueueURL) == queue {
				return listened{id: s.ID, url: s.URL, secret: secret, types: s.EventTypes}, nil
			}
		}
		return listened{}, fmt.Errorf("--secret: the vendor has no subscription to %s (leave out --secret to make one)", queue)
	}
	desc := "local listen --sqs"
	s, _, err := c.CreateWebhookSubscription(ctx, client.CreateWebhookSubscriptionRequest{VendorID: vendorID,
		Body: client.WebhookSubscriptionCreate{Destination: &client.WebhookDestination{Type: client.WebhookDestinationTypeSqs, QueueURL: &queue},
			EventTypes: types, Description: &desc}})
	if err != nil {
		return listened{}, fmt.Errorf("subscribe %s: %w", queue, err)
	}
	return listened{id: s.ID, url: s.URL, secret: s.Secret, types: s.EventTypes, owned: true}, nil
}

// sqsQueue is the queue listen --sqs receives from: in the region its URL
// names with the developer's AWS credentials, or on the loopback emulator
// it names (awsdest.QueueOptions, as the deliveries are sent).
type sqsQueue struct {
	api  *sqs.Client
	url  string
	opts func(*sqs.Options)
}

func openQueue(ctx context.Context, queueURL string) (sqsQueue, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return sqsQueue{}, fmt.Errorf("aws config: %w", err)
	}
	return sqsQueue{api: sqs.NewFromConfig(cfg), url: queueURL, opts: awsdest.QueueOptions(queueURL, nil)}, nil
}

// follow receives the queue's messages until ctx ends, each receive
// waiting up to wait: a message whose signature verifies (its attributes
// are the delivery's headers) is printed, forwarded, and deleted once the
// forward target (if any) answered 2xx; one that does not verify is
// reported once and left in the queue (another subscription's, or forged).
func (q sqsQueue) follow(ctx context.Context, secret string, wait time.Duration, out *printer) error {
	rejected := map[string]bool{}
	for ctx.Err() == nil {
		res, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: int32(wait / time.Second),
			VisibilityTimeout: int32(queueVisibility / time.Second), MessageAttributeNames: []string{"All"},
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
			// The deprecated spelling too: the emulator reads only this one.
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeName(sqstypes.MessageSystemAttributeNameSentTimestamp)},
		}, q.opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("receive from %s: %w", q.url, err)
		}
		for _, m := range res.Messages {
			d, h, err := verifyMessage(m, secret)
			if err != nil {
				if id := aws.ToString(m.MessageId); !rejected[id] {
					if len(rejected) >= 1000 {
						clear(rejected)
					}
					rejected[id] = true
					out.reject("message "+id+" (left in the queue)", err)
				}
				continue
			}
			if status := out.deliver(ctx, d, h); status/100 != 2 {
				continue
			}
			if _, err := q.api.DeleteMessage(context.WithoutCancel(ctx), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle}, q.opts); err != nil {
				return fmt.Errorf("delete from %s: %w", q.url, err)
			}
		}
	}
	return nil
}

// verifyMessage verifies a queued delivery as an HTTPS one, its message
// attributes as its headers. A message may wait in the queue longer than
// the signature's tolerance of five minutes, so the signature's time is
// checked against when the queue took the message (SentTimestamp), not
// against now.
func verifyMessage(m sqstypes.Message, secret string) (client.Delivery, http.Header, error) {
	h := http.Header{}
	for k, v := range m.MessageAttributes {
		if v.StringValue != nil {
			h.Set(k, *v.StringValue)
		}
	}
	ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	if err != nil {
		return client.Delivery{}, nil, errors.New("the queue gave no SentTimestamp")
	}
	d, err := client.VerifyWebhook(h, []byte(aws.ToString(m.Body)), secret, time.UnixMilli(ms), 0)
	return d, h, err
}
