package lambdaapi

// The worker Lambdas: one SQS queue each, its messages handed to the work
// registered for the queue (app.Work), with partial batch responses.

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
)

// SQSHandler is the function Lambda invokes with a batch of SQS messages.
// Its event source mapping must report batch item failures
// (FunctionResponseTypes: ReportBatchItemFailures).
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Queues is what a worker needs of the queue service: sending follow-up
// work, and hiding a failed message until the retry its error asks for.
// *sqsqueue.Queue is one.
type Queues interface {
	queue.Sender
	ChangeVisibility(ctx context.Context, queue, receiptHandle string, d time.Duration) error
}

// NewSQSHandler handles each message of a batch of the named queue with h,
// in order. A message h fails is reported in the batch response, so that
// SQS delivers it again (and, past the queue's maxReceiveCount, moves it to
// the dead-letter queue) while Lambda deletes the others; when the error
// carries a delay (queue.RetryAfter), the message is first hidden for that
// long, so that the retry comes then and not after the queue's visibility
// timeout. Messages left when ctx ends are reported failed unhandled.
func NewSQSHandler(queueName string, h queue.Handler, q Queues, log *slog.Logger) SQSHandler {
	return newSQSHandler(queueName, h, false, q, log)
}

// NewParallelSQSHandler is NewSQSHandler handling a batch's messages all
// at once, each in its own goroutine: an invocation lasts as long as its
// slowest message rather than the sum of them (the webhook worker, whose
// messages wait on different receivers).
func NewParallelSQSHandler(queueName string, h queue.Handler, q Queues, log *slog.Logger) SQSHandler {
	return newSQSHandler(queueName, h, true, q, log)
}

func newSQSHandler(queueName string, h queue.Handler, parallel bool, q Queues, log *slog.Logger) SQSHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		failed := make([]bool, len(ev.Records))
		one := func(i int) {
			rec := ev.Records[i]
			if ctx.Err() != nil {
				failed[i] = true
				return
			}
			m := queue.Message{ID: rec.MessageId, Queue: queueName, Body: []byte(rec.Body),
				Receives: sqsqueue.Receives(rec.Attributes["ApproximateReceiveCount"])}
			err := h(ctx, m)
			if err == nil {
				return
			}
			failed[i] = true
			delay, hasDelay := queue.DelayOf(err)
			log.WarnContext(ctx, "work failed; it will be retried", "queue", queueName, "message_id", m.ID,
				"receives", m.Receives, "retry_in", delay.String(), "error", err)
			if hasDelay {
				if verr := q.ChangeVisibility(ctx, queueName, rec.ReceiptHandle, delay); verr != nil {
					// The retry then comes after the visibility timeout.
					log.ErrorContext(ctx, "cannot delay the retry", "queue", queueName, "message_id", m.ID, "error", verr)
				}
			}
		}
		if parallel {
			var wg sync.WaitGroup
			for i := range ev.Records {
				wg.Go(func() { one(i) })
			}
			wg.Wait()
		} else {
			for i := range ev.Records {
				one(i)
			}
		}
		resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		for i, rec := range ev.Records {
			if failed[i] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, nil
	}
}

// NewWorker returns the SQS batch handler of the work the app registers
// for queueName (app.Work), sending follow-up work through q. It fails
// when no work is registered for the queue, so that a worker deployed
// without its work fails at init instead of dropping messages.
func NewWorker(a *app.App, q Queues, queueName string) (SQSHandler, error) {
	w, err := a.Work(q, queueName)
	if err != nil {
		return nil, fmt.Errorf("%w: the worker of %s has nothing to run (register its work in shared/app/work.go)", err, queueName)
	}
	return newSQSHandler(queueName, w.Handle, w.Parallel, q, a.Log), nil
}

// WorkerMain is the composition root of the worker Lambda called name for
// the named queue, in the order it wires: configuration from the
// environment (the store; the URL of its own queue, which it delays
// retries on and may send follow-up work to; and the URLs of the other
// queues its work sends to), the adapters and the services over them
// (boot), the queue's work over those services (NewWorker), then the
// Lambda loop. An init failure is printed as "<name>: init: <err>" and
// exits with status 1.
func WorkerMain(name, queueName string) {
	a, q := boot(context.Background(), name, queueName)
	h, err := NewWorker(a, q, queueName)
	if err != nil {
		fail(name, err)
	}
	lambda.Start(h)
}

// boot is the init of the mains the queues drive (the workers, the stream
// router): configuration from the environment, the app on the AWS
// adapters with its services built once (awsapp.New), and the queues
// named, each of which must have a URL. A failure ends the process (see
// fail).
func boot(ctx context.Context, name string, queues ...string) (*app.App, *sqsqueue.Queue) {
	cfg, err := config.FromEnv()
	if err != nil {
		fail(name, err)
	}
	a, err := awsapp.New(ctx, cfg, app.WithLogHandler(WithRequestIDs))
	if err != nil {
		fail(name, err)
	}
	q, err := awsapp.OpenQueues(ctx, cfg, queues...)
	if err != nil {
		fail(name, err)
	}
	return a, q
}
