package stack

// One function: its role, log group, settings and alarms.

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"
)

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
		// vendor id; Lambda's JSON format keeps it structured and filters
		// it by level. Platform lines only at WARN: the start and report
		// lines of every invocation were a third of a request's log bytes
		// (issue 26); the environment's own lines carry its init time and
		// memory peak (lambdaapi.WithRequestIDs), durations and errors are
		// Lambda's metrics.
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
	if d.Canary && name != d.Admin && name != d.DeployHook {
		s.Targets[name] = s.canary(name, f, errorsAlarm, d.isAPI(name))
	}
	s.Functions[name] = f
	return f
}
