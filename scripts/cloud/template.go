package main

// Reading the synthesized CloudFormation template: the resources the runner
// plays (table, bucket, queues, functions, the HTTP API's routes, event
// source mappings, schedules), each checked property by property. A
// property the runner does not play is an error naming it, unless it is
// listed here as having no local effect (tags, encryption, IAM, alarms).

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Template is the parsed template: what to create and what to run.
type Template struct {
	Path       string
	Dir        string // the cloud assembly directory (assets are relative to it)
	Table      Table
	Bucket     Bucket
	Queues     map[string]*Queue // by logical id
	Functions  map[string]*Function
	Routes     []Route
	Stream     *StreamMapping
	QueueFeeds []QueueMapping
	Schedules  []Schedule

	resources map[string]resource
}

// Table is the DynamoDB table.
type Table struct {
	Logical, Name, StreamView, TTLAttribute string
	Keys                                    []KeyAttr
}

// KeyAttr is one key attribute of the table.
type KeyAttr struct{ Name, Type, KeyType string }

// Bucket is the media bucket.
type Bucket struct{ Logical, Name string }

// Queue is an SQS queue with its redrive policy.
type Queue struct {
	Logical, Name     string
	VisibilityTimeout time.Duration
	Retention         time.Duration
	DeadLetter        string // logical id of the dead-letter queue, if any
	MaxReceiveCount   int
	URL               string // set once created
}

// Function is a Lambda function.
type Function struct {
	Logical, Name string
	Timeout       time.Duration
	Memory        int
	Asset         string // path of the code asset in the cloud assembly
	// Reserved caps the function's concurrent invocations (0: no cap);
	// one more is throttled, as Lambda does.
	Reserved int
	env      map[string]any // unresolved
	Env      map[string]string
}

// Route is an HTTP API route and the function its integration invokes.
type Route struct {
	Key, Method, Path string
	Function          string // logical id
}

// StreamMapping is the table stream's event source mapping.
type StreamMapping struct {
	Function         string
	BatchSize        int
	Bisect           bool
	MaxRetries       int // -1: until the records expire
	MaxRecordAge     time.Duration
	OnFailure        string // logical id of a queue, or ""
	PartialBatch     bool
	StartingPosition string
	BatchWindow      time.Duration
	Filters          Filters
	// Parallel is how many batches of a shard are processed at once
	// (ParallelizationFactor, 1..10): each record goes to the lane its keys
	// hash to, so an item's records stay in order.
	Parallel int
}

// QueueMapping is an SQS event source mapping.
type QueueMapping struct {
	Function, Queue string
	BatchSize       int
	MaxConcurrency  int
	PartialBatch    bool
	BatchWindow     time.Duration
	Filters         Filters
}

// Schedule is an EventBridge rule invoking a function on a fixed rate.
type Schedule struct {
	Name, Function string
	Every          time.Duration
	Retries        int
	MaxEventAge    time.Duration
	// Input, when set, is the target's constant input, sent instead of the
	// scheduled event.
	Input json.RawMessage
}

type resource struct {
	Type       string
	Properties map[string]any
	Metadata   map[string]any
}

// Local values of the pseudo parameters.
const (
	localAccount = "000000000000"
	localAPIID   = "local"
)

// played lists, per resource type the runner knows, the properties it
// plays (nil: the whole resource has no effect on one machine: IAM, logs,
// alarms, permissions); ignored, the properties that have no effect on one
// machine. Any other type or property is an error.
var played = map[string][]string{
	"AWS::DynamoDB::Table":            {"TableName", "KeySchema", "AttributeDefinitions", "BillingMode", "StreamSpecification", "TimeToLiveSpecification"},
	"AWS::S3::Bucket":                 {"BucketName"},
	"AWS::SQS::Queue":                 {"QueueName", "VisibilityTimeout", "RedrivePolicy", "MessageRetentionPeriod"},
	"AWS::Lambda::Function":           {"FunctionName", "Code", "Handler", "Runtime", "Timeout", "MemorySize", "Environment", "Architectures", "ReservedConcurrentExecutions"},
	"AWS::ApiGatewayV2::Api":          {"Name", "ProtocolType", "DisableExecuteApiEndpoint"},
	"AWS::ApiGatewayV2::Stage":        {"ApiId", "StageName", "AutoDeploy"},
	"AWS::ApiGatewayV2::Integration":  {"ApiId", "IntegrationType", "IntegrationUri", "PayloadFormatVersion"},
	"AWS::ApiGatewayV2::Route":        {"ApiId", "RouteKey", "Target", "AuthorizationType"},
	"AWS::Lambda::EventSourceMapping": {"FunctionName", "EventSourceArn", "BatchSize", "FunctionResponseTypes", "BisectBatchOnFunctionError", "DestinationConfig", "MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "StartingPosition", "ScalingConfig", "MaximumBatchingWindowInSeconds", "Enabled", "FilterCriteria", "ParallelizationFactor"},
	"AWS::Events::Rule":               {"Name", "ScheduleExpression", "State", "Targets"},
	"AWS::IAM::Role":                  nil,
	"AWS::IAM::Policy":                nil,
	"AWS::Logs::LogGroup":             nil,
	"AWS::CloudWatch::Alarm":          nil,
	"AWS::SNS::Topic":                 nil,
	"AWS::SQS::QueuePolicy":           nil,
	"AWS::S3::BucketPolicy":           nil,
	"AWS::Lambda::Permission":         nil,
	"AWS::CDK::Metadata":              nil,
	"AWS::ApiGatewayV2::DomainName":   nil,
	"AWS::ApiGatewayV2::ApiMapping":   nil,
	"Custom::S3AutoDeleteObjects":     nil,
	"AWS::SQS::QueueInlinePolicy":     nil,
	// Metrics, dashboards and CloudFront's access to the bucket have no
	// effect on one machine (stage local deploys no CloudFront edge).
	"AWS::CloudWatch::Dashboard":           nil,
	"AWS::Logs::MetricFilter":              nil,
	"AWS::CloudFront::OriginAccessControl": nil,
	// The stage key has no counterpart here: the table is DynamoDB
	// Local's, and the functions are not told the key (ResolveEnv), so
	// they use their local key source.
	"AWS::KMS::Key":   nil,
	"AWS::KMS::Alias": nil,
}

var ignored = map[string][]string{
	// The throughput ceiling guards the bill; versions and their expiry
	// back the bucket up.
	"AWS::DynamoDB::Table": {"PointInTimeRecoverySpecification", "DeletionProtectionEnabled", "Tags", "SSESpecification", "OnDemandThroughput"},
	"AWS::S3::Bucket":      {"BucketEncryption", "OwnershipControls", "PublicAccessBlockConfiguration", "Tags", "VersioningConfiguration", "LifecycleConfiguration"},
	"AWS::SQS::Queue":      {"SqsManagedSseEnabled", "Tags"},
	// No X-Ray here; Lambda's loop guard never trips on one machine.
	"AWS::Lambda::Function":  {"Description", "LoggingConfig", "RecursiveLoop", "Role", "Tags", "TracingConfig"},
	"AWS::ApiGatewayV2::Api": {"Description", "Tags"},
	// The stage's throttles are a ceiling against floods, and its access
	// log goes to CloudWatch; the functions' own logs show every request.
	"AWS::ApiGatewayV2::Stage":        {"Tags", "DefaultRouteSettings", "RouteSettings", "AccessLogSettings"},
	"AWS::ApiGatewayV2::Integration":  {},
	"AWS::ApiGatewayV2::Route":        {},
	"AWS::Lambda::EventSourceMapping": {"Tags"},
	"AWS::Events::Rule":               {"Description", "Tags"},
}

// LoadTemplate reads and checks the template at path.
func LoadTemplate(path string) (*Template, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Resources map[string]resource
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	t := &Template{Path: path, Dir: filepath.Dir(path), Queues: map[string]*Queue{}, Functions: map[string]*Function{}, resources: doc.Resources}
	if err := t.parse(); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	return t, nil
}

func (t *Template) parse() error {
	ids := slices.Sorted(maps.Keys(t.resources))
	for _, id := range ids {
		r := t.resources[id]
		known, ok := played[r.Type]
		if !ok {
			return fmt.Errorf("resource %s: type %s is not played by the cloud runner", id, r.Type)
		}
		if known == nil {
			continue
		}
		for p := range r.Properties {
			if !slices.Contains(known, p) && !slices.Contains(ignored[r.Type], p) {
				return fmt.Errorf("resource %s (%s): property %s is not understood by the cloud runner", id, r.Type, p)
			}
		}
	}
	integrations := map[string]string{} // integration → function
	var tables, buckets, apis int
	for _, id := range ids {
		r := t.resources[id]
		p := props(r.Properties)
		var err error
		switch r.Type {
		case "AWS::DynamoDB::Table":
			tables++
			err = t.table(id, p)
		case "AWS::S3::Bucket":
			buckets++
			t.Bucket.Logical = id
			t.Bucket.Name, err = t.str(p["BucketName"])
		case "AWS::SQS::Queue":
			err = t.queue(id, p)
		case "AWS::Lambda::Function":
			err = t.function(id, r)
		case "AWS::ApiGatewayV2::Api":
			apis++
			if p["ProtocolType"] != "HTTP" {
				err = fmt.Errorf("ProtocolType %v: only HTTP APIs are played", p["ProtocolType"])
			}
		case "AWS::ApiGatewayV2::Stage":
			if p["StageName"] != "$default" || p["AutoDeploy"] != true {
				err = fmt.Errorf("stage %v (AutoDeploy %v): only the auto-deployed $default stage is played", p["StageName"], p["AutoDeploy"])
			}
		case "AWS::ApiGatewayV2::Integration":
			if p["IntegrationType"] != "AWS_PROXY" || p["PayloadFormatVersion"] != "2.0" {
				err = fmt.Errorf("integration %v with payload %v: only AWS_PROXY Lambda integrations with payload format 2.0 are played", p["IntegrationType"], p["PayloadFormatVersion"])
				break
			}
			integrations[id], err = t.target(p["IntegrationUri"], "AWS::Lambda::Function")
		case "AWS::Lambda::EventSourceMapping":
			err = t.mapping(id, p)
		case "AWS::Events::Rule":
			err = t.rule(id, p)
		}
		if err != nil {
			return fmt.Errorf("resource %s (%s): %w", id, r.Type, err)
		}
	}
	if tables != 1 || buckets != 1 || apis != 1 {
		return fmt.Errorf("the runner plays exactly one table, one bucket and one HTTP API; the template has %d, %d and %d", tables, buckets, apis)
	}
	for _, id := range ids {
		r := t.resources[id]
		if r.Type != "AWS::ApiGatewayV2::Route" {
			continue
		}
		p := props(r.Properties)
		if a, ok := p["AuthorizationType"]; ok && a != "NONE" {
			return fmt.Errorf("resource %s: route authorization %v is not played", id, a)
		}
		key, _ := p["RouteKey"].(string)
		target, err := t.str(p["Target"])
		if err != nil {
			return fmt.Errorf("resource %s: target: %w", id, err)
		}
		integ, ok := strings.CutPrefix(target, "integrations/")
		if !ok || integrations[integ] == "" {
			return fmt.Errorf("resource %s: target %q is not one of the template's Lambda integrations", id, target)
		}
		rt := Route{Key: key, Function: integrations[integ]}
		if key != "$default" {
			m, path, ok := strings.Cut(key, " ")
			if !ok || !strings.HasPrefix(path, "/") {
				return fmt.Errorf("resource %s: route key %q", id, key)
			}
			if strings.Contains(path, "+}") {
				return fmt.Errorf("resource %s: greedy path variable in %q is not played", id, key)
			}
			rt.Method, rt.Path = m, path
		}
		t.Routes = append(t.Routes, rt)
	}
	for _, q := range t.Queues {
		if q.DeadLetter != "" && t.Queues[q.DeadLetter] == nil {
			return fmt.Errorf("queue %s: dead-letter target %s is not a queue of the template", q.Logical, q.DeadLetter)
		}
	}
	return nil
}

func props(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
