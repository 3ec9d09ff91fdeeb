package app

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/reservation"
)

// ExpireReservations releases every reservation whose hold has ended,
// walking every expiry shard once; entries that fail are logged, counted
// and left for the next pass. The reservation-expirer Lambda runs it on a
// schedule; the local server runs it every second.
func (a *App) ExpireReservations(ctx context.Context) (reservation.Run, error) {
	run, err := a.Services.API.Reservations.ExpireDue(ctx, 100)
	for _, e := range run.Errors {
		a.Log.ErrorContext(ctx, "expire reservation", "error", e)
	}
	if run.Failed > 0 {
		a.Log.WarnContext(ctx, "reservation expiry pass had failures", "expired", run.Expired, "failed", run.Failed)
	}
	return run, err
}

// Local is what a process that runs its own background work (the local
// binary) wires into the app: where committed changes come from, the
// queue between the router and the workers, and what wakes them.
type Local struct {
	// Changes routes, with r, the committed changes not routed yet and
	// remembers how far it got; it returns how many it routed (the
	// embedded store's change log through pipeline.Tail, or a DynamoDB
	// stream reader).
	Changes func(ctx context.Context, r pipeline.Router) (int, error)
	// Committed, when set, is notified after commits that may start work
	// (sqlite.OnInsert): the router then runs at once instead of on its
	// next tick.
	Committed *Signal
	// Queue carries the work: a MessageQueue (the embedded queue, each
	// queue worked a message at a time with bounded concurrency) or a
	// BatchQueue (SQS, worked a batch at a time). A send through the app
	// wakes the queue's consumer.
	Queue queue.Sender
	// Visibility is how long a MessageQueue's failed message waits for
	// its retry when its error asks for no delay.
	Visibility time.Duration
	// Sweep, when set, removes expired items; it runs every minute (the
	// store's own TTL does it on DynamoDB).
	Sweep func(ctx context.Context) error
}

// Signal wakes the loop that waits on it; notifications made while it is
// busy coalesce into one. The zero of *Signal (nil) never wakes anyone.
type Signal struct{ c chan struct{} }

// NewSignal returns a signal nobody has notified yet.
func NewSignal() *Signal { return &Signal{c: make(chan struct{}, 1)} }

// Notify wakes the waiting loop, or the next one to wait; it never blocks.
func (s *Signal) Notify() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// woken is what a loop selects on to be woken: nil (never) for no signal.
func (s *Signal) woken() <-chan struct{} {
	if s == nil {
		return nil
	}
	return s.c
}

// background is the app's in-process background work over a Local: the
// works and their router built once, sending through a sender that wakes
// the consumer of the queue it sends to.
type background struct {
	Local
	works  []Work
	router pipeline.Router
	// wakes is the signal of each queue's consumer; on a BatchQueue, one
	// loop consumes every queue and they share one signal.
	wakes map[string]*Signal
}

func (a *App) newBackground(l Local) (*background, error) {
	if l.Changes == nil {
		return nil, fmt.Errorf("app: local background work without a change feed")
	}
	if l.Visibility <= 0 {
		l.Visibility = 30 * time.Second
	}
	b := &background{Local: l, wakes: map[string]*Signal{}}
	switch l.Queue.(type) {
	case MessageQueue:
		for _, name := range queue.Names() {
			b.wakes[name] = NewSignal()
		}
	case BatchQueue:
		one := NewSignal()
		for _, name := range queue.Names() {
			b.wakes[name] = one
		}
	default:
		return nil, fmt.Errorf("app: local background work needs a MessageQueue or a BatchQueue, not %T", l.Queue)
	}
	var send queue.Sender = wakingSender{q: l.Queue, wakes: b.wakes}
	switch l.Queue.(type) {
	case queue.BatchSender:
		send = batchingSender{send.(wakingSender)}
	case queue.PartialBatchSender:
		send = partialSender{send.(wakingSender)}
	}
	works := a.Works
	if a.works != nil {
		works = a.works
	}
	b.works = works(send)
	b.router = router(b.works, send)
	b.router.Pending = a.pending()
	return b, nil
}

// Loop is one kind of periodic background work of the local process,
// run in its own goroutine until it is idle, then again on its tick or
// when woken.
type Loop struct {
	Name string
	// Every is the tick; zero is RunBackground's interval.
	Every time.Duration
	// Wake, when set, runs the loop at once when notified.
	Wake *Signal
	// Pass does one batch of the work and reports whether there may be
	// more right away.
	Pass func(ctx context.Context) (busy bool, err error)
}

// loops lists the local process's periodic work beside the queues'
// consumers: a new kind of local background work is one entry here.
func (a *App) loops() []Loop {
	ls := []Loop{{Name: "expire reservations", Pass: a.expirePass}}
	b := a.bg
	if b == nil {
		return ls
	}
	switch b.Queue.(type) {
	case MessageQueue:
		ls = append(ls, Loop{Name: "route changes", Wake: b.Committed, Pass: func(ctx context.Context) (bool, error) {
			n, err := b.Changes(ctx, b.router)
			return n > 0, err
		}})
	case BatchQueue:
		// One loop routes and works every queue, woken by any send; the
		// stream's misses are swept every minute, as the stream-router's
		// schedule does in AWS.
		ls = append(ls, Loop{Name: "background work", Wake: b.wakes[queue.WebhookDeliveries], Pass: a.pipelinePass},
			Loop{Name: "route what the stream did not", Every: time.Minute, Pass: func(ctx context.Context) (bool, error) {
				_, err := a.sweepUnrouted(ctx, b.router, pipeline.SweepGrace)
				return false, err
			}})
	}
	if b.Sweep != nil {
		ls = append(ls, Loop{Name: "sweep expired items", Every: time.Minute, Pass: func(ctx context.Context) (bool, error) {
			return false, b.Sweep(ctx)
		}})
	}
	return ls
}

// RunBackground does, in one process, what the stream router, the
// workers, the scheduled functions and the store's TTL do in AWS, over the
// Local the app was given; without one it only expires reservations. Each
// kind of work runs in its own loop (loops), so that no kind waits for
// another: routing changes to the queues (woken by Local.Committed), each
// queue's consumer (woken by sends to it; on a BatchQueue one loop routes
// and works every queue), reservation expiry every interval and the sweep
// of expired items every minute. Every loop also runs on its tick, as a
// backstop. It returns when ctx ends and every loop has.
func (a *App) RunBackground(ctx context.Context, interval time.Duration) {
	var wg sync.WaitGroup
	for _, l := range a.loops() {
		every := l.Every
		if every <= 0 {
			every = interval
		}
		wg.Go(func() { a.repeat(ctx, l.Name, every, l.Wake, l.Pass) })
	}
	if b := a.bg; b != nil {
		switch q := b.Queue.(type) {
		case MessageQueue:
			for _, w := range b.works {
				wg.Go(func() { a.workQueue(ctx, q, w, Concurrency(w.Queue), interval) })
			}
		case BatchQueue:
			a.Log.InfoContext(ctx, "background work on the change stream and the batch queues", "works", len(b.works))
		}
	}
	wg.Wait()
}

// Drain runs the local pipeline until nothing is left to do now; tests
// call it to let background work finish.
func (a *App) Drain(ctx context.Context) error {
	if a.bg == nil {
		return fmt.Errorf("app: no local background work to drain (WithLocal)")
	}
	for i := 0; i < 1000; i++ {
		busy, err := a.pipelinePass(ctx)
		if err != nil {
			return err
		}
		if !busy {
			return nil
		}
	}
	return fmt.Errorf("app: background work did not settle")
}

// pipelinePass routes the new changes once, then works what is visible on
// every queue once; it reports whether it did anything.
func (a *App) pipelinePass(ctx context.Context) (bool, error) {
	b := a.bg
	routed, err := b.Changes(ctx, b.router)
	if err != nil {
		return routed > 0, err
	}
	busy := routed > 0
	for _, w := range b.works {
		n, err := a.workOnce(ctx, w)
		if err != nil {
			return true, err
		}
		busy = busy || n > 0
	}
	return busy, nil
}

// workOnce works what is visible on w's queue once, without waiting, and
// returns how many messages it received.
func (a *App) workOnce(ctx context.Context, w Work) (int, error) {
	switch q := a.bg.Queue.(type) {
	case MessageQueue:
		msgs, err := q.Receive(ctx, w.Queue, 20)
		var done []string
		for _, m := range msgs {
			if a.handleMessage(ctx, q, w, m) {
				done = append(done, m.ID)
			}
		}
		a.settle(ctx, q, w, done)
		return len(msgs), err
	case BatchQueue:
		return q.Work(ctx, w.Queue, 10, 0, func(ctx context.Context, m queue.Message) error {
			err := w.Handle(ctx, m)
			if err != nil {
				a.Log.WarnContext(ctx, "work failed; it will be retried", "queue", w.Queue, "message_id", m.ID, "receives", m.Receives, "error", err)
			}
			return err
		})
	}
	return 0, nil
}

// expirePass is one pass of reservation expiry for a background loop.
func (a *App) expirePass(ctx context.Context) (bool, error) {
	run, err := a.ExpireReservations(ctx)
	if run.Expired > 0 {
		a.Log.InfoContext(ctx, "expired reservations", "count", run.Expired)
	}
	return false, err
}
