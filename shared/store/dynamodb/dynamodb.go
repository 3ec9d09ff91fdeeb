// Package dynamodb is the store port over one DynamoDB table.
//
// Layout: the string key attributes pk (hash) and sk (range); v (N) holds the
// item's version, d (B) its JSON document (absent when empty), or Z (B) the
// document packed when that is smaller (packed.go), ttl (N) its
// expiry in Unix seconds (absent when the item never expires; the table's TTL
// attribute), and every numeric attribute of Item.Nums is a top-level N
// attribute of its own name, so that conditions and ADD updates can use it.
//
// DynamoDB deletes expired items only eventually, so every read filters them
// out and every condition treats an item whose ttl has passed as absent. The
// clock that decides expiry is injectable (WithClock) so the contract suite
// can move it.
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// Store is the DynamoDB store.
type Store struct {
	client *ddb.Client
	table  string
	now    func() time.Time
	// hook, when set, may add operations to every transaction (WithTransactHook).
	hook func(context.Context, []store.Op) []store.Op
	// codec packs the documents it writes and unpacks those it reads.
	codec *codec
}

var _ store.Store = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithClock sets the clock that decides which items have expired.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithTransactHook lets hook add operations to every Transact before it is
// validated and sent, so that they commit or fail with the caller's (the
// pipeline's pending-work markers, pipeline.Pending); it is given the
// Transact's context, and what the request put there.
func WithTransactHook(hook func(context.Context, []store.Op) []store.Op) Option {
	return func(s *Store) { s.hook = hook }
}

// New returns a store over table. The client should count round trips
// (NewClient's does; see RoundTripCounter).
func New(client *ddb.Client, table string, opts ...Option) *Store {
	s := &Store{client: client, table: table, now: time.Now, codec: &codec{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close does nothing: the client holds no resources of the store's own.
func (s *Store) Close() error { return nil }

// NewClient loads the default AWS configuration (so AWS_ENDPOINT_URL_DYNAMODB
// or AWS_ENDPOINT_URL can point it at DynamoDB Local or LocalStack) and
// returns a client that counts round trips.
func NewClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*ddb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: load AWS config: %w", err)
	}
	return ddb.NewFromConfig(cfg, func(o *ddb.Options) {
		o.APIOptions = append(o.APIOptions, RoundTripCounter())
		// The SDK checks a CRC32 header that DynamoDB (and its emulators)
		// leave off error responses, and logs a spurious warning for every
		// failed condition (aws/aws-sdk-go-v2#3545); TLS guards integrity.
		o.DisableValidateResponseChecksum = true
	}), nil
}

// RoundTripCounter is an SDK stack option that counts every HTTP attempt
// with roundtrip.Start, spanning the attempt so that calls made side by
// side count as one wait. It sits at the end of the Finalize step, after the
// retry middleware, so that retried attempts count too. It also asks every
// item operation for its consumed capacity and reports it with
// roundtrip.AddCapacity.
func RoundTripCounter() func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		err := st.Initialize.Add(middleware.InitializeMiddlewareFunc("store.ConsumedCapacity",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				askCapacity(in.Parameters)
				out, md, err := next.HandleInitialize(ctx, in)
				if err == nil {
					read, write := capacityOf(out.Result)
					roundtrip.AddCapacity(ctx, read, write)
				}
				return out, md, err
			}), middleware.After)
		if err != nil {
			return err
		}
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("store.RoundTripCounter",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				done := roundtrip.Start(ctx)
				defer done()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// askCapacity sets ReturnConsumedCapacity on the item operations' inputs.
func askCapacity(in any) {
	switch in := in.(type) {
	case *ddb.GetItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.BatchGetItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.QueryInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.UpdateItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.PutItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.DeleteItemInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	case *ddb.TransactWriteItemsInput:
		in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	}
}

// capacityOf sums the consumed capacity an output reports: read units for
// the reads, write units for the writes (a transaction's condition checks
// included, as DynamoDB bills them).
func capacityOf(out any) (read, write float64) {
	var cs []types.ConsumedCapacity
	switch out := out.(type) {
	case *ddb.GetItemOutput:
		return sum(one(out.ConsumedCapacity)), 0
	case *ddb.BatchGetItemOutput:
		return sum(out.ConsumedCapacity), 0
	case *ddb.QueryOutput:
		return sum(one(out.ConsumedCapacity)), 0
	case *ddb.UpdateItemOutput:
		cs = one(out.ConsumedCapacity)
	case *ddb.PutItemOutput:
		cs = one(out.ConsumedCapacity)
	case *ddb.DeleteItemOutput:
		cs = one(out.ConsumedCapacity)
	case *ddb.TransactWriteItemsOutput:
		cs = out.ConsumedCapacity
	}
	return 0, sum(cs)
}

func sum(cs []types.ConsumedCapacity) float64 {
	var total float64
	for _, c := range cs {
		total += aws.ToFloat64(c.CapacityUnits)
	}
	return total
}

func one(c *types.ConsumedCapacity) []types.ConsumedCapacity {
	if c == nil {
		return nil
	}
	return []types.ConsumedCapacity{*c}
}

// TableOption configures CreateTable.
type TableOption func(*tableOptions)

type tableOptions struct{ noTTL bool }

// WithoutTTL leaves the table's TTL off. Tests against DynamoDB Local use
// it: the emulator deletes items within seconds of their ttl by the wall
// clock, while the tests decide expiry with a clock of their own.
func WithoutTTL() TableOption { return func(o *tableOptions) { o.noTTL = true } }

// CreateTable creates the table (on-demand, with a NEW_AND_OLD_IMAGES stream),
// waits until it is active and enables TTL on the ttl attribute. An existing
// table is left as it is.
func CreateTable(ctx context.Context, client *ddb.Client, name string, opts ...TableOption) error {
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	_, err := client.CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamodb: create table %s: %w", name, err)
	}
	if err := ddb.NewTableExistsWaiter(client).Wait(ctx, &ddb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamodb: wait for table %s: %w", name, err)
	}
	if o.noTTL {
		return nil
	}
	ttl, err := client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("dynamodb: describe TTL of %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamodb: enable TTL on %s: %w", name, err)
	}
	return nil
}
