package deployhook

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

// fakeDeploy is CodeDeploy holding one deployment of targets (function →
// target version), recording the verdicts reported.
type fakeDeploy struct {
	targets  map[string]string
	listErr  error
	verdicts []cdtypes.LifecycleEventStatus
	putErr   error
}

func (f *fakeDeploy) ListDeploymentTargets(_ context.Context, in *codedeploy.ListDeploymentTargetsInput, _ ...func(*codedeploy.Options)) (*codedeploy.ListDeploymentTargetsOutput, error) {
	if f.listErr != nil {
		return nil, f.listErr
	}
	if aws.ToString(in.DeploymentId) != "d-1" {
		return nil, errors.New("no such deployment")
	}
	// One target a page, to walk the pages, in an order every page agrees
	// on (a map's is drawn anew at each range).
	ids := slices.Sorted(maps.Keys(f.targets))
	i := 0
	if in.NextToken != nil {
		for i < len(ids) && ids[i] != *in.NextToken {
			i++
		}
	}
	out := &codedeploy.ListDeploymentTargetsOutput{}
	if i < len(ids) {
		out.TargetIds = []string{ids[i]}
	}
	if i+1 < len(ids) {
		out.NextToken = aws.String(ids[i+1])
	}
	return out, nil
}

func (f *fakeDeploy) GetDeploymentTarget(_ context.Context, in *codedeploy.GetDeploymentTargetInput, _ ...func(*codedeploy.Options)) (*codedeploy.GetDeploymentTargetOutput, error) {
	fn := aws.ToString(in.TargetId)
	v, ok := f.targets[fn]
	if !ok {
		return nil, errors.New("no such target")
	}
	return &codedeploy.GetDeploymentTargetOutput{DeploymentTarget: &cdtypes.DeploymentTarget{LambdaTarget: &cdtypes.LambdaTarget{
		LambdaFunctionInfo: &cdtypes.LambdaFunctionInfo{FunctionName: aws.String(fn), FunctionAlias: aws.String("live"), CurrentVersion: aws.String("1"), TargetVersion: aws.String(v)},
	}}}, nil
}

func (f *fakeDeploy) PutLifecycleEventHookExecutionStatus(_ context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, _ ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error) {
	if aws.ToString(in.DeploymentId) != "d-1" || aws.ToString(in.LifecycleEventHookExecutionId) != "exec-1" {
		return nil, errors.New("wrong ids")
	}
	f.verdicts = append(f.verdicts, in.Status)
	return &codedeploy.PutLifecycleEventHookExecutionStatusOutput{}, f.putErr
}

// fakeLambda answers each qualified invocation with answer(fn, payload).
type fakeLambda struct {
	answer  func(fn string, payload []byte) (*lambda.InvokeOutput, error)
	invoked []string
}

func (f *fakeLambda) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.invoked = append(f.invoked, aws.ToString(in.FunctionName)+":"+aws.ToString(in.Qualifier))
	return f.answer(aws.ToString(in.FunctionName), in.Payload)
}

func apiAnswer(status int, contentType, body string) *lambda.InvokeOutput {
	b, _ := json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"Content-Type": contentType}, Body: body})
	return &lambda.InvokeOutput{StatusCode: 200, Payload: b}
}

const problem401 = `{"type":"https://example.com/errors#unauthorized","title":"Unauthorized","status":401}`

var plan = Plan{
	"sellerapi-prod-products":       {Kind: KindAPI, Method: "GET", Path: "/v1/vendors/smoke/products"},
	"sellerapi-prod-webhook-worker": {Kind: KindQueue},
	"sellerapi-prod-stream-router":  {Kind: KindStream},
	"sellerapi-prod-expirer":        {Kind: KindSchedule},
}

// right answers every smoke request as a healthy new version does,
// checking what it was sent.
func right(t *testing.T) func(string, []byte) (*lambda.InvokeOutput, error) {
	return func(fn string, payload []byte) (*lambda.InvokeOutput, error) {
		switch plan[fn].Kind {
		case KindAPI:
			var req events.APIGatewayV2HTTPRequest
			if err := json.Unmarshal(payload, &req); err != nil || req.RequestContext.HTTP.Method != "GET" || req.RawPath != "/v1/vendors/smoke/products" {
				t.Errorf("API smoke request %s (%v)", payload, err)
			}
			if _, ok := req.Headers["authorization"]; ok {
				t.Error("the smoke request carries a credential")
			}
			if req.Headers["x-sellerapi-edge"] != "edge-secret" {
				t.Errorf("the smoke request lacks the edge's header: %v", req.Headers)
			}
			return apiAnswer(401, "application/problem+json", problem401), nil
		case KindQueue, KindStream:
			var ev struct{ Records []any }
			if err := json.Unmarshal(payload, &ev); err != nil || ev.Records == nil || len(ev.Records) != 0 {
				t.Errorf("batch smoke request %s", payload)
			}
			return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"batchItemFailures":[]}`)}, nil
		default:
			return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"expired":0,"failed":0}`)}, nil
		}
	}
}

func run(t *testing.T, targets map[string]string, answer func(string, []byte) (*lambda.InvokeOutput, error)) (*fakeDeploy, *fakeLambda, error) {
	t.Helper()
	d := &fakeDeploy{targets: targets}
	l := &fakeLambda{answer: answer}
	h := Hook{Deployments: d, Lambda: l, Plan: plan, EdgeHeader: "X-Sellerapi-Edge", EdgeSecret: "edge-secret", Log: slog.New(slog.DiscardHandler)}
	err := h.Handle(context.Background(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "exec-1"})
	return d, l, err
}

func TestRightAnswersLetTrafficShift(t *testing.T) {
	for fn := range plan {
		t.Run(fn, func(t *testing.T) {
			d, l, err := run(t, map[string]string{fn: "7"}, right(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.verdicts) != 1 || d.verdicts[0] != cdtypes.LifecycleEventStatusSucceeded {
				t.Errorf("verdicts %v, want one Succeeded", d.verdicts)
			}
			if len(l.invoked) != 1 || l.invoked[0] != fn+":7" {
				t.Errorf("invoked %v, want the new version %s:7", l.invoked, fn)
			}
		})
	}
	// Every target of a deployment, across pages.
	d, l, err := run(t, map[string]string{"sellerapi-prod-products": "3", "sellerapi-prod-webhook-worker": "9"}, right(t))
	if err != nil || len(d.verdicts) != 1 || d.verdicts[0] != cdtypes.LifecycleEventStatusSucceeded || len(l.invoked) != 2 {
		t.Errorf("two targets: verdicts %v, invoked %v, err %v", d.verdicts, l.invoked, err)
	}
}

func TestWrongAnswersFailTheDeployment(t *testing.T) {
	api := "sellerapi-prod-products"
	for _, c := range []struct {
		name    string
		fn      string
		answer  func(string, []byte) (*lambda.InvokeOutput, error)
		targets map[string]string
	}{
		{"200 where 401 is due", api, func(string, []byte) (*lambda.InvokeOutput, error) {
			return apiAnswer(200, "application/json", `{}`), nil
		}, nil},
		{"500", api, func(string, []byte) (*lambda.InvokeOutput, error) {
			return apiAnswer(500, "application/problem+json", `{"type":"x","status":500}`), nil
		}, nil},
		{"401 that is not a problem", api, func(string, []byte) (*lambda.InvokeOutput, error) { return apiAnswer(401, "text/plain", "no"), nil }, nil},
		{"401 problem with another status in its body", api, func(string, []byte) (*lambda.InvokeOutput, error) {
			return apiAnswer(401, "application/problem+json", `{"type":"x","status":500}`), nil
		}, nil},
		{"not an HTTP response", api, func(string, []byte) (*lambda.InvokeOutput, error) {
			return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`"hello"`)}, nil
		}, nil},
		{"init error", api, func(string, []byte) (*lambda.InvokeOutput, error) {
			return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorType":"Runtime.ExitError"}`)}, nil
		}, nil},
		{"invoke refused", api, func(string, []byte) (*lambda.InvokeOutput, error) { return nil, errors.New("AccessDenied") }, nil},
		{"a batch with failures", "sellerapi-prod-webhook-worker", func(string, []byte) (*lambda.InvokeOutput, error) {
			return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"batchItemFailures":[{"itemIdentifier":"x"}]}`)}, nil
		}, nil},
		{"a batch answered with nothing", "sellerapi-prod-stream-router", func(string, []byte) (*lambda.InvokeOutput, error) {
			return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`null`)}, nil
		}, nil},
		{"a scheduled run that errs", "sellerapi-prod-expirer", func(string, []byte) (*lambda.InvokeOutput, error) {
			return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{}`)}, nil
		}, nil},
		{"a function the plan does not know", "", right(t), map[string]string{"sellerapi-prod-stranger": "2"}},
		{"a deployment without targets", "", right(t), map[string]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			targets := c.targets
			if targets == nil {
				targets = map[string]string{c.fn: "4"}
			}
			d, _, err := run(t, targets, c.answer)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.verdicts) != 1 || d.verdicts[0] != cdtypes.LifecycleEventStatusFailed {
				t.Errorf("verdicts %v, want one Failed", d.verdicts)
			}
		})
	}
	// A deployment that cannot be read fails too.
	d := &fakeDeploy{listErr: errors.New("throttled")}
	h := Hook{Deployments: d, Lambda: &fakeLambda{answer: right(t)}, Plan: plan, Log: slog.New(slog.DiscardHandler)}
	if err := h.Handle(context.Background(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "exec-1"}); err != nil || len(d.verdicts) != 1 || d.verdicts[0] != cdtypes.LifecycleEventStatusFailed {
		t.Errorf("unreadable deployment: verdicts %v, err %v", d.verdicts, err)
	}
}

// A verdict that cannot be reported is the invocation's error.
func TestAnUnreportedVerdictIsAnError(t *testing.T) {
	d := &fakeDeploy{targets: map[string]string{"sellerapi-prod-expirer": "2"}, putErr: errors.New("AccessDenied")}
	h := Hook{Deployments: d, Lambda: &fakeLambda{answer: right(t)}, Plan: plan, Log: slog.New(slog.DiscardHandler)}
	if err := h.Handle(context.Background(), Event{DeploymentID: "d-1", LifecycleEventHookExecutionID: "exec-1"}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("err = %v", err)
	}
}

func TestParsePlan(t *testing.T) {
	b, _ := json.Marshal(plan)
	got, err := ParsePlan(b)
	if err != nil || len(got) != len(plan) || got["sellerapi-prod-products"] != plan["sellerapi-prod-products"] {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{`[]`, `{"f":{"kind":"teleport"}}`, `{"f":{"kind":"api","path":"/v1/x"}}`, `{"f":{"kind":"api","method":"GET","path":"v1"}}`} {
		if _, err := ParsePlan([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// FuzzJudge: no answer makes Judge panic, and only a 401 problem passes an
// API smoke.
func FuzzJudge(f *testing.F) {
	f.Add([]byte(`{"statusCode":401,"headers":{"Content-Type":"application/problem+json"},"body":"{\"type\":\"x\",\"status\":401}"}`))
	f.Add([]byte(`{"batchItemFailures":[]}`))
	f.Add([]byte(`{"statusCode":401,"isBase64Encoded":true,"body":"!!"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, s := range plan {
			err := s.Judge(b)
			if s.Kind == KindAPI && err == nil {
				var r events.APIGatewayV2HTTPResponse
				if json.Unmarshal(b, &r) != nil || r.StatusCode != 401 {
					t.Fatalf("%s passed an API smoke", b)
				}
			}
		}
	})
}
