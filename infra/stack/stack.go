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
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
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
// webhook subscriptions, and the query of its delivery slots and lane
// marks when an event fans out beyond them) that decide where changes go,
// and the markers of changes not yet routed (pipeline.Pending).
var TableReadActions = []string{"dynamodb:BatchGetItem", "dynamodb:GetItem", "dynamodb:Query"}

// RouterActions are the stream router's table actions: its reads, and the
// deletion of a change's marker once the change is routed. It writes
// nothing else.
var RouterActions = append(slices.Clone(TableReadActions), "dynamodb:DeleteItem")

// Stack is the synthesized stack and the parts tests and outputs look at.
type Stack struct {
	awscdk.Stack
	Names  resources.Names
	Routes []Route
	Table  awsdynamodb.Table
	Bucket awss3.Bucket
	// Key is the stage's customer-managed KMS key (keys.go): it encrypts
	// the table; KeyARN is what the functions that envelope-encrypt
	// secrets are told.
	Key awskms.Key
	// OpsStack (sellerapi-<stage>-ops, in the stage's region) holds what
	// guards the stage from outside it: the cost guards (cost.go) and the
	// backup plan and its vault (recovery.go), when the definition has one;
	// BackupCopyStack, in the copy's region, the copy vault. Apart, they
	// leave the stage's stack room under CloudFormation's 500 resources.
	OpsStack        awscdk.Stack
	BackupPlan      awsbackup.BackupPlan
	BackupVault     awsbackup.BackupVault
	BackupCopyStack awscdk.Stack
	// DeployHook is the function every canary's BeforeAllowTraffic hook
	// runs (canary.go), when the stage deploys by canary.
	DeployHook awslambda.Function
	// MediaCDN serves the bucket; MediaBaseURL is its address.
	MediaCDN     awscloudfront.Distribution
	MediaBaseURL string
	API          awsapigatewayv2.HttpApi
	Stage        awsapigatewayv2.HttpStage
	Functions    map[string]awslambda.Function
	// Targets are what each function's triggers invoke: its live alias
	// when the stage deploys by canary, else the function.
	Targets      map[string]awslambda.IFunction
	deploys      awscodedeploy.LambdaApplication
	deployGroups []deployGroup
	deployRole   awsiam.Role
	// BaseURL is the SELLERAPI_BASE_URL every function gets.
	BaseURL string
	// The edge, when the definition has one (edge.go): its stack in
	// EdgeRegion holding the web ACL, the distribution in front of the
	// API, and the secret it sends the origin.
	EdgeStack     awscdk.Stack
	WebACL        awswafv2.CfnWebACL
	APICDN        awscloudfront.Distribution
	EdgeSecret    awssecretsmanager.Secret
	edgeSecretRef *string
	obs           *observer
	// deliverers are the functions that make webhook deliveries: they may
	// assume the delivery role (delivery.go).
	deliverers []awslambda.Function
	// deliveryRoleARN is the delivery role's, once made.
	deliveryRoleARN *string
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
	if d.Edge {
		props.CrossRegionReferences = jsii.Bool(true)
	}
	// A prod stack cannot be deleted until its protection is turned off.
	props.TerminationProtection = jsii.Bool(d.Stage == "prod")
	st := awscdk.NewStack(scope, jsii.String(names.Stack()), props)
	if d.Edge && *awscdk.Token_IsUnresolved(st.Region()) {
		return nil, fmt.Errorf("stack: stage %s has an edge, whose web ACL is made in %s and referenced across regions: the stack needs an explicit region (run with AWS credentials, or -c region=...)", d.Stage, EdgeRegion)
	}
	awscdk.Tags_Of(st).Add(jsii.String("service"), jsii.String(resources.Service), nil)
	awscdk.Tags_Of(st).Add(jsii.String("stage"), jsii.String(d.Stage), nil)
	s := &Stack{Stack: st, Names: names, Routes: routes, Functions: map[string]awslambda.Function{}, Targets: map[string]awslambda.IFunction{}}
	if d.Edge {
		if err := s.newEdgeACL(scope, d, st.Account()); err != nil {
			return nil, err
		}
		awscdk.Tags_Of(s.EdgeStack).Add(jsii.String("service"), jsii.String(resources.Service), nil)
		awscdk.Tags_Of(s.EdgeStack).Add(jsii.String("stage"), jsii.String(d.Stage), nil)
	}

	s.newKey(d)
	s.newStorage(d)

	if d.MediaEdge {
		s.newMediaEdge(d)
	}

	topic := awssns.NewTopic(st, jsii.String("Alarms"), &awssns.TopicProps{
		TopicName:   jsii.String(names.AlarmTopic()),
		DisplayName: jsii.String("sellerapi " + d.Stage + " alarms"),
	})
	s.obs = newObserver(s, awscloudwatchactions.NewSnsAction(topic))
	if d.Cost != nil || d.Backup != nil {
		opsName := names.Stack() + "-ops"
		s.OpsStack = awscdk.NewStack(scope, jsii.String(opsName), &awscdk.StackProps{
			StackName:             jsii.String(opsName),
			Description:           jsii.String("Seller Platform API, stage " + d.Stage + ": its cost guards and backups"),
			Env:                   props.Env,
			TerminationProtection: props.TerminationProtection,
		})
		awscdk.Tags_Of(s.OpsStack).Add(jsii.String("service"), jsii.String(resources.Service), nil)
		awscdk.Tags_Of(s.OpsStack).Add(jsii.String("stage"), jsii.String(d.Stage), nil)
	}
	if d.Cost != nil {
		s.costGuards(d, topic)
	}
	if d.Backup != nil {
		if err := s.newBackups(scope, d); err != nil {
			return nil, err
		}
	}

	s.newAPI(d)
	if d.Edge {
		s.newAPIEdge(d)
	}
	s.obs.apiAlarms()

	env := map[string]*string{
		config.EnvStore:    jsii.String(config.StoreDynamoDB),
		config.EnvTable:    s.Table.TableName(),
		config.EnvBaseURL:  jsii.String(s.BaseURL),
		config.EnvLogLevel: jsii.String("info"),
		// The request and delivery lines embed their metrics (observe.go).
		config.EnvMetricsNamespace: jsii.String(s.obs.namespace),
	}
	fn := func(name, description string, timeout time.Duration, extra map[string]*string, tableAccess bool) awslambda.Function {
		f := s.function(d, name, description, timeout, env, extra)
		if tableAccess {
			f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("TableItems"),
				Actions:   jsii.Strings(TableActions...),
				Resources: &[]*string{s.Table.TableArn()},
			}))
			s.grantTableKey(f)
		}
		return f
	}

	for _, a := range d.API {
		extra := map[string]*string{}
		if a.Media {
			extra[config.EnvMediaBucket] = s.Bucket.BucketName()
			if d.MediaEdge {
				extra[config.EnvMediaBaseURL] = jsii.String(s.MediaBaseURL)
			}
		}
		if d.Edge {
			extra[config.EnvEdgeSecret] = s.edgeSecretRef
		}
		f := fn(a.Group.Name, "Seller Platform API: the "+a.Group.Name+" operation group", 15*time.Second, extra, true)
		s.grantSecretKey(f)
		if a.Media {
			s.grantMedia(f)
		}
		if a.Delivers {
			s.deliverers = append(s.deliverers, f)
		}
	}
	s.route(d, routes)

	admin := fn(d.Admin, "Seller Platform API: vendor and token administration, invoked with IAM", 30*time.Second, nil, true)
	// The admin rotates the cursor key, sealed under the stage key.
	s.grantSecretKey(admin)

	s.scheduled(d, fn)

	if d.StreamRouter != "" {
		s.workers(d, fn)
	}
	s.deliveryRole(s.deliverers)
	if err := s.deployHook(d); err != nil {
		return nil, err
	}

	s.obs.finish()

	s.outputs(admin, topic)
	return s, nil
}

// newStorage adds the table and the media bucket.
func (s *Stack) newStorage(d Definition) {
	maxReads, maxWrites := d.TableMaxThroughput()
	s.Table = awsdynamodb.NewTable(s.Stack, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:            jsii.String(s.Names.Table()),
		PartitionKey:         &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:              &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:          awsdynamodb.BillingMode_PAY_PER_REQUEST,
		MaxReadRequestUnits:  jsii.Number(float64(maxReads)),
		MaxWriteRequestUnits: jsii.Number(float64(maxWrites)),
		Encryption:           awsdynamodb.TableEncryption_CUSTOMER_MANAGED,
		EncryptionKey:        s.Key,
		Stream:               awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		TimeToLiveAttribute:  jsii.String("ttl"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(d.Retain),
		RemovalPolicy:      d.removal(),
	})

	noncurrentDays := 35
	if d.Backup != nil {
		noncurrentDays = d.Backup.RetentionDays
	}
	// Media is content-addressed (an object is never overwritten), so
	// versioning keeps only deleted objects around: AWS Backup needs it,
	// and a deleted object's version is kept as long as the backups are.
	// SSE-S3, not the stage key: images are public through the edge, and
	// SSE-KMS would cost a KMS request per uncached read (docs/decisions.md,
	// "Keys"). Only the functions whose API entry says Media may use it
	// (grantMedia).
	s.Bucket = awss3.NewBucket(s.Stack, jsii.String("Media"), &awss3.BucketProps{
		BucketName:        jsii.String(s.Names.MediaBucket(*awscdk.Aws_ACCOUNT_ID(), *awscdk.Aws_REGION())),
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(true),
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:                          jsii.String("expire-deleted-media"),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(float64(noncurrentDays))),
		}},
		RemovalPolicy: d.removal(),
	})
}

// scheduled adds each scheduled function and its EventBridge rule.
func (s *Stack) scheduled(d Definition, fn functionMaker) {
	for _, sc := range d.Scheduled {
		timeout := sc.Timeout
		if timeout == 0 {
			timeout = time.Minute
		}
		fn(sc.Name, "Seller Platform API: "+sc.Name+", every "+sc.Every.String(), timeout, nil, true)
		// A missed run is made up by the next one, so a failed invocation
		// is retried only briefly.
		awsevents.NewRule(s.Stack, jsii.String(sc.Name+"Schedule"), &awsevents.RuleProps{
			RuleName:    jsii.String(s.Names.Function(sc.Name)),
			Description: jsii.String("Runs " + s.Names.Function(sc.Name) + " every " + sc.Every.String()),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(sc.Every.Minutes()))),
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Targets[sc.Name], &awseventstargets.LambdaFunctionProps{
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(sc.Every.Seconds())),
			})},
		})
	}
}

// outputs adds the stack's outputs.
func (s *Stack) outputs(admin awslambda.Function, topic awssns.Topic) {
	out := func(id, desc string, v *string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(id), &awscdk.CfnOutputProps{Description: jsii.String(desc), Value: v})
	}
	out("BaseUrl", "The API's base URL (SELLERAPI_BASE_URL)", jsii.String(s.BaseURL))
	out("TableName", "The DynamoDB table", s.Table.TableName())
	out("MediaBucketName", "The media bucket", s.Bucket.BucketName())
	out("AdminFunctionName", "aws lambda invoke --function-name this", admin.FunctionName())
	out("AlarmTopicArn", "Subscribe to receive the alarms", topic.TopicArn())
	if s.deliveryRoleARN != nil {
		out("WebhookDeliveryRoleArn", "The role sellers' EventBridge buses and SQS queues admit (docs/operations.md)", s.deliveryRoleARN)
	}
}

// functionMaker makes a function with the stage's environment, extra
// variables and, when asked, access to the table's items.
type functionMaker = func(name, description string, timeout time.Duration, extra map[string]*string, tableAccess bool) awslambda.Function
