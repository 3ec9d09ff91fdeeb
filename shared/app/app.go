// Package app assembles the service from its configuration: the store the
// configuration names, the clock, the JSON logger and the cursor key. Every
// Lambda's main and the local binary build one App and mount its handler;
// nothing here holds business rules.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/blob/fsblob"
	"github.com/moku/sellerapi/shared/blob/s3blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/webhook"
)

// App is an assembled service.
type App struct {
	Config config.Config
	Store  store.Store
	Clock  clock.Clock
	Log    *slog.Logger
	// Blob holds uploaded media; nil when none is configured.
	Blob blob.Store
	// WebhookResolver resolves webhook host names; nil is the system's.
	WebhookResolver webhook.Resolver

	webhookClient     *http.Client
	webhookClientOnce sync.Once
}

// Option adjusts assembly, mostly for tests.
type Option func(*App)

// WithClock replaces the system clock.
func WithClock(c clock.Clock) Option { return func(a *App) { a.Clock = c } }

// WithStore uses an already opened store instead of opening one.
func WithStore(s store.Store) Option { return func(a *App) { a.Store = s } }

// WithBlob uses an already opened media store instead of opening one.
func WithBlob(b blob.Store) Option { return func(a *App) { a.Blob = b } }

// WithWebhookResolver fixes what webhook host names resolve to (tests).
func WithWebhookResolver(r webhook.Resolver) Option { return func(a *App) { a.WebhookResolver = r } }

// WithLogOutput sends the JSON logs to w instead of standard error.
func WithLogOutput(w io.Writer) Option {
	return func(a *App) { a.Log = NewLogger(w, a.Config.LogLevel) }
}

// WithLogHandler wraps the log handler, e.g. to add the ids of the
// invocation being served to every line; give it after WithLogOutput.
func WithLogHandler(wrap func(slog.Handler) slog.Handler) Option {
	return func(a *App) { a.Log = slog.New(wrap(a.Log.Handler())) }
}

// New opens the configured store and builds the app.
func New(ctx context.Context, cfg config.Config, opts ...Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Clock: clock.System{}, Log: NewLogger(nil, cfg.LogLevel)}
	for _, o := range opts {
		o(a)
	}
	if a.Store == nil {
		s, err := OpenStore(ctx, cfg, a.Clock)
		if err != nil {
			return nil, err
		}
		a.Store = s
	}
	if a.Blob == nil {
		b, err := OpenBlob(ctx, cfg)
		if err != nil {
			return nil, err
		}
		a.Blob = b
	}
	return a, nil
}

// OpenBlob opens the media store the configuration names: the S3 bucket,
// else the media directory, else (embedded mode) the data directory. It
// returns nil when none is configured: uploads then fail closed with 503.
// Opening touches neither S3 nor the disk.
func OpenBlob(ctx context.Context, cfg config.Config) (blob.Store, error) {
	switch {
	case cfg.MediaBucket != "":
		client, err := s3blob.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("app: s3 client: %w", err)
		}
		return s3blob.New(client, cfg.MediaBucket), nil
	case cfg.MediaDir != "":
		return fsblob.New(cfg.MediaDir), nil
	case cfg.Store == config.StoreSQLite && cfg.DataDir != "":
		return fsblob.New(cfg.DataDir), nil
	}
	return nil, nil
}

// OpenStore opens the store the configuration names.
func OpenStore(ctx context.Context, cfg config.Config, c clock.Clock) (store.Store, error) {
	switch cfg.Store {
	case config.StoreSQLite:
		return sqlite.Open(cfg.DataDir, sqlite.WithClock(c.Now))
	case config.StoreDynamoDB:
		client, err := dynamodb.NewClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("app: dynamodb client: %w", err)
		}
		return dynamodb.New(client, cfg.Table, dynamodb.WithClock(c.Now)), nil
	}
	return nil, fmt.Errorf("app: unknown store %q", cfg.Store)
}

// Handler builds the HTTP handler serving groups.
func (a *App) Handler(ctx context.Context, groups ...httpapi.Group) (*httpapi.Server, error) {
	key, err := cursor.LoadKey(ctx, a.Store)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return httpapi.New(httpapi.Deps{Config: a.Config, Store: a.Store, Clock: a.Clock, Log: a.Log, CursorKey: key, Blob: a.Blob, WebhookResolver: a.WebhookResolver,
		RateLeases: a.Config.Store == config.StoreSQLite}, groups...)
}

// Close releases the store.
func (a *App) Close() error { return a.Store.Close() }

// NewLogger returns the service's JSON logger at level (debug, info, warn,
// error) writing to w, or standard error when w is nil.
func NewLogger(w io.Writer, level string) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// AllGroups is every operation group, in the contract's order.
func AllGroups() []httpapi.Group {
	return []httpapi.Group{httpapi.Vendors, httpapi.Products, httpapi.Inventory, httpapi.Connections, httpapi.Listings, httpapi.Reservations, httpapi.ExternalOrders, httpapi.SellerOrders, httpapi.Events, httpapi.Webhooks, httpapi.SyncJobs, httpapi.BulkOperations, httpapi.Conflicts, httpapi.Media, httpapi.StorePairings}
}

var _ http.Handler = (*httpapi.Server)(nil)
