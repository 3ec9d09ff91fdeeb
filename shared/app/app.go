// Package app assembles the service from the adapters its caller wires:
// the store, the media store and, in a process that runs its own
// background work, the change feed and the work queue (Local); with the
// clock, the JSON logger and the cursor key. It is every process's
// composition root: New builds each service once over the adapters
// (NewServices), and the handler, the works and the admin commands
// receive them. Every Lambda's main (through app/awsapp) and the local
// binary build one App and mount its handler.
// app imports no adapter: what it needs of one beyond the ports is a small
// interface here (MessageQueue, BatchQueue). Nothing here holds business
// rules.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"

	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
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
	// WebhookAWS sends the deliveries to AWS destinations (SQS,
	// EventBridge); its nil senders fail those attempts.
	WebhookAWS webhook.Senders
	// MediaEncode makes the canonical WebP of uploads; nil (every process
	// but the media Lambda and the local binary) answers uploads 503.
	MediaEncode media.Encoder
	// Secrets seals the secrets kept at rest (webhook signing secrets, the
	// cursor keys) with this process's data key: from KMS when the process
	// wires it (WithKeySource; awsapp does when SELLERAPI_KMS_KEY_ARN is
	// set), otherwise from the local master key file.
	Secrets *envelope.Box
	// Services are the process's services over Store, built once by New
	// (NewServices): the handler, the works and the admin commands
	// receive them.
	Services Services

	opener Opener
	local  *Local
	// works replaces Works in the local background (tests of its plumbing).
	works func(queue.Sender) []Work
	// pendingOf names the store of the router's markers (WithPending).
	pendingOf func(store.Store) store.Store
	// bg is the in-process background work over local, built once by New.
	bg *background
}

// Opener opens the adapters a configuration names. The process's main
// supplies it (awsapp.Opener in the Lambdas, the local binary its own);
// New asks it for what no option gave.
type Opener interface {
	// OpenStore opens the store, deciding expiry on c.
	OpenStore(ctx context.Context, cfg config.Config, c clock.Clock) (store.Store, error)
	// OpenBlob opens the media store; nil when none is configured
	// (uploads then fail closed with 503).
	OpenBlob(ctx context.Context, cfg config.Config) (blob.Store, error)
}

// Option adjusts assembly: the adapters a main wires, and test seams.
type Option func(*App)

// WithClock replaces the system clock.
func WithClock(c clock.Clock) Option { return func(a *App) { a.Clock = c } }

// WithStore uses an already opened store instead of opening one.
func WithStore(s store.Store) Option { return func(a *App) { a.Store = s } }

// WithOpener opens the store and the media store that no other option
// gives with o.
func WithOpener(o Opener) Option { return func(a *App) { a.opener = o } }

// WithLocal has the app run its background work in this process over l
// (RunBackground, Drain), as the local binary does.
func WithLocal(l Local) Option { return func(a *App) { a.local = &l } }

// WithPending has the router delete the pending markers of what it routes
// (pipeline.Pending) from of(the app's store); of returns nil for a store
// whose inserts carry none. awsapp wires it: the DynamoDB table's markers.
func WithPending(of func(store.Store) store.Store) Option {
	return func(a *App) { a.pendingOf = of }
}

// WithKeySource seals secrets at rest with data keys from src (awsapp's
// KMS source, a test's fixed local key).
func WithKeySource(src envelope.Source) Option { return func(a *App) { a.Secrets = envelope.New(src) } }

// WithBlob uses an already opened media store instead of opening one.
func WithBlob(b blob.Store) Option { return func(a *App) { a.Blob = b } }

// WithMediaEncoder has the app take uploads, encoding them with e
// (media/canonical.Encode).
func WithMediaEncoder(e media.Encoder) Option { return func(a *App) { a.MediaEncode = e } }

// WithWebhookResolver fixes what webhook host names resolve to (tests).
func WithWebhookResolver(r webhook.Resolver) Option { return func(a *App) { a.WebhookResolver = r } }

// WithWebhookSenders has deliveries to AWS destinations sent with s
// (awsdest's clients; a test's recorded fakes).
func WithWebhookSenders(s webhook.Senders) Option { return func(a *App) { a.WebhookAWS = s } }

// WithLogOutput sends the JSON logs to w instead of standard error.
func WithLogOutput(w io.Writer) Option {
	return func(a *App) { a.Log = NewLogger(w, a.Config.LogLevel) }
}

// WithLogHandler wraps the log handler, e.g. to add the ids of the
// invocation being served to every line; give it after WithLogOutput.
func WithLogHandler(wrap func(slog.Handler) slog.Handler) Option {
	return func(a *App) { a.Log = slog.New(wrap(a.Log.Handler())) }
}

// New builds the app from the adapters the options give, opening the
// others with the Opener (WithOpener); without a store it fails.
func New(ctx context.Context, cfg config.Config, opts ...Option) (*App, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &App{Config: cfg, Clock: clock.System{}, Log: NewLogger(nil, cfg.LogLevel)}
	for _, o := range opts {
		o(a)
	}
	if a.Store == nil && a.opener != nil {
		s, err := a.opener.OpenStore(ctx, cfg, a.Clock)
		if err != nil {
			return nil, err
		}
		a.Store = s
	}
	if a.Store == nil {
		return nil, fmt.Errorf("app: no store: the process's main wires one (WithStore or WithOpener)")
	}
	if a.Blob == nil && a.opener != nil {
		b, err := a.opener.OpenBlob(ctx, cfg)
		if err != nil {
			return nil, err
		}
		a.Blob = b
	}
	if a.Secrets == nil {
		if cfg.KMSKeyARN != "" {
			return nil, fmt.Errorf("app: %s is set but this process wired no KMS key source", config.EnvKMSKeyARN)
		}
		a.Secrets = envelope.New(envelope.NewKeyFile(cfg.LocalKeyFile()))
	}
	a.Services = NewServices(a, a.Store)
	if a.local != nil {
		bg, err := a.newBackground(*a.local)
		if err != nil {
			return nil, err
		}
		a.bg = bg
	}
	return a, nil
}

// Handler builds the HTTP handler serving groups (and knowing every
// group's paths, Mounted) over the app's services.
func (a *App) Handler(ctx context.Context, groups ...httpapi.Group) (*httpapi.Server, error) {
	cursors, err := a.CursorKeys().Live(ctx)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return httpapi.New(httpapi.Deps{Config: a.Config, Store: a.Store, Clock: a.Clock, Log: a.Log, Cursors: cursors, Services: a.Services.API}, Mounted(groups...)...)
}

// Mounted is what a process serving groups mounts: the groups, and every
// other group's paths (httpapi.Elsewhere). API Gateway sends a method no
// route of a path takes to the $default route's function, which so
// answers it 405 with the path's Allow, as the path's own function would.
func Mounted(groups ...httpapi.Group) []httpapi.Group {
	return append(slices.Clip(groups), httpapi.Elsewhere(AllGroups()...))
}

// CursorKeys is the keyring of the page cursors' keys in the app's store.
func (a *App) CursorKeys() cursor.Keyring {
	return cursor.Keyring{Store: a.Store, Box: a.Secrets, Clock: a.Clock}
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
