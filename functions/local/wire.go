package main

// The local binary's wiring: the embedded store of the data directory (or
// DynamoDB with --store dynamodb), the media store and, for serve, the
// background work in this process, all handed to the app here.

import (
	"context"
	"fmt"
	"io"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/app/embedded"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/media/canonical"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/sqlite"
	"github.com/moku/sellerapi/shared/webhook/awsdest"
)

// open wires the app on the store cfg names, logging to logTo. With
// background, the app also runs the background work in this process
// (RunBackground): on the embedded store over its change log and queue,
// woken by each commit that starts work; on DynamoDB with SQS queues
// configured over the table's stream (read from its latest position:
// changes made while no server ran are not routed, whereas in AWS the
// event source mapping keeps the position) and those queues.
func open(ctx context.Context, cfg config.Config, logTo io.Writer, background bool) (*app.App, error) {
	c := clock.System{}
	b, err := openBlob(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var st store.Store
	local := app.Option(func(*app.App) {})
	var localErr error
	switch cfg.Store {
	case config.StoreSQLite:
		if !background {
			st, err = sqlite.Open(cfg.DataDir, sqlite.WithClock(c.Now))
			break
		}
		var l app.Local
		st, l, err = embedded.Open(cfg.DataDir, c)
		local = app.WithLocal(l)
	case config.StoreDynamoDB:
		var d *dynamodb.Store
		d, err = awsapp.OpenDynamoDB(ctx, cfg, c)
		st = d
		if err == nil && background && len(cfg.QueueURLs) > 0 {
			if l, err := streamLocal(ctx, cfg, d, dynamodb.FromLatest); err != nil {
				localErr = err
			} else {
				local = app.WithLocal(l)
			}
		}
	default:
		err = fmt.Errorf("unknown store %q", cfg.Store)
	}
	if err != nil {
		return nil, err
	}
	// Deliveries to AWS destinations: an SQS emulator's queue (a loopback
	// URL, under --allow-private-webhooks) or the developer's own account.
	senders, err := awsdest.New(ctx, cfg.WebhookRoleARN)
	if err != nil {
		st.Close()
		return nil, err
	}
	a, err := app.New(ctx, cfg, app.WithStore(st), app.WithBlob(b), app.WithMediaEncoder(canonical.Encode), app.WithClock(c), app.WithLogOutput(logTo), awsapp.Pending(), local,
		app.WithWebhookSenders(senders))
	if err != nil {
		st.Close()
		return nil, err
	}
	if localErr != nil {
		a.Log.ErrorContext(ctx, "background work on DynamoDB and SQS cannot start", "error", localErr)
	}
	return a, nil
}

// openBlob opens the S3 bucket the configuration names, else the media
// directory, else (on the embedded store) the data directory.
func openBlob(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.MediaBucket != "" {
		return awsapp.Opener{}.OpenBlob(ctx, cfg)
	}
	return embedded.Blob(cfg), nil
}

// streamLocal is the background work over the DynamoDB table's stream,
// read from start, and the SQS work queues: the stream router and the
// workers in one process, as the Lambdas run them in AWS.
func streamLocal(ctx context.Context, cfg config.Config, st *dynamodb.Store, start dynamodb.StreamStart) (app.Local, error) {
	q, err := awsapp.OpenQueues(ctx, cfg, queue.Names()...)
	if err != nil {
		return app.Local{}, err
	}
	streams, err := dynamodb.NewStreamsClient(ctx)
	if err != nil {
		return app.Local{}, err
	}
	r, err := st.Stream(ctx, streams, start)
	if err != nil {
		return app.Local{}, err
	}
	return app.Local{
		Changes: func(ctx context.Context, rt pipeline.Router) (int, error) { return r.Poll(ctx, rt.Route) },
		Queue:   q,
	}, nil
}
