package app

import (
	"context"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/queue"
)

// MessageQueue is a work queue whose messages are handled each on its own
// (sqlitequeue.Queue is one).
type MessageQueue interface {
	queue.Sender
	// Receive takes up to max visible messages of the named queue,
	// hidden until settled or until the queue's visibility ends.
	Receive(ctx context.Context, name string, max int) ([]queue.Message, error)
	// DeleteBatch settles handled messages, several at once.
	DeleteBatch(ctx context.Context, ids []string) error
	// Retry makes a failed message visible again after delay.
	Retry(ctx context.Context, id string, delay time.Duration, cause error) error
}

// BatchQueue is a work queue received and settled a batch at a time, as
// the worker Lambdas work SQS (sqsqueue.Queue is one).
type BatchQueue interface {
	queue.Sender
	// Work receives up to n messages of the named queue, waiting up to
	// wait, handles them with h and settles them; it returns how many it
	// received.
	Work(ctx context.Context, name string, n int, wait time.Duration, h queue.Handler) (int, error)
}

// wakingSender sends through a queue and then wakes its consumer.
type wakingSender struct {
	q     queue.Sender
	wakes map[string]*Signal
}

func (s wakingSender) Send(ctx context.Context, name string, body []byte, delay time.Duration) error {
	if err := s.q.Send(ctx, name, body, delay); err != nil {
		return err
	}
	s.wake(name)
	return nil
}

func (s wakingSender) wake(name string) {
	if w := s.wakes[name]; w != nil {
		w.Notify()
	}
}

// batchingSender is a wakingSender over a queue that sends batches; the
// router sends through it what a pass of changes calls for at once.
type batchingSender struct{ wakingSender }

func (s batchingSender) SendBatch(ctx context.Context, msgs []queue.Outgoing) error {
	if err := s.q.(queue.BatchSender).SendBatch(ctx, msgs); err != nil {
		return err
	}
	for _, m := range msgs {
		s.wake(m.Queue)
	}
	return nil
}

// MessageTimeout bounds the handling of one message in local mode. It is
// below the embedded queue's 30 s visibility, so a message is not received
// again while it is still being handled; a webhook delivery's own limit
// (webhook.RequestTimeout, 12 s) is within it.
const MessageTimeout = 25 * time.Second

// Concurrency is how many messages of a queue local mode handles at once.
// A queue's loop handles up to its limit of messages at once, each under
// its own deadline, so one tenant's slow webhook receiver holds one
// delivery slot for at most MessageTimeout and never the expiry, bulk,
// sync, replay or seller-order loops; and a vendor's attempts hold at most
// webhook.VendorSlots of the delivery loop's (webhook.MemorySlots), the
// rest of its messages being deferred.
func Concurrency(name string) int {
	switch name {
	case queue.WebhookDeliveries, queue.WebhookSlowLane:
		// Deliveries wait on receivers, not on the store.
		return 16
	case queue.EventReplays, queue.BulkOperations, queue.SyncJobs:
		return 4
	}
	return 2
}

// repeat runs pass until it is idle, then waits for wake or the next
// tick, until ctx ends.
func (a *App) repeat(ctx context.Context, name string, every time.Duration, wake *Signal, pass func(context.Context) (bool, error)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for {
			busy, err := pass(ctx)
			if err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, name, "error", err)
			}
			if !busy || err != nil || ctx.Err() != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-wake.woken():
		}
	}
}

// workQueue handles w's queue with up to limit messages in flight: it
// takes the free slots (at least one), receives up to that many messages
// at once and handles each in its own goroutine; when the queue shows
// nothing it waits for a send to the queue or the next tick. Handled
// messages are deleted by one goroutine, as many at once as have finished
// meanwhile: a message is hidden for the queue's visibility, so a delete
// that waits a moment receives nothing twice.
func (a *App) workQueue(ctx context.Context, q MessageQueue, w Work, limit int, interval time.Duration) {
	slots := make(chan struct{}, limit)
	handled := make(chan string, limit)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	inflight.Go(func() { a.settleHandled(ctx, q, w, handled) })
	tick := time.NewTicker(interval)
	defer tick.Stop()
	wake := a.bg.wakes[w.Queue]
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		free := 1
	more:
		for free < limit {
			select {
			case slots <- struct{}{}:
				free++
			default:
				break more
			}
		}
		msgs, err := q.Receive(ctx, w.Queue, free)
		for range free - len(msgs) {
			<-slots
		}
		if err != nil || len(msgs) == 0 {
			if err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, "receive work", "queue", w.Queue, "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-wake.woken():
			}
			continue
		}
		for _, m := range msgs {
			inflight.Go(func() {
				defer func() { <-slots }()
				if a.handleMessage(ctx, q, w, m) {
					select {
					case handled <- m.ID:
					case <-ctx.Done():
					}
				}
			})
		}
	}
}

// settleHandled deletes the handled messages' ids as they come, as many
// at once as have come, until ctx ends; the ids left then are received
// again after the queue's visibility, as after a crash.
func (a *App) settleHandled(ctx context.Context, q MessageQueue, w Work, handled <-chan string) {
	for {
		var ids []string
		select {
		case id := <-handled:
			ids = append(ids, id)
		case <-ctx.Done():
			return
		}
	more:
		for {
			select {
			case id := <-handled:
				ids = append(ids, id)
			default:
				break more
			}
		}
		a.settle(ctx, q, w, ids)
	}
}

// settle deletes handled messages.
func (a *App) settle(ctx context.Context, q MessageQueue, w Work, ids []string) {
	if err := q.DeleteBatch(ctx, ids); err != nil && ctx.Err() == nil {
		a.Log.ErrorContext(ctx, "settle work", "queue", w.Queue, "messages", len(ids), "error", err)
	}
}

// handleMessage handles one message under MessageTimeout and tells
// whether it was handled, to be deleted; a failed one is put back on the
// queue after its delay.
func (a *App) handleMessage(ctx context.Context, q MessageQueue, w Work, m queue.Message) bool {
	hctx, cancel := context.WithTimeout(ctx, MessageTimeout)
	herr := w.Handle(hctx, m)
	cancel()
	if ctx.Err() != nil {
		return false // stopping: the message becomes visible again by itself
	}
	if herr == nil {
		return true
	}
	delay, ok := queue.DelayOf(herr)
	if !ok {
		delay = a.bg.Visibility
	}
	a.Log.WarnContext(ctx, "work failed; it will be retried", "queue", w.Queue, "message_id", m.ID, "receives", m.Receives, "error", herr)
	if err := q.Retry(ctx, m.ID, delay, herr); err != nil {
		a.Log.ErrorContext(ctx, "settle work", "queue", w.Queue, "message_id", m.ID, "error", err)
	}
	return false
}

// partialSender is a wakingSender over a queue that sends several
// messages a call, each on its own (SQS); the router sends through it ten
// of a queue at once, and each queue a message went to is woken.
type partialSender struct{ wakingSender }

func (s partialSender) SendEach(ctx context.Context, msgs []queue.Outgoing) []error {
	errs := s.q.(queue.PartialBatchSender).SendEach(ctx, msgs)
	for i, m := range msgs {
		if i < len(errs) && errs[i] == nil {
			s.wake(m.Queue)
		}
	}
	return errs
}
