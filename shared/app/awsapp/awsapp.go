// Package awsapp wires the app of a deployed Lambda: the DynamoDB store,
// the SQS work queues and the S3 media bucket the configuration names,
// the clients of the webhooks' AWS destinations, and nothing else, so that a Lambda links no embedded adapter. Each
// functions/*/main.go calls it (through shared/lambdaapi for the HTTP,
// stream and queue fronts).
//
// Builds tagged embedded (make invoke, scripts/lambda-perf's embedded run)
// also open the embedded store when SELLERAPI_STORE=sqlite, so that a
// Lambda's binary can be run against a local data directory; deployed
// builds are never tagged.
package awsapp

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/blob"
	"github.com/moku/sellerapi/shared/blob/s3blob"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/envelope/kmskeys"
	"github.com/moku/sellerapi/shared/queue/sqsqueue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/webhook/awsdest"
)

// New builds the app from cfg, opening what no option gives with Opener.
func New(ctx context.Context, cfg config.Config, opts ...app.Option) (*app.App, error) {
	senders, err := awsdest.New(ctx, cfg.WebhookRoleARN)
	if err != nil {
		return nil, err
	}
	base := []app.Option{app.WithOpener(Opener{}), Pending(), app.WithWebhookSenders(senders)}
	if cfg.KMSKeyARN != "" {
		src, err := OpenKMS(ctx, cfg)
		if err != nil {
			return nil, err
		}
		base = append(base, app.WithKeySource(src))
	}
	return app.New(ctx, cfg, append(base, opts...)...)
}

// OpenKMS is the key source of secrets at rest: the KMS key the
// configuration names. Opening sends no request; the first seal or open
// of the process does.
func OpenKMS(ctx context.Context, cfg config.Config) (kmskeys.Source, error) {
	awscfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return kmskeys.Source{}, fmt.Errorf("awsapp: kms client: %w", err)
	}
	return kmskeys.Source{API: kms.NewFromConfig(awscfg), KeyID: cfg.KMSKeyARN}, nil
}

// Pending has the router delete the pending markers the DynamoDB store
// writes with every routed insert (pipeline.Pending); other stores have
// none.
func Pending() app.Option {
	return app.WithPending(func(s store.Store) store.Store {
		if _, ok := s.(*dynamodb.Store); ok {
			return s
		}
		return nil
	})
}

// Opener opens the AWS adapters (app.Opener).
type Opener struct{}

// OpenStore opens the DynamoDB table the configuration names; opening
// sends no request.
func (Opener) OpenStore(ctx context.Context, cfg config.Config, c clock.Clock) (store.Store, error) {
	switch cfg.Store {
	case config.StoreDynamoDB:
		return OpenDynamoDB(ctx, cfg, c)
	case config.StoreSQLite:
		return openEmbedded(cfg, c)
	}
	return nil, fmt.Errorf("awsapp: unknown store %q", cfg.Store)
}

// OpenDynamoDB opens the DynamoDB table the configuration names, deciding
// expiry on c; opening sends no request.
func OpenDynamoDB(ctx context.Context, cfg config.Config, c clock.Clock) (*dynamodb.Store, error) {
	client, err := dynamodb.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("awsapp: dynamodb client: %w", err)
	}
	return dynamodb.New(client, cfg.Table, dynamodb.WithClock(c.Now), dynamodb.WithTransactHook(app.MarkPending(c.Now))), nil
}

// OpenBlob opens the S3 media bucket the configuration names; without one
// it returns nil (uploads then fail closed with 503), or in an embedded
// build the media or data directory. Opening touches nothing.
func (Opener) OpenBlob(ctx context.Context, cfg config.Config) (blob.Store, error) {
	if cfg.MediaBucket == "" {
		return embeddedBlob(cfg), nil
	}
	client, err := s3blob.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("awsapp: s3 client: %w", err)
	}
	return s3blob.New(client, cfg.MediaBucket), nil
}

// OpenQueues opens the SQS work queues at the URLs the configuration names
// (config.QueueURLEnv()). Each queue in required must have one: a function
// is told the URLs of the queues it sends to or works (the stream router
// all of them, a worker its own and those it sends follow-up work to), and
// a send to a queue without a URL fails. Opening sends no request.
func OpenQueues(ctx context.Context, cfg config.Config, required ...string) (*sqsqueue.Queue, error) {
	for _, name := range required {
		if cfg.QueueURLs[name] == "" {
			return nil, fmt.Errorf("awsapp: no URL for the %s queue: set %s", name, config.QueueURLEnv()[name])
		}
	}
	client, err := sqsqueue.NewClient(ctx)
	if err != nil {
		return nil, fmt.Errorf("awsapp: sqs client: %w", err)
	}
	return sqsqueue.New(client, cfg.QueueURLs), nil
}
