package main

// Each resource type the runner plays, read property by property.

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
		s.Parallel = 1
		if v, ok := p["ParallelizationFactor"]; ok {
			if s.Parallel, err = number(v); err != nil {
				return fmt.Errorf("ParallelizationFactor: %w", err)
			}
			if s.Parallel < 1 || s.Parallel > 10 {
				return fmt.Errorf("ParallelizationFactor %d: want 1..10", s.Parallel)
			}
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
		for _, k := range []string{"BisectBatchOnFunctionError", "DestinationConfig", "MaximumRecordAgeInSeconds", "MaximumRetryAttempts", "StartingPosition", "ParallelizationFactor"} {
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
