// Package stack is the service's one CloudFormation stack per stage, in CDK:
// the HTTP API with each operation group's routes going to that group's
// Lambda, the single DynamoDB table, the private media bucket, the admin
// function, log groups, alarms and least-privilege grants.
//
// What is deployed is a Definition; Default is the service's. An operation
// group, a scheduled function or a background worker is one line in
// Default; a group's routes are read from the group's own route table.
// Resource names come from shared/resources and environment variable names
// from shared/config, which the functions and the LocalStack bootstrap use
// too.
package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/resources"
)

// TableActions are the only DynamoDB actions a function that reads and
// writes items gets, on the table alone: what the store adapter calls
// (GetItem, BatchGetItem, Query, PutItem, UpdateItem, DeleteItem and
// TransactWriteItems, whose IAM check is per action inside it, plus
// ConditionCheckItem for its condition checks). No Scan, no table
// administration.
var TableActions = []string{
	"dynamodb:BatchGetItem",
	"dynamodb:ConditionCheckItem",
	"dynamodb:DeleteItem",
	"dynamodb:GetItem",
	"dynamodb:PutItem",
	"dynamodb:Query",
	"dynamodb:UpdateItem",
}

// TableReadActions are the stream router's reads: items (a vendor's
// webhook subscriptions) that decide where changes go, and the markers of
// changes not yet routed (pipeline.Pending).
var TableReadActions = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"}

// RouterActions are the stream router's table actions: its reads, and the
// deletion of a change's marker once the change is routed. It writes
// nothing else.
var RouterActions = append(slices.Clone(TableReadActions), "dynamodb:DeleteItem")

// Definition is what one stage deploys.
type Definition struct {
	Stage string
	// Retain keeps the table, bucket and log groups when the stack or the
	// resource is deleted, and turns on the table's deletion protection.
	Retain bool
	// Domain, when set, serves the API at https://<Domain.Name>/v1 and turns
	// the execute-api endpoint off.
	Domain *Domain
	// Assets is the directory holding <function>.zip as `make build` makes
	// them (dist/). Placeholder, when set, is a directory used as every
	// function's code instead, so that a synth needs no build (tests).
	Assets, Placeholder string
	// API lists the operation groups behind the HTTP API, one function per
	// group, named after the group (functions/<group.Name>).
	API []API
	// CatchAll is the function behind the $default route.
	CatchAll string
	// Admin is the function for vendor and token administration, invoked
	// with IAM only.
	Admin string
	// Scheduled are functions EventBridge invokes on a fixed rate.
	Scheduled []Scheduled
	// StreamRouter, when set, is the function that reads the table's stream
	// and sends work to the workers' queues.
	StreamRouter string
	// Sweep is how often EventBridge asks the stream router to route again
	// the changes its stream mapping gave up on (pipeline.Sweep): older
	// than pipeline.SweepGrace, still marked pending. Zero: never.
	Sweep time.Duration
	// Workers are the background functions, each fed by its own queue.
	Workers []Worker
	// LogRetention applies to every function's log group.
	LogRetention awslogs.RetentionDays
	// Canary publishes a version of every triggered function behind an
	// alias, live, which the triggers invoke; CodeDeploy shifts 10% of the
	// traffic to a new version for 5 minutes, then the rest, and rolls back
	// when the function's errors alarm or the API's 5xx-rate or latency
	// alarm goes off. Default: the prod stage.
	Canary bool
	// MediaEdge serves uploaded images through CloudFront (media.go).
	// Default: every stage but local (the deployed shape run on one
	// machine, scripts/cloud) and localstack (make localstack), where no
	// CloudFront runs; there the API's own media route serves them.
	MediaEdge bool
	// Throttle is the stage's limit on every route; PublicThrottle the
	// tighter one on each route that takes no credential (the pairing
	// code exchange, media reads, the contract), which no vendor's rate
	// window covers.
	Throttle, PublicThrottle Throttle
}

// Throttle is API Gateway's token bucket: a steady rate of requests per
// second and the burst it absorbs above it.
type Throttle struct {
	Rate  float64
	Burst int
}

// API is an operation group's function behind the HTTP API.
type API struct {
	Group httpapi.Group
	// Media lets the function read and write the media bucket's objects
	// (under media/) and tells it the bucket (SELLERAPI_MEDIA_BUCKET).
	Media bool
	// Memory is the function's memory in MB (default 512); Lambda gives
	// CPU in proportion to it.
	Memory int
}

// Domain is a custom domain for the API, with an ACM certificate for it in
// the stack's region.
type Domain struct{ Name, CertificateARN string }

// Scheduled is a function run on a fixed rate with no input.
type Scheduled struct {
	// Name is the folder in functions/.
	Name string
	// Every is the rate, a whole number of minutes.
	Every time.Duration
	// Timeout is the function's (default 60s).
	Timeout time.Duration
	// Exclusive reserves a concurrency of one, so that a run that outlasts
	// the rate never overlaps the next (the next is throttled and retried).
	Exclusive bool
}

// Worker is a background function fed by its own SQS queue, which has a
// dead-letter queue with an alarm on it.
type Worker struct {
	// Name is the folder in functions/.
	Name string
	// QueueURLEnv names the variable (a shared/config constant) that gives
	// the stream router this worker's queue URL.
	QueueURLEnv string
	// SendsTo names the workers (itself included) whose queues this one may
	// send to. Every worker and the router are told every queue's URL (the
	// service opens all its queues at start); sending is what is granted.
	SendsTo []string
	// BatchSize is the most messages per invocation (default 10).
	BatchSize int
	// MaxReceiveCount is how many receives a message gets before it goes
	// to the dead-letter queue (default 5).
	MaxReceiveCount int
	// Timeout is the function's; the queue's visibility timeout is six
	// times it, as AWS advises (default 60s).
	Timeout time.Duration
	// MaxConcurrency caps the concurrent invocations the queue's mapping
	// makes (2 to 1000, default 5), so that a burst of background work
	// cannot take the account's concurrency from the API's functions.
	MaxConcurrency int
	// OldestAlarm is the age of the oldest waiting message that raises the
	// queue's alarm (default 15 minutes). Work that waits by design (a
	// webhook retry delayed by SQS) is not visible and does not age.
	OldestAlarm time.Duration
}

// Default is the service's definition for stage. Retain defaults to true
// for the prod stage only.
func Default(stage string) Definition {
	return Definition{
		Stage:     stage,
		Retain:    stage == "prod",
		Canary:    stage == "prod",
		MediaEdge: stage != "local" && stage != "localstack",
		Assets:    "../dist",
		// One line per operation group (the local server mounts
		// app.AllGroups); its routes come from the group.
		API: []API{
			{Group: httpapi.Vendors},
			{Group: httpapi.Products},
			{Group: httpapi.Inventory},
			{Group: httpapi.Connections},
			{Group: httpapi.Listings},
			{Group: httpapi.Reservations},
			{Group: httpapi.ExternalOrders},
			{Group: httpapi.SellerOrders},
			{Group: httpapi.Events},
			{Group: httpapi.Webhooks},
			{Group: httpapi.SyncJobs},
			{Group: httpapi.BulkOperations},
			{Group: httpapi.Conflicts},
			// Re-encoding the largest upload peaks near 130 MB and takes
			// about 0.65 s of one core (docs/decisions.md, "Media function
			// memory"); 1024 MB gives it 0.6 of a vCPU.
			{Group: httpapi.Media, Media: true, Memory: 1024},
			{Group: httpapi.StorePairings},
		},
		CatchAll: "vendors",
		Admin:    "admin",
		Scheduled: []Scheduled{
			{Name: "reservation-expirer", Every: time.Minute, Exclusive: true},
		},
		// The table's stream feeds the router, which sends work to the
		// workers' queues; one line per worker.
		StreamRouter: "stream-router",
		Sweep:        5 * time.Minute,
		Workers: []Worker{
			// Retries a failed delivery by sending it again with a delay. One
			// attempt may take 20 s (webhook.RequestTimeout), so a batch of 10
			// needs more than the default minute.
			// Its concurrency is the largest: receivers are slow, and each
			// invocation mostly waits on one.
			{Name: "webhook-worker", QueueURLEnv: config.EnvQueueURLWebhookDeliveries, SendsTo: []string{"webhook-worker"}, Timeout: 5 * time.Minute, MaxConcurrency: 20},
			// Fans a replay out into deliveries.
			{Name: "replay-worker", QueueURLEnv: config.EnvQueueURLEventReplays, SendsTo: []string{"webhook-worker"}, BatchSize: 1},
			// Paces a job by sending it again after the vendor's window.
			{Name: "bulk-worker", QueueURLEnv: config.EnvQueueURLBulkOperations, SendsTo: []string{"bulk-worker"}, BatchSize: 1, Timeout: 5 * time.Minute},
			// Projects committed moku external orders into seller orders.
			{Name: "seller-order-worker", QueueURLEnv: config.EnvQueueURLSellerOrders},
			// Decides sync jobs item by item; continues a job after a failed
			// attempt by sending it again with a backoff.
			{Name: "sync-worker", QueueURLEnv: config.EnvQueueURLSyncJobs, SendsTo: []string{"sync-worker"}, BatchSize: 1, Timeout: 5 * time.Minute},
		},
		LogRetention: awslogs.RetentionDays_ONE_MONTH,
		// Each vendor's own window (60 reads, 12 writes a minute) is the
		// real limit; the stage's is a ceiling against floods.
		Throttle:       Throttle{Rate: 500, Burst: 1000},
		PublicThrottle: Throttle{Rate: 20, Burst: 40},
	}
}

// Functions lists every function the definition deploys, by folder name.
func (d Definition) Functions() []string {
	var fns []string
	for _, a := range d.API {
		fns = append(fns, a.Group.Name)
	}
	fns = append(fns, d.Admin)
	for _, sc := range d.Scheduled {
		fns = append(fns, sc.Name)
	}
	if d.StreamRouter != "" {
		fns = append(fns, d.StreamRouter)
	}
	for _, w := range d.Workers {
		fns = append(fns, w.Name)
	}
	return fns
}

// check validates the definition before any construct is made.
func (d Definition) check() error {
	if _, err := resources.For(d.Stage); err != nil {
		return err
	}
	fns := d.Functions()
	for i, fn := range fns {
		if fn == "" || slices.Contains(fns[:i], fn) {
			return fmt.Errorf("stack: function name %q is empty or used twice", fn)
		}
	}
	if d.Admin == "" {
		return errors.New("stack: no admin function")
	}
	if len(d.Workers) > 0 && d.StreamRouter == "" {
		return errors.New("stack: workers need a stream router to feed their queues")
	}
	workers := map[string]bool{}
	for _, w := range d.Workers {
		if w.QueueURLEnv == "" {
			return fmt.Errorf("stack: worker %s: no QueueURLEnv for the stream router", w.Name)
		}
		workers[w.Name] = true
	}
	for _, w := range d.Workers {
		for _, to := range w.SendsTo {
			if !workers[to] {
				return fmt.Errorf("stack: worker %s sends to %q, which is not a worker", w.Name, to)
			}
		}
	}
	for _, w := range d.Workers {
		if w.MaxConcurrency != 0 && (w.MaxConcurrency < 2 || w.MaxConcurrency > 1000) {
			return fmt.Errorf("stack: worker %s: maximum concurrency %d is outside SQS's 2..1000", w.Name, w.MaxConcurrency)
		}
	}
	if d.Throttle.Rate <= 0 || d.Throttle.Burst <= 0 || d.PublicThrottle.Rate <= 0 || d.PublicThrottle.Burst <= 0 {
		return errors.New("stack: the stage and public throttles need a positive rate and burst")
	}
	for _, sc := range d.Scheduled {
		if sc.Every < time.Minute || sc.Every%time.Minute != 0 {
			return fmt.Errorf("stack: scheduled %s: rate %v is not a whole number of minutes", sc.Name, sc.Every)
		}
	}
	if d.Sweep != 0 && (d.StreamRouter == "" || d.Sweep < time.Minute || d.Sweep%time.Minute != 0) {
		return fmt.Errorf("stack: sweep every %v needs a stream router and a whole number of minutes", d.Sweep)
	}
	if d.Domain != nil && (d.Domain.Name == "" || d.Domain.CertificateARN == "") {
		return errors.New("stack: a custom domain needs a name and a certificate ARN")
	}
	if d.Placeholder == "" {
		for _, fn := range fns {
			if _, err := os.Stat(d.zip(fn)); err != nil {
				return fmt.Errorf("stack: no package for function %s (%v): run make build", fn, err)
			}
		}
	}
	return nil
}

// sendsToItself tells whether fn is a worker that re-sends to its own queue.
func (d Definition) sendsToItself(fn string) bool {
	for _, w := range d.Workers {
		if w.Name == fn && slices.Contains(w.SendsTo, fn) {
			return true
		}
	}
	return false
}

// memory is fn's memory in MB.
func (d Definition) memory(fn string) int {
	for _, a := range d.API {
		if a.Group.Name == fn && a.Memory > 0 {
			return a.Memory
		}
	}
	return 512
}

// isAPI tells whether fn serves an operation group behind the API.
func (d Definition) isAPI(fn string) bool {
	return slices.ContainsFunc(d.API, func(a API) bool { return a.Group.Name == fn })
}

// exclusive tells whether fn is a scheduled function that must not overlap
// itself.
func (d Definition) exclusive(fn string) bool {
	for _, sc := range d.Scheduled {
		if sc.Name == fn && sc.Exclusive {
			return true
		}
	}
	return false
}

func (d Definition) groups() []httpapi.Group {
	var gs []httpapi.Group
	for _, a := range d.API {
		gs = append(gs, a.Group)
	}
	return gs
}

func (d Definition) zip(fn string) string { return filepath.Join(d.Assets, fn+".zip") }

func (d Definition) code(fn string) awslambda.Code {
	if d.Placeholder != "" {
		return awslambda.Code_FromAsset(jsii.String(d.Placeholder), nil)
	}
	return awslambda.Code_FromAsset(jsii.String(d.zip(fn)), nil)
}

func (d Definition) removal() awscdk.RemovalPolicy {
	if d.Retain {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}

// Stack is the synthesized stack and the parts tests and outputs look at.
type Stack struct {
	awscdk.Stack
	Names  resources.Names
	Routes []Route
	Table  awsdynamodb.Table
	Bucket awss3.Bucket
	// MediaCDN serves the bucket; MediaBaseURL is its address.
	MediaCDN     awscloudfront.Distribution
	MediaBaseURL string
	API          awsapigatewayv2.HttpApi
	Stage        awsapigatewayv2.HttpStage
	Functions    map[string]awslambda.Function
	// Targets are what each function's triggers invoke: its live alias
	// when the stage deploys by canary, else the function.
	Targets    map[string]awslambda.IFunction
	deploys    awscodedeploy.LambdaApplication
	deployRole awsiam.Role
	// BaseURL is the SELLERAPI_BASE_URL every function gets.
	BaseURL string
	obs     *observer
}

// New adds the stage's stack to scope.
func New(scope constructs.Construct, d Definition, props *awscdk.StackProps) (*Stack, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	routes, err := Routes(d.groups(), d.CatchAll)
	if err != nil {
		return nil, err
	}
	names, _ := resources.For(d.Stage)
	if props == nil {
		props = &awscdk.StackProps{}
	}
	if props.StackName == nil {
		props.StackName = jsii.String(names.Stack())
	}
	if props.Description == nil {
		props.Description = jsii.String("Seller Platform API, stage " + d.Stage)
	}
	st := awscdk.NewStack(scope, jsii.String(names.Stack()), props)
	awscdk.Tags_Of(st).Add(jsii.String("service"), jsii.String(resources.Service), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(d.Stage), nil)
	s := &Stack{Stack: st, Names: names, Routes: routes, Functions: map[string]awslambda.Function{}, Targets: map[string]awslambda.IFunction{}}

	s.Table = awsdynamodb.NewTable(st, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:           jsii.String(names.Table()),
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Stream:              awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		TimeToLiveAttribute: jsii.String("ttl"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(d.Retain),
		RemovalPolicy:      d.removal(),
	})

	// Media is content-addressed (an object is never overwritten), so
	// versioning would only keep deleted objects around. Only the functions
	// whose API entry says Media may use it (grantMedia).
	s.Bucket = awss3.NewBucket(st, jsii.String("Media"), &awss3.BucketProps{
		BucketName:        jsii.String(names.MediaBucket(*awscdk.Aws_ACCOUNT_ID(), *awscdk.Aws_REGION())),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     d.removal(),
	})

	if d.MediaEdge {
		s.newMediaEdge(d)
	}

	topic := awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{
		TopicName:   jsii.String(names.AlarmTopic()),
		DisplayName: jsii.String("sellerapi " + d.Stage + " alarms"),
	})
	s.obs = newObserver(s, awscloudwatchactions.NewSnsAction(topic))

	s.newAPI(d)
	s.obs.apiAlarms()

	env := map[string]*string{
		config.EnvStore:    jsii.String(config.StoreDynamoDB),
		config.EnvTable:    s.Table.TableName(),
		config.EnvBaseURL:  jsii.String(s.BaseURL),
		config.EnvLogLevel: jsii.String("info"),
	}
	fn := func(name, description string, timeout time.Duration, extra map[string]*string, tableAccess bool) awslambda.Function {
		f := s.function(d, name, description, timeout, env, extra)
		if tableAccess {
			f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("TableItems"),
				Actions:   jsii.Strings(TableActions...),
				Resources: &[]*string{s.Table.TableArn()},
			}))
		}
		return f
	}

	for _, a := range d.API {
		var extra map[string]*string
		if a.Media {
			extra = map[string]*string{config.EnvMediaBucket: s.Bucket.BucketName()}
			if d.MediaEdge {
				extra[config.EnvMediaBaseURL] = jsii.String(s.MediaBaseURL)
			}
		}
		f := fn(a.Group.Name, "Seller Platform API: the "+a.Group.Name+" operation group", 15*time.Second, extra, true)
		if a.Media {
			s.grantMedia(f)
		}
	}
	s.route(d, routes)

	admin := fn(d.Admin, "Seller Platform API: vendor and token administration, invoked with IAM", 30*time.Second, nil, true)

	for _, sc := range d.Scheduled {
		timeout := sc.Timeout
		if timeout == 0 {
			timeout = time.Minute
		}
		fn(sc.Name, "Seller Platform API: "+sc.Name+", every "+sc.Every.String(), timeout, nil, true)
		// A missed run is made up by the next one, so a failed invocation
		// is retried only briefly.
		awsevents.NewRule(st, jsii.String(sc.Name+"Schedule"), &awsevents.RuleProps{
			RuleName:    jsii.String(s.Names.Function(sc.Name)),
			Description: jsii.String("Runs " + s.Names.Function(sc.Name) + " every " + sc.Every.String()),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(sc.Every.Minutes()))),
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Targets[sc.Name], &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(sc.Every.Seconds())),
			})},
		})
	}

	if d.StreamRouter != "" {
		s.workers(d, fn)
	}

	s.obs.finish()

	out := func(id, desc string, v *string) {
		awscdk.NewCfnOutput(st, jsii.String(id), &awscdk.CfnOutputProps{Description: jsii.String(desc), Value: v})
	}
	out("BaseUrl", "The API's base URL (SELLERAPI_BASE_URL)", jsii.String(s.BaseURL))
	out("TableName", "The DynamoDB table", s.Table.TableName())
	out("MediaBucketName", "The media bucket", s.Bucket.BucketName())
	out("AdminFunctionName", "aws lambda invoke --function-name this", admin.FunctionName())
	out("AlarmTopicArn", "Subscribe to receive the alarms", topic.TopicArn())
	return s, nil
}

// StreamFilter is the stream-router mapping's event filter: inserts of the
// items whose insertion starts work (app.Routed, which the router applies
// to itself too), so that the table's other changes, most of them, do not
// invoke the router.
func StreamFilter() *map[string]any {
	var prefixes []any
	for _, p := range app.Routed() {
		prefixes = append(prefixes, map[string]any{"prefix": p})
	}
	return awslambda.FilterCriteria_Filter(&map[string]any{
		"eventName": []any{"INSERT"},
		"dynamodb":  map[string]any{"Keys": map[string]any{"sk": map[string]any{"S": prefixes}}},
	})
}

// MediaActions are what the blob store's S3 adapter needs on the media
// objects: PutObject, and GetObject for GetObject and HeadObject.
// ListBucket on the bucket lets a missing object answer 404 rather than 403.
var MediaActions = []string{"s3:GetObject", "s3:PutObject"}

func (s *Stack) grantMedia(f awslambda.Function) {
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("MediaObjects"),
		Actions:   jsii.Strings(MediaActions...),
		Resources: &[]*string{s.Bucket.ArnForObjects(jsii.String("media/*"))},
	}))
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("MediaMissingIs404"),
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: &[]*string{s.Bucket.BucketArn()},
	}))
}

// function makes a Lambda with its own role (no managed policies: it may
// write to its own log group and nothing else until granted), its own log
// group with retention, and an alarm on its errors.
func (s *Stack) function(d Definition, name, description string, timeout time.Duration, env, extra map[string]*string) awslambda.Function {
	st := s.Stack
	id := func(suffix string) *string { return jsii.String(name + suffix) }
	logs := awslogs.NewLogGroup(st, id("Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(s.Names.LogGroup(name)),
		Retention:     d.LogRetention,
		RemovalPolicy: d.removal(),
	})
	role := awsiam.NewRole(st, id("Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Role of " + s.Names.Function(name)),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("OwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	// Lambda stops a chain of invocations that pass one message's trace
	// on through the same queue after about 16 hops and drops the message.
	// A worker that re-sends to its own queue (retries, the 15-minute hops
	// of a long wait) does exactly that by design, bounded by its own
	// attempt caps and ~72 h window: for those the guard would lose work.
	loop := awslambda.RecursiveLoop_TERMINATE
	if d.sendsToItself(name) {
		loop = awslambda.RecursiveLoop_ALLOW
	}
	props := &awslambda.FunctionProps{
		FunctionName:  jsii.String(s.Names.Function(name)),
		Description:   jsii.String(description),
		Runtime:       awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:  awslambda.Architecture_ARM_64(),
		Handler:       jsii.String("bootstrap"),
		Code:          d.code(name),
		MemorySize:    jsii.Number(float64(d.memory(name))),
		Timeout:       awscdk.Duration_Seconds(jsii.Number(timeout.Seconds())),
		Role:          role,
		LogGroup:      logs,
		Environment:   &vars,
		RecursiveLoop: loop,
		// The service logs JSON (log/slog) with level, msg, request id and
		// vendor id; Lambda's JSON format keeps it structured, filters it by
		// level and writes its own platform lines as JSON beside it.
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
		Tracing:               awslambda.Tracing_ACTIVE,
	}
	if d.exclusive(name) {
		props.ReservedConcurrentExecutions = jsii.Number(1)
	}
	f := awslambda.NewFunction(st, id("Function"), props)
	errorsAlarm := s.observeFunction(name, f, logs)
	s.Targets[name] = f
	if d.Canary && name != d.Admin {
		s.Targets[name] = s.canary(name, f, errorsAlarm, d.isAPI(name))
	}
	s.Functions[name] = f
	return f
}

// workers adds the stream router and one queue, dead-letter queue and
// function per worker. The router reads the table's stream (partial batch
// responses, bisect on error, bounded retries, failed batches described in
// its own dead-letter queue), reads items and may send to every worker's
// queue; each worker consumes its queue with partial batch responses,
// reads and writes items, and sends only to the queues it names.
func (s *Stack) workers(d Definition, fn func(string, string, time.Duration, map[string]*string, bool) awslambda.Function) {
	st := s.Stack
	newDLQ := func(name string) awssqs.Queue {
		q := awssqs.NewQueue(st, jsii.String(name+"DLQ"), &awssqs.QueueProps{
			QueueName:       jsii.String(s.Names.DeadLetterQueue(name)),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
		})
		s.observeDeadLetters(name, q)
		return q
	}

	// Queues first, so that a worker can be told another's URL.
	queueURLs := map[string]*string{}
	queues := map[string]awssqs.Queue{}
	for _, w := range d.Workers {
		timeout, receives := w.Timeout, w.MaxReceiveCount
		if timeout == 0 {
			timeout = time.Minute
		}
		if receives == 0 {
			receives = 5
		}
		dlq := newDLQ(w.Name)
		q := awssqs.NewQueue(st, jsii.String(w.Name+"Queue"), &awssqs.QueueProps{
			QueueName:         jsii.String(s.Names.Queue(w.Name)),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * timeout.Seconds())),
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(receives))},
		})
		queueURLs[w.QueueURLEnv] = q.QueueUrl()
		queues[w.Name] = q
		oldest := w.OldestAlarm
		if oldest == 0 {
			oldest = 15 * time.Minute
		}
		s.observeQueue(w.Name, q, oldest.Seconds())
	}
	for _, w := range d.Workers {
		timeout, batch, concurrency := w.Timeout, w.BatchSize, w.MaxConcurrency
		if timeout == 0 {
			timeout = time.Minute
		}
		if batch == 0 {
			batch = 10
		}
		if concurrency == 0 {
			concurrency = 5
		}
		f := fn(w.Name, "Seller Platform API: the "+w.Name, timeout, queueURLs, true)
		for _, to := range w.SendsTo {
			queues[to].GrantSendMessages(f)
		}
		s.Targets[w.Name].AddEventSource(awslambdaeventsources.NewSqsEventSource(queues[w.Name], &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(float64(batch)),
			ReportBatchItemFailures: jsii.Bool(true),
			MaxConcurrency:          jsii.Number(float64(concurrency)),
		}))
	}

	router := fn(d.StreamRouter, "Seller Platform API: sends the table's new events and jobs to the workers' queues", time.Minute, queueURLs, false)
	router.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("TableReadsAndMarkers"),
		Actions:   jsii.Strings(RouterActions...),
		Resources: &[]*string{s.Table.TableArn()},
	}))
	for _, w := range d.Workers {
		queues[w.Name].GrantSendMessages(router)
	}
	s.observeRouter(d.StreamRouter, router)
	failed := newDLQ(d.StreamRouter)
	s.Targets[d.StreamRouter].AddEventSource(awslambdaeventsources.NewDynamoEventSource(s.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(100),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(5),
		MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(24)),
		ReportBatchItemFailures: jsii.Bool(true),
		OnFailure:               awslambdaeventsources.NewSqsDlq(failed),
		Filters:                 &[]*map[string]any{StreamFilter()},
	}))
	if d.Sweep > 0 {
		// The mapping gives up on a change after its retries or a day; the
		// sweep routes it later (pipeline.Sweep). Sweeps may overlap: a
		// change routed twice does its work once.
		awsevents.NewRule(st, jsii.String("StreamSweepSchedule"), &awsevents.RuleProps{
			RuleName:    jsii.String(s.Names.Function(d.StreamRouter) + "-sweep"),
			Description: jsii.String("Asks " + s.Names.Function(d.StreamRouter) + " every " + d.Sweep.String() + " to route what its stream did not"),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(d.Sweep.Minutes()))),
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Targets[d.StreamRouter], &awseventstargets.LambdaFunctionProps{
				Event:         awsevents.RuleTargetInput_FromObject(map[string]any{"sweep": map[string]any{}}),
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(d.Sweep.Seconds())),
			})},
		})
	}
}
