package main

// Reading the synthesized CloudFormation template: the resources the runner
// plays (table, bucket, queues, functions, the HTTP API's routes, event
// source mappings, schedules), each checked property by property. A
// property the runner does not play is an error naming it, unless it is
// listed here as having no local effect (tags, encryption, IAM, alarms).

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
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
	"AWS::Lambda::EventSourceMapping": {"FunctionName", "EventSourceArn", "BatchSize", "FunctionResponseTypes", "BisectBatchOnFunctionError", "DestinationConfig", "MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "StartingPosition", "ScalingConfig", "MaximumBatchingWindowInSeconds", "Enabled", "FilterCriteria"},
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
}

var ignored = map[string][]string{
	"AWS::DynamoDB::Table": {"PointInTimeRecoverySpecification", "DeletionProtectionEnabled", "Tags", "SSESpecification"},
	"AWS::S3::Bucket":      {"BucketEncryption", "OwnershipControls", "PublicAccessBlockConfiguration", "Tags", "VersioningConfiguration"},
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
	ids := make([]string, 0, len(t.resources))
	for id := range t.resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
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

func (t *Template) table(id string, p map[string]any) error {
	t.Table.Logical = id
	var err error
	if t.Table.Name, err = t.str(p["TableName"]); err != nil {
		return fmt.Errorf("TableName: %w", err)
	}
	if p["BillingMode"] != "PAY_PER_REQUEST" {
		return fmt.Errorf("BillingMode %v: only PAY_PER_REQUEST is played", p["BillingMode"])
	}
	types := map[string]string{}
	for _, a := range list(p["AttributeDefinitions"]) {
		m, _ := a.(map[string]any)
		types[fmt.Sprint(m["AttributeName"])] = fmt.Sprint(m["AttributeType"])
	}
	for _, k := range list(p["KeySchema"]) {
		m, _ := k.(map[string]any)
		name := fmt.Sprint(m["AttributeName"])
		t.Table.Keys = append(t.Table.Keys, KeyAttr{Name: name, Type: types[name], KeyType: fmt.Sprint(m["KeyType"])})
	}
	if s, ok := p["StreamSpecification"].(map[string]any); ok {
		t.Table.StreamView, _ = s["StreamViewType"].(string)
	}
	if s, ok := p["TimeToLiveSpecification"].(map[string]any); ok && s["Enabled"] == true {
		t.Table.TTLAttribute, _ = s["AttributeName"].(string)
	}
	return nil
}

func (t *Template) queue(id string, p map[string]any) error {
	q := &Queue{Logical: id, VisibilityTimeout: 30 * time.Second, Retention: 4 * 24 * time.Hour}
	var err error
	if q.Name, err = t.str(p["QueueName"]); err != nil {
		return fmt.Errorf("QueueName: %w", err)
	}
	if v, ok := p["VisibilityTimeout"]; ok {
		if q.VisibilityTimeout, err = seconds(v); err != nil {
			return fmt.Errorf("VisibilityTimeout: %w", err)
		}
	}
	if v, ok := p["MessageRetentionPeriod"]; ok {
		if q.Retention, err = seconds(v); err != nil {
			return fmt.Errorf("MessageRetentionPeriod: %w", err)
		}
	}
	if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
		for k := range rp {
			if k != "deadLetterTargetArn" && k != "maxReceiveCount" {
				return fmt.Errorf("RedrivePolicy.%s is not understood by the cloud runner", k)
			}
		}
		if q.DeadLetter, err = t.target(rp["deadLetterTargetArn"], "AWS::SQS::Queue"); err != nil {
			return fmt.Errorf("RedrivePolicy.deadLetterTargetArn: %w", err)
		}
		n, err := number(rp["maxReceiveCount"])
		if err != nil || n < 1 {
			return fmt.Errorf("RedrivePolicy.maxReceiveCount %v", rp["maxReceiveCount"])
		}
		q.MaxReceiveCount = n
	}
	t.Queues[id] = q
	return nil
}

func (t *Template) function(id string, r resource) error {
	p := props(r.Properties)
	f := &Function{Logical: id, Timeout: 3 * time.Second, Memory: 128}
	var err error
	if f.Name, err = t.str(p["FunctionName"]); err != nil {
		return fmt.Errorf("FunctionName: %w", err)
	}
	if p["Runtime"] != "provided.al2023" && p["Runtime"] != "provided.al2" {
		return fmt.Errorf("Runtime %v: only the provided (custom) runtimes are played", p["Runtime"])
	}
	if h, ok := p["Handler"]; ok && h != "bootstrap" {
		return fmt.Errorf("Handler %v: a provided runtime runs bootstrap", h)
	}
	if v, ok := p["Timeout"]; ok {
		if f.Timeout, err = seconds(v); err != nil {
			return fmt.Errorf("Timeout: %w", err)
		}
	}
	if v, ok := p["MemorySize"]; ok {
		if f.Memory, err = number(v); err != nil {
			return fmt.Errorf("MemorySize: %w", err)
		}
	}
	if v, ok := p["ReservedConcurrentExecutions"]; ok {
		if f.Reserved, err = number(v); err != nil || f.Reserved < 1 {
			return fmt.Errorf("ReservedConcurrentExecutions %v: the runner plays a cap of one or more", v)
		}
	}
	if e, ok := p["Environment"].(map[string]any); ok {
		for k := range e {
			if k != "Variables" {
				return fmt.Errorf("Environment.%s is not understood by the cloud runner", k)
			}
		}
		f.env, _ = e["Variables"].(map[string]any)
	}
	asset, _ := r.Metadata["aws:asset:path"].(string)
	if asset == "" || r.Metadata["aws:asset:property"] != "Code" {
		return errors.New("Code is not a CDK asset of the cloud assembly (no aws:asset:path metadata): the runner runs the code the template deploys")
	}
	f.Asset = filepath.Join(t.Dir, asset)
	t.Functions[id] = f
	return nil
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

func (t *Template) rule(id string, p map[string]any) error {
	if s, ok := p["State"]; ok && s != "ENABLED" {
		return nil
	}
	expr, _ := p["ScheduleExpression"].(string)
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return fmt.Errorf("ScheduleExpression %q: only rate(N minutes|hours|days) is played (no event patterns, no cron)", expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
	for _, tg := range list(p["Targets"]) {
		tm, _ := tg.(map[string]any)
		for k := range tm {
			if !slices.Contains([]string{"Arn", "Id", "RetryPolicy", "Input"}, k) {
				return fmt.Errorf("Targets[].%s is not understood by the cloud runner", k)
			}
		}
		fn, err := t.target(tm["Arn"], "AWS::Lambda::Function")
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		s := Schedule{Name: id, Function: fn, Every: time.Duration(n) * unit, Retries: 185, MaxEventAge: 24 * time.Hour}
		if in, ok := tm["Input"]; ok {
			str, _ := in.(string)
			if !json.Valid([]byte(str)) {
				return fmt.Errorf("Targets[].Input %v is not a JSON document", in)
			}
			s.Input = json.RawMessage(str)
		}
		if rp, ok := tm["RetryPolicy"].(map[string]any); ok {
			for k, v := range rp {
				switch k {
				case "MaximumRetryAttempts":
					s.Retries, err = number(v)
				case "MaximumEventAgeInSeconds":
					s.MaxEventAge, err = seconds(v)
				default:
					err = fmt.Errorf("RetryPolicy.%s is not understood by the cloud runner", k)
				}
				if err != nil {
					return err
				}
			}
		}
		t.Schedules = append(t.Schedules, s)
	}
	return nil
}

func (t *Template) mapping(id string, p map[string]any) error {
	fn, err := t.target(p["FunctionName"], "AWS::Lambda::Function")
	if err != nil {
		return fmt.Errorf("FunctionName: %w", err)
	}
	if e, ok := p["Enabled"]; ok && e != true {
		return nil
	}
	src, ok := p["EventSourceArn"].(map[string]any)
	att, _ := src["Fn::GetAtt"].([]any)
	if !ok || len(att) != 2 {
		return fmt.Errorf("EventSourceArn %v: not a table stream or queue of the template", p["EventSourceArn"])
	}
	srcID, attr := fmt.Sprint(att[0]), fmt.Sprint(att[1])
	partial := false
	for _, rt := range list(p["FunctionResponseTypes"]) {
		if rt != "ReportBatchItemFailures" {
			return fmt.Errorf("FunctionResponseTypes %v is not understood by the cloud runner", rt)
		}
		partial = true
	}
	var window time.Duration
	if v, ok := p["MaximumBatchingWindowInSeconds"]; ok {
		if window, err = seconds(v); err != nil {
			return fmt.Errorf("MaximumBatchingWindowInSeconds: %w", err)
		}
	}
	var filters Filters
	if fc, ok := p["FilterCriteria"]; ok {
		if filters, err = parseFilters(fc); err != nil {
			return err
		}
	}
	batch := func(def int) (int, error) {
		v, ok := p["BatchSize"]
		if !ok {
			return def, nil
		}
		return number(v)
	}
	switch typ := t.resources[srcID].Type; {
	case typ == "AWS::DynamoDB::Table" && attr == "StreamArn":
		if t.Stream != nil {
			return errors.New("a second mapping on the table's stream is not played")
		}
		for _, k := range []string{"ScalingConfig"} {
			if _, ok := p[k]; ok {
				return fmt.Errorf("%s is not understood by the cloud runner for a stream", k)
			}
		}
		s := &StreamMapping{Function: fn, PartialBatch: partial, MaxRetries: -1, MaxRecordAge: -1, BatchWindow: window, Filters: filters}
		if s.BatchSize, err = batch(100); err != nil {
			return fmt.Errorf("BatchSize: %w", err)
		}
		s.Bisect, _ = p["BisectBatchOnFunctionError"].(bool)
		if v, ok := p["MaximumRetryAttempts"]; ok {
			if s.MaxRetries, err = number(v); err != nil {
				return fmt.Errorf("MaximumRetryAttempts: %w", err)
			}
		}
		if v, ok := p["MaximumRecordAgeInSeconds"]; ok {
			if s.MaxRecordAge, err = seconds(v); err != nil {
				return fmt.Errorf("MaximumRecordAgeInSeconds: %w", err)
			}
			if s.MaxRecordAge < 0 {
				s.MaxRecordAge = -1
			}
		}
		s.StartingPosition, _ = p["StartingPosition"].(string)
		if s.StartingPosition != "TRIM_HORIZON" && s.StartingPosition != "LATEST" {
			return fmt.Errorf("StartingPosition %q is not played", s.StartingPosition)
		}
		if dc, ok := p["DestinationConfig"].(map[string]any); ok {
			of, _ := dc["OnFailure"].(map[string]any)
			if len(dc) != 1 || of == nil {
				return fmt.Errorf("DestinationConfig %v: only OnFailure is played", dc)
			}
			if s.OnFailure, err = t.target(of["Destination"], "AWS::SQS::Queue"); err != nil {
				return fmt.Errorf("DestinationConfig.OnFailure: only an SQS queue of the template is played: %w", err)
			}
		}
		t.Stream = s
	case typ == "AWS::SQS::Queue" && attr == "Arn":
		for _, k := range []string{"BisectBatchOnFunctionError", "DestinationConfig", "MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "StartingPosition"} {
			if _, ok := p[k]; ok {
				return fmt.Errorf("%s does not apply to an SQS event source", k)
			}
		}
		m := QueueMapping{Function: fn, Queue: srcID, PartialBatch: partial, BatchWindow: window, Filters: filters}
		if m.BatchSize, err = batch(10); err != nil {
			return fmt.Errorf("BatchSize: %w", err)
		}
		if m.BatchSize > 10 && window == 0 {
			return fmt.Errorf("BatchSize %d above 10 needs a batching window", m.BatchSize)
		}
		if sc, ok := p["ScalingConfig"].(map[string]any); ok {
			for k, v := range sc {
				if k != "MaximumConcurrency" {
					return fmt.Errorf("ScalingConfig.%s is not understood by the cloud runner", k)
				}
				if m.MaxConcurrency, err = number(v); err != nil {
					return fmt.Errorf("ScalingConfig.MaximumConcurrency: %w", err)
				}
			}
		}
		t.QueueFeeds = append(t.QueueFeeds, m)
	default:
		return fmt.Errorf("EventSourceArn %s.%s (%s): only a table's stream or an SQS queue is played", srcID, attr, typ)
	}
	return nil
}

// target resolves {"Ref": id} or {"Fn::GetAtt": [id, ...]} to id, which
// must be a resource of type typ.
func (t *Template) target(v any, typ string) (string, error) {
	m, _ := v.(map[string]any)
	var id string
	if r, ok := m["Ref"].(string); ok {
		id = r
	} else if a, ok := m["Fn::GetAtt"].([]any); ok && len(a) == 2 {
		id = fmt.Sprint(a[0])
	}
	if id == "" || t.resources[id].Type != typ {
		return "", fmt.Errorf("%v is not a %s of the template", v, typ)
	}
	return id, nil
}

func list(v any) []any { l, _ := v.([]any); return l }

func number(v any) (int, error) {
	switch n := v.(type) {
	case float64:
		return int(n), nil
	case string:
		return strconv.Atoi(n)
	}
	return 0, fmt.Errorf("%v is not a number", v)
}

func seconds(v any) (time.Duration, error) {
	n, err := number(v)
	return time.Duration(n) * time.Second, err
}

// str resolves a value needing no runtime address (names).
func (t *Template) str(v any) (string, error) { return t.resolve(v, nil) }

// Addresses are what only exists once the runner runs: the API's endpoint
// and each queue's URL.
type Addresses struct {
	APIEndpoint string
	Region      string
}

// resolve evaluates a property value: literals, Ref, Fn::GetAtt, Fn::Join
// and Fn::Sub over the template's resources and the local pseudo
// parameters. a is nil while parsing, when addresses are not known yet.
func (t *Template) resolve(v any, a *Addresses) (string, error) {
	region := "us-east-1"
	if a != nil && a.Region != "" {
		region = a.Region
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64, bool:
		return fmt.Sprint(x), nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if r, ok := x["Ref"].(string); ok {
			return t.ref(r, region, a)
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return t.getAtt(fmt.Sprint(g[0]), fmt.Sprint(g[1]), region, a)
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			var parts []string
			for _, p := range list(j[1]) {
				s, err := t.resolve(p, a)
				if err != nil {
					return "", err
				}
				parts = append(parts, s)
			}
			return strings.Join(parts, sep), nil
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			var err error
			out := regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
				name := m[2 : len(m)-1]
				var r string
				var e error
				if id, attr, ok := strings.Cut(name, "."); ok {
					r, e = t.getAtt(id, attr, region, a)
				} else {
					r, e = t.ref(name, region, a)
				}
				if e != nil && err == nil {
					err = e
				}
				return r
			})
			return out, err
		}
	}
	return "", fmt.Errorf("value %v is not played by the cloud runner", v)
}

var errUnresolved = errors.New("known only once the runner runs")

func (t *Template) ref(id, region string, a *Addresses) (string, error) {
	switch id {
	case "AWS::Region":
		return region, nil
	case "AWS::AccountId":
		return localAccount, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return strings.TrimSuffix(filepath.Base(t.Path), ".template.json"), nil
	}
	r, ok := t.resources[id]
	if !ok {
		return "", fmt.Errorf("Ref %s: no such resource", id)
	}
	p := props(r.Properties)
	switch r.Type {
	case "AWS::DynamoDB::Table":
		return t.resolve(p["TableName"], a)
	case "AWS::S3::Bucket":
		return t.resolve(p["BucketName"], a)
	case "AWS::Lambda::Function":
		return t.resolve(p["FunctionName"], a)
	case "AWS::SQS::Queue":
		if q := t.Queues[id]; q != nil && q.URL != "" {
			return q.URL, nil
		}
		return "", fmt.Errorf("the URL of queue %s is %w", id, errUnresolved)
	case "AWS::ApiGatewayV2::Api":
		return localAPIID, nil
	case "AWS::ApiGatewayV2::Integration":
		return id, nil
	}
	return "", fmt.Errorf("Ref %s (%s) is not played by the cloud runner", id, r.Type)
}

func (t *Template) getAtt(id, attr, region string, a *Addresses) (string, error) {
	r, ok := t.resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s: no such resource", id)
	}
	arn := func(service, rest string) string {
		return "arn:aws:" + service + ":" + region + ":" + localAccount + ":" + rest
	}
	switch r.Type + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		n, err := t.ref(id, region, a)
		return arn("dynamodb", "table/"+n), err
	case "AWS::DynamoDB::Table.StreamArn":
		n, err := t.ref(id, region, a)
		return arn("dynamodb", "table/"+n+"/stream/local"), err
	case "AWS::SQS::Queue.Arn":
		n, err := t.resolve(props(r.Properties)["QueueName"], a)
		return arn("sqs", n), err
	case "AWS::SQS::Queue.QueueName":
		return t.resolve(props(r.Properties)["QueueName"], a)
	case "AWS::SQS::Queue.QueueUrl":
		return t.ref(id, region, a)
	case "AWS::Lambda::Function.Arn":
		n, err := t.ref(id, region, a)
		return arn("lambda", "function:"+n), err
	case "AWS::S3::Bucket.Arn":
		n, err := t.ref(id, region, a)
		return "arn:aws:s3:::" + n, err
	case "AWS::ApiGatewayV2::Api.ApiEndpoint":
		if a == nil || a.APIEndpoint == "" {
			return "", fmt.Errorf("the API's endpoint is %w", errUnresolved)
		}
		return a.APIEndpoint, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s (%s) is not played by the cloud runner", id, attr, r.Type)
}

// ResolveEnv resolves every function's environment once the queues exist
// and the API listens.
func (t *Template) ResolveEnv(a Addresses) error {
	for _, f := range t.Functions {
		f.Env = map[string]string{}
		for k, v := range f.env {
			s, err := t.resolve(v, &a)
			if err != nil {
				return fmt.Errorf("function %s: environment variable %s: %w", f.Name, k, err)
			}
			f.Env[k] = s
		}
	}
	return nil
}

// FunctionByName finds a function by its FunctionName.
func (t *Template) FunctionByName(name string) *Function {
	for _, f := range t.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}
