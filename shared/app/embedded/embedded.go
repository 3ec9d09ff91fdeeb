// Package embedded wires the embedded mode's adapters: the SQLite store of
// a data directory, the work queue and change log that share its file, and
// the media directory. The local binary and the tests wire the app with it;
// no deployed Lambda links it (app/awsapp does only in builds tagged
// embedded, for make invoke).
package embedded

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/blob/fsblob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// QueueFile is the work queue's database in the data directory, beside
// the store's: the queue's writes (sends, receives, deletes: three per
// unit of work) never wait for the store's write lock, nor the clients'
// writes for them.
const QueueFile = "queue.db"

// TailBatch is how many changes the router reads from the change log at
// a time.
const TailBatch = 500

// Open opens the embedded store in dir for a process that runs its own
// background work: the returned Local routes the store's change log to its
// queue, and the store wakes the router after each commit that inserts an
// item that starts work (app.Routed), so that the work starts at once.
func Open(dir string, c clock.Clock) (*sqlite.Store, app.Local, error) {
	committed := app.NewSignal()
	st, err := sqlite.Open(dir, sqlite.WithClock(c.Now), sqlite.OnInsert(app.Routed(), committed.Notify))
	if err != nil {
		return nil, app.Local{}, err
	}
	l, err := Local(st, c)
	if err != nil {
		st.Close()
		return nil, app.Local{}, err
	}
	l.Committed = committed
	return st, l, nil
}

// Local is the background work over an opened embedded store: its change
// log, its work queue (sqlitequeue, in its own file beside the store's,
// QueueFile, closed with the store) and its sweep of expired items.
// Without Open's signal the router runs on its tick.
func Local(st *sqlite.Store, c clock.Clock) (app.Local, error) {
	q, err := sqlitequeue.Open(filepath.Join(filepath.Dir(st.Path()), QueueFile), c.Now)
	if err != nil {
		return app.Local{}, fmt.Errorf("embedded: queue: %w", err)
	}
	st.CloseWith(q)
	// Webhook deliveries are hints the contract lets be lost; the jobs,
	// replays and seller-order projections the other queues carry are not.
	q.Durable = func(name string) bool { return name != queue.WebhookDeliveries && name != queue.WebhookSlowLane }
	// Messages queued by a server from before the queue had its own file.
	if _, err := q.Adopt(context.Background(), st.DB()); err != nil {
		return app.Local{}, fmt.Errorf("embedded: queue: %w", err)
	}
	return app.Local{
		Changes: func(ctx context.Context, r pipeline.Router) (int, error) {
			return pipeline.Tail(ctx, st, r, TailBatch)
		},
		Queue:      q,
		Visibility: q.Visibility,
		Sweep: func(ctx context.Context) error {
			_, err := st.Sweep(ctx)
			return err
		},
	}, nil
}

// Blob is the media directory the configuration names, else (on the
// embedded store) the data directory; nil when neither applies. It touches
// nothing until used.
func Blob(cfg config.Config) blob.Store {
	switch {
	case cfg.MediaDir != "":
		return fsblob.New(cfg.MediaDir)
	case cfg.Store == config.StoreSQLite && cfg.DataDir != "":
		return fsblob.New(cfg.DataDir)
	}
	return nil
}
