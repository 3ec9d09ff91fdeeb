package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// HeaderTimestamp names the message attribute of an SQS delivery that
// carries the signature's time (the t of Moku-Signature) in Unix seconds.
const HeaderTimestamp = "Moku-Timestamp"

// AWSMessage is one attempt of a delivery to an AWS destination: the body
// an HTTPS delivery POSTs, and the values of its headers.
type AWSMessage struct {
	VendorID       string
	SubscriptionID string
	Destination    Destination
	// Body is the event, exactly as an HTTPS delivery's body.
	Body       []byte
	EventID    string
	EventType  string
	EventTime  time.Time
	DeliveryID string
	Attempt    int
	// Signature is the Moku-Signature value, signed at Timestamp.
	Signature string
	Timestamp time.Time
}

// Attributes are the headers of an HTTPS delivery, as an SQS message
// carries them (message attributes of type String).
func (m AWSMessage) Attributes() map[string]string {
	return map[string]string{
		HeaderEventID:    m.EventID,
		HeaderDeliveryID: m.DeliveryID,
		HeaderAttempt:    strconv.Itoa(m.Attempt),
		HeaderSignature:  m.Signature,
		HeaderTimestamp:  strconv.FormatInt(m.Timestamp.Unix(), 10),
	}
}

// QueueSender sends a delivery to an SQS queue (one SendMessage) on
// behalf of m.VendorID, and returns the queue's message id.
type QueueSender interface {
	SendToQueue(ctx context.Context, m AWSMessage) (string, error)
}

// BusSender puts a delivery on an EventBridge bus (PutEvents of one
// entry) on behalf of m.VendorID, and returns the entry's event id; an
// entry the bus did not take is an error.
type BusSender interface {
	PutOnBus(ctx context.Context, m AWSMessage) (string, error)
}

// Senders are the clients of the AWS destinations a Deliverer is handed.
// A nil sender fails every attempt to its kind of destination (recorded
// and retried as any failed attempt).
type Senders struct {
	SQS         QueueSender
	EventBridge BusSender
}

// errNoSender is the attempt's error where a deployment has no client for
// a destination's type.
var errNoSender = errors.New("this deployment has no client for the destination's type")

// sendAWS makes an attempt to an AWS destination. The destination is
// checked again on every attempt, as a URL is: the policy may be stricter
// now than when the subscription was made. Its answer is what the AWS API
// answered: the message's or the entry's id.
func (d Deliverer) sendAWS(ctx context.Context, sub Subscription, ev event.Event, m Message) (answer, time.Duration, error) {
	if err := d.Policy.CheckDestination(sub.Destination, "destination"); err != nil {
		return answer{}, 0, err
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return answer{}, 0, err
	}
	now := d.Clock.Now()
	am := AWSMessage{VendorID: sub.VendorID, SubscriptionID: sub.ID, Destination: sub.Destination, Body: body,
		EventID: ev.ID, EventType: ev.Type, EventTime: ev.CreatedAt, DeliveryID: m.DeliveryID, Attempt: m.Attempt,
		Signature: signature.Sign(sub.Secret, now, body), Timestamp: now}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	start := time.Now()
	var id, key string
	switch sub.Destination.Type {
	case DestinationSQS:
		key = "MessageId"
		if d.AWS.SQS == nil {
			return answer{}, 0, errNoSender
		}
		id, err = d.AWS.SQS.SendToQueue(ctx, am)
	default:
		key = "EventId"
		if d.AWS.EventBridge == nil {
			return answer{}, 0, errNoSender
		}
		id, err = d.AWS.EventBridge.PutOnBus(ctx, am)
	}
	took := time.Since(start)
	if err != nil {
		return answer{}, took, err
	}
	excerpt, _ := json.Marshal(map[string]string{key: id})
	return answer{answered: true, ok: true, excerpt: excerpt}, took, nil
}
