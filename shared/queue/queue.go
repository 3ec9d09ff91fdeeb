// Package queue is the work-queue port between the change pipeline and the
// workers: the stream router sends one message per unit of work (a webhook
// delivery, a bulk operation, a replay) and a worker handles each message,
// at least once. In AWS the queues are SQS queues with dead-letter queues
// and the workers are SQS-triggered Lambdas; in embedded mode they are
// durable SQLite tables (package sqlitequeue) polled by the local server.
package queue

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Names of the work queues; the stack creates one SQS queue (and its
// dead-letter queue) for each.
const (
	WebhookDeliveries = "webhook-deliveries"
	// WebhookSlowLane carries the deliveries that may wait on a slow
	// receiver (retries, deferrals, deliveries to a receiver that was
	// slow lately), so that they never hold the capacity of the fresh
	// deliveries of webhook-deliveries.
	WebhookSlowLane = "webhook-slow-lane"
	BulkOperations  = "bulk-operations"
	EventReplays    = "event-replays"
	SellerOrders    = "seller-orders"
	SyncJobs        = "sync-jobs"
)

// Names lists every queue.
func Names() []string {
	return []string{WebhookDeliveries, WebhookSlowLane, BulkOperations, EventReplays, SellerOrders, SyncJobs}
}

// MaxDelay is the longest delay a message can be sent with (SQS's limit).
const MaxDelay = 15 * time.Minute

// Message is one unit of work.
type Message struct {
	ID    string
	Queue string
	Body  []byte
	// Receives counts deliveries of this message to a worker, this one
	// included; above 1 it is a retry.
	Receives int
}

// Sender sends messages.
type Sender interface {
	// Send enqueues body on queue, visible after delay (at most MaxDelay).
	Send(ctx context.Context, queue string, body []byte, delay time.Duration) error
}

// Outgoing is a message to send: its queue, its body and its delay.
type Outgoing struct {
	Queue string
	Body  []byte
	Delay time.Duration
}

// BatchSender is a Sender that also sends several messages at once, all
// or none (the embedded queue, in one transaction): the router sends
// what a pass of changes calls for with one write instead of one each.
type BatchSender interface {
	Sender
	SendBatch(ctx context.Context, msgs []Outgoing) error
}

// MaxBatch is the most messages a PartialBatchSender is given in one call
// by the router: SQS's SendMessageBatch takes at most ten entries.
const MaxBatch = 10

// PartialBatchSender is a Sender that also sends several messages in one
// call, each on its own (SQS's SendMessageBatch): the call can send some
// messages and fail others, so it is not a BatchSender, whose batch is all
// or none. The router gives it up to MaxBatch messages of one queue a call.
type PartialBatchSender interface {
	Sender
	// SendEach sends msgs and returns one error per message, in order: nil
	// for a message sent, the reason for one that was not (a call that
	// failed as a whole fails each of its messages).
	SendEach(ctx context.Context, msgs []Outgoing) []error
}

// Handler handles one message. A nil error deletes the message; any other
// error leaves it for a retry after the queue's visibility timeout, or
// after RetryAfter's delay when the error carries one. After the queue's
// maximum receives the message goes to the dead-letter queue.
type Handler func(ctx context.Context, m Message) error

// RetryError asks for the message to be retried after a delay.
type RetryError struct {
	After time.Duration
	Err   error
}

func (e *RetryError) Error() string { return fmt.Sprintf("retry after %s: %v", e.After, e.Err) }
func (e *RetryError) Unwrap() error { return e.Err }

// RetryAfter wraps err with a retry delay.
func RetryAfter(d time.Duration, err error) error { return &RetryError{After: d, Err: err} }

// DelayOf returns the retry delay err asks for, if any.
func DelayOf(err error) (time.Duration, bool) {
	var r *RetryError
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}
