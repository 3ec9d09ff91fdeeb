// Package deployhook is the canary's BeforeAllowTraffic hook: before
// CodeDeploy shifts any traffic to a function's new version, the hook
// invokes that version with a smoke request for its kind of function and
// reports Succeeded only when the answer is the right one, so that a
// version that cannot start, cannot reach its store or answers wrongly is
// rolled back before a client sees it.
package deployhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// EnvPlan names the variable holding the Plan, as JSON.
const EnvPlan = "SELLERAPI_DEPLOY_SMOKE"

// Kinds of smoke request.
const (
	// KindAPI: an API Gateway HTTP API (payload 2.0) request without
	// credentials to one of the group's authenticated routes; the right
	// answer is 401 application/problem+json, which the function gives
	// only once it has started and read its configuration.
	KindAPI = "api"
	// KindQueue: an empty SQS batch; the right answer is a batch response
	// with no failures.
	KindQueue = "queue"
	// KindStream: an empty DynamoDB stream batch; the right answer is a
	// batch response with no failures.
	KindStream = "stream"
	// KindSchedule: a scheduled event, whose run is the one the schedule
	// would make; the right answer is any result without a function error.
	KindSchedule = "schedule"
)

// Smoke is the request a function's new version must answer.
type Smoke struct {
	Kind string `json:"kind"`
	// Method and Path (under the stage's base path, /v1/...) of KindAPI.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
}

// Plan maps each function name to its smoke request.
type Plan map[string]Smoke

// ParsePlan reads the Plan from the stack's JSON.
func ParsePlan(b []byte) (Plan, error) {
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("deployhook: plan: %w", err)
	}
	for fn, s := range p {
		switch s.Kind {
		case KindAPI:
			if s.Method == "" || !strings.HasPrefix(s.Path, "/") {
				return nil, fmt.Errorf("deployhook: plan: %s: an API smoke needs a method and a path", fn)
			}
		case KindQueue, KindStream, KindSchedule:
		default:
			return nil, fmt.Errorf("deployhook: plan: %s: unknown kind %q", fn, s.Kind)
		}
	}
	return p, nil
}

// Deployments is what the hook asks of CodeDeploy.
type Deployments interface {
	ListDeploymentTargets(context.Context, *codedeploy.ListDeploymentTargetsInput, ...func(*codedeploy.Options)) (*codedeploy.ListDeploymentTargetsOutput, error)
	GetDeploymentTarget(context.Context, *codedeploy.GetDeploymentTargetInput, ...func(*codedeploy.Options)) (*codedeploy.GetDeploymentTargetOutput, error)
	PutLifecycleEventHookExecutionStatus(context.Context, *codedeploy.PutLifecycleEventHookExecutionStatusInput, ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error)
}

// Invoker invokes a function's version.
type Invoker interface {
	Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Event is what CodeDeploy invokes a lifecycle hook with.
type Event struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Hook runs the smoke requests.
type Hook struct {
	Deployments Deployments
	Lambda      Invoker
	Plan        Plan
	// EdgeHeader and EdgeSecret, when set, go with every API smoke request,
	// as the edge sends them (httpapi.EdgeHeader).
	EdgeHeader, EdgeSecret string
	Log                    *slog.Logger
}

// Handle checks every function the deployment shifts and reports the
// verdict to CodeDeploy: Failed on any wrong answer (or when the
// deployment cannot be read), Succeeded otherwise. It returns an error
// only when the verdict could not be reported; CodeDeploy then fails the
// hook when it times out.
func (h Hook) Handle(ctx context.Context, ev Event) error {
	if h.Log == nil {
		h.Log = slog.New(slog.DiscardHandler)
	}
	status := cdtypes.LifecycleEventStatusSucceeded
	if err := h.check(ctx, ev.DeploymentID); err != nil {
		status = cdtypes.LifecycleEventStatusFailed
		h.Log.ErrorContext(ctx, "deploy hook: smoke request failed; failing the deployment", "deployment_id", ev.DeploymentID, "error", err)
	} else {
		h.Log.InfoContext(ctx, "deploy hook: smoke request answered; traffic may shift", "deployment_id", ev.DeploymentID)
	}
	_, err := h.Deployments.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
		DeploymentId:                  aws.String(ev.DeploymentID),
		LifecycleEventHookExecutionId: aws.String(ev.LifecycleEventHookExecutionID),
		Status:                        status,
	})
	if err != nil {
		return fmt.Errorf("deployhook: report %s for %s: %w", status, ev.DeploymentID, err)
	}
	return nil
}

// check smoke-tests each Lambda target of the deployment.
func (h Hook) check(ctx context.Context, deployment string) error {
	if deployment == "" {
		return errors.New("no deployment id")
	}
	var ids []string
	in := &codedeploy.ListDeploymentTargetsInput{DeploymentId: aws.String(deployment)}
	for {
		out, err := h.Deployments.ListDeploymentTargets(ctx, in)
		if err != nil {
			return fmt.Errorf("list targets: %w", err)
		}
		ids = append(ids, out.TargetIds...)
		if out.NextToken == nil {
			break
		}
		in.NextToken = out.NextToken
	}
	if len(ids) == 0 {
		return errors.New("the deployment has no targets")
	}
	for _, id := range ids {
		out, err := h.Deployments.GetDeploymentTarget(ctx, &codedeploy.GetDeploymentTargetInput{DeploymentId: aws.String(deployment), TargetId: aws.String(id)})
		if err != nil {
			return fmt.Errorf("target %s: %w", id, err)
		}
		var info *cdtypes.LambdaFunctionInfo
		if t := out.DeploymentTarget; t != nil && t.LambdaTarget != nil {
			info = t.LambdaTarget.LambdaFunctionInfo
		}
		if info == nil || aws.ToString(info.FunctionName) == "" || aws.ToString(info.TargetVersion) == "" {
			return fmt.Errorf("target %s is not a Lambda function's version", id)
		}
		if err := h.smoke(ctx, aws.ToString(info.FunctionName), aws.ToString(info.TargetVersion)); err != nil {
			return err
		}
	}
	return nil
}

// smoke invokes version of fn with its smoke request and judges the answer.
func (h Hook) smoke(ctx context.Context, fn, version string) error {
	s, ok := h.Plan[fn]
	if !ok {
		return fmt.Errorf("%s: no smoke request in the plan", fn)
	}
	payload, err := s.request(h.EdgeHeader, h.EdgeSecret)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	out, err := h.Lambda.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(fn), Qualifier: aws.String(version), Payload: payload})
	if err != nil {
		return fmt.Errorf("%s:%s: invoke: %w", fn, version, err)
	}
	if out.FunctionError != nil {
		return fmt.Errorf("%s:%s: function error %s: %.200s", fn, version, aws.ToString(out.FunctionError), out.Payload)
	}
	if err := s.Judge(out.Payload); err != nil {
		return fmt.Errorf("%s:%s: %w", fn, version, err)
	}
	return nil
}

// request is the invocation payload of s.
func (s Smoke) request(edgeHeader, edgeSecret string) ([]byte, error) {
	switch s.Kind {
	case KindAPI:
		headers := map[string]string{"accept": "application/json", "user-agent": "sellerapi-deploy-hook"}
		if edgeHeader != "" && edgeSecret != "" {
			headers[strings.ToLower(edgeHeader)] = edgeSecret
		}
		return json.Marshal(events.APIGatewayV2HTTPRequest{
			Version:  "2.0",
			RouteKey: s.Method + " " + s.Path,
			RawPath:  s.Path,
			Headers:  headers,
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				RequestID: "deploy-hook-smoke",
				Stage:     "$default",
				HTTP:      events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: s.Method, Path: s.Path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1", UserAgent: "sellerapi-deploy-hook"},
			},
		})
	case KindQueue:
		return json.Marshal(events.SQSEvent{Records: []events.SQSMessage{}})
	case KindStream:
		return json.Marshal(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{}})
	case KindSchedule:
		return json.Marshal(events.EventBridgeEvent{Version: "0", DetailType: "Scheduled Event", Source: "aws.events", Detail: json.RawMessage("{}")})
	}
	return nil, fmt.Errorf("unknown smoke kind %q", s.Kind)
}

// Judge tells whether payload is the right answer to s.
func (s Smoke) Judge(payload []byte) error {
	switch s.Kind {
	case KindAPI:
		var r events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(payload, &r); err != nil {
			return fmt.Errorf("answer is not an HTTP API response: %w", err)
		}
		ct := ""
		for k, v := range r.Headers {
			if strings.EqualFold(k, "Content-Type") {
				ct = v
			}
		}
		if r.StatusCode != 401 || !strings.HasPrefix(ct, "application/problem+json") {
			return fmt.Errorf("%s %s without credentials answered %d %q, want 401 application/problem+json", s.Method, s.Path, r.StatusCode, ct)
		}
		body := []byte(r.Body)
		if r.IsBase64Encoded {
			b, err := base64.StdEncoding.DecodeString(r.Body)
			if err != nil {
				return fmt.Errorf("the 401's body is not base64: %w", err)
			}
			body = b
		}
		var problem struct {
			Type   string `json:"type"`
			Status int    `json:"status"`
		}
		if err := json.Unmarshal(body, &problem); err != nil || problem.Status != 401 || problem.Type == "" {
			return fmt.Errorf("the 401's body is not a problem with status 401: %.200s", r.Body)
		}
	case KindQueue, KindStream:
		var r struct {
			Failures *[]json.RawMessage `json:"batchItemFailures"`
		}
		if err := json.Unmarshal(payload, &r); err != nil || r.Failures == nil || len(*r.Failures) != 0 {
			return fmt.Errorf("an empty batch answered %.200s, want a batch response without failures", payload)
		}
	case KindSchedule:
		// No function error is the answer.
	default:
		return fmt.Errorf("unknown smoke kind %q", s.Kind)
	}
	return nil
}
