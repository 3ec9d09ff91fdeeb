package app

// The AWS shape of the background work: SQS work queues, and, for the local
// binary on DynamoDB (serve --store dynamodb against DynamoDB Local or
// LocalStack), the stream router and the workers run in-process over the
// table's stream and those queues, as the Lambdas run them in AWS.

import (
	"context"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// OpenQueues opens the SQS work queues at the URLs the configuration names
// (config.QueueURLEnv()). Each queue in required must have one: a function
// is told the URLs of the queues it sends to or works (the stream router
// all of them, a worker its own and those it sends follow-up work to), and
// a send to a queue without a URL fails. Opening sends no request.
func OpenQueues(ctx context.Context, cfg config.Config, required ...string) (*sqsqueue.Queue, error) {
	for _, name := range required {
		if cfg.QueueURLs[name] == "" {
			return nil, fmt.Errorf("app: no URL for the %s queue: set %s", name, config.QueueURLEnv()[name])
		}
	}
	client, err := sqsqueue.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("app: sqs client: %w", err)
	}
	return sqsqueue.New(client, cfg.QueueURLs), nil
}

// StreamPipeline runs the stream router and the workers in one process on
// DynamoDB and SQS: it reads the table's stream, routes the changes to the
// queues with the works' rules, and works the queues with their handlers.
type StreamPipeline struct {
	Stream *dynamodb.StreamReader
	Queues *sqsqueue.Queue
	Router pipeline.Router
	Works  []Work
	app    *App
}

// NewStreamPipeline reads the stream of the app's DynamoDB table from
// start and runs works over q.
func (a *App) NewStreamPipeline(ctx context.Context, q *sqsqueue.Queue, works []Work, start dynamodb.StreamStart) (*StreamPipeline, error) {
	s, ok := a.Store.(*dynamodb.Store)
	if !ok {
		return nil, fmt.Errorf("app: the stream pipeline needs the DynamoDB store")
	}
	streams, err := dynamodb.NewStreamsClient(ctx)
	if err != nil {
		return nil, err
	}
	r, err := s.Stream(ctx, streams, start)
	if err != nil {
		return nil, err
	}
	rt := router(works, q)
	rt.Pending = a.Store
	return &StreamPipeline{Stream: r, Queues: q, Router: rt, Works: works, app: a}, nil
}

// Route reads the stream once and routes what it read; see
// dynamodb.StreamReader.Poll.
func (p *StreamPipeline) Route(ctx context.Context) (int, error) {
	return p.Stream.Poll(ctx, p.Router.Route)
}

// Work receives what is visible on every work's queue once and handles it
// as the worker Lambdas do. It returns how many messages it received.
func (p *StreamPipeline) Work(ctx context.Context) (int, error) {
	total := 0
	for _, w := range p.Works {
		h := w.Handle
		name := w.Queue
		logged := func(ctx context.Context, m queue.Message) error {
			err := h(ctx, m)
			if err != nil {
				p.app.Log.WarnContext(ctx, "work failed; it will be retried", "queue", name, "message_id", m.ID, "receives", m.Receives, "error", err)
			}
			return err
		}
		// Without waiting: the local loop polls on its own tick.
		n, err := p.Queues.Work(ctx, name, 10, 0, logged)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Once routes and works once, and reports whether it did anything.
func (p *StreamPipeline) Once(ctx context.Context) (bool, error) {
	routed, err := p.Route(ctx)
	if err != nil {
		return routed > 0, err
	}
	worked, err := p.Work(ctx)
	return routed+worked > 0, err
}

// runStreamPipeline is RunBackground's loop on DynamoDB with SQS queues:
// until ctx ends, it works until idle, then waits for the next tick. It
// reads the stream from the latest position: changes made while no server
// ran are not routed (in AWS the event source mapping keeps the position).
func (a *App) runStreamPipeline(ctx context.Context, interval time.Duration) {
	q, err := OpenQueues(ctx, a.Config, queue.Names()...)
	var p *StreamPipeline
	if err == nil {
		p, err = a.NewStreamPipeline(ctx, q, a.Works(q), dynamodb.FromLatest)
	}
	if err != nil {
		a.Log.ErrorContext(ctx, "background work on DynamoDB and SQS cannot start", "error", err)
		return
	}
	a.Log.InfoContext(ctx, "background work on DynamoDB Streams and SQS", "works", len(p.Works))
	go a.repeat(ctx, "route what the stream did not", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := a.SweepUnrouted(ctx, q, pipeline.SweepGrace)
		return false, err
	})
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		for {
			busy, err := p.Once(ctx)
			if err != nil && ctx.Err() == nil {
				a.Log.ErrorContext(ctx, "background work", "error", err)
			}
			if !busy || err != nil || ctx.Err() != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
