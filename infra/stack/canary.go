package stack

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/deployhook"
)

// LiveAlias is the alias every trigger invokes when a stage deploys by
// canary.
const LiveAlias = "live"

// canary publishes f's code as a version behind the live alias and lets
// CodeDeploy move the alias: 10% of invocations go to a new version for
// five minutes, then all of them, and the deployment rolls back when the
// function's errors alarm goes off or, for an API function, the API's
// 5xx-rate or latency alarm does. It returns the alias, which the
// function's triggers invoke.
func (s *Stack) canary(name string, f awslambda.Function, errorsAlarm awscloudwatch.Alarm, api bool) awslambda.Alias {
	if s.deploys == nil {
		// One application and one role for every function's deployment
		// group: a stack holds at most 500 resources.
		s.deploys = awscodedeploy.NewLambdaApplication(s.Stack, jsii.String("Deploys"), &awscodedeploy.LambdaApplicationProps{
			ApplicationName: jsii.String(s.Names.Stack()),
		})
		s.deployRole = awsiam.NewRole(s.Stack, jsii.String("DeployRole"), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("codedeploy.amazonaws.com"), nil),
			Description: jsii.String("CodeDeploy's role for " + s.Names.Stack() + "'s canary deployments"),
		})
	}
	alias := awslambda.NewAlias(s.Stack, jsii.String(name+"Live"), &awslambda.AliasProps{
		AliasName: jsii.String(LiveAlias),
		Version:   f.CurrentVersion(),
	})
	alarms := []interfacesawscloudwatch.IAlarmRef{errorsAlarm}
	if api {
		alarms = append(alarms, s.obs.api5xx, s.obs.apiLatency)
	}
	s.deployGroups = append(s.deployGroups, deployGroup{name: name, fn: f, group: awscodedeploy.NewLambdaDeploymentGroup(s.Stack, jsii.String(name+"Deploy"), &awscodedeploy.LambdaDeploymentGroupProps{
		Alias:               alias,
		Application:         s.deploys,
		Role:                s.deployRole,
		DeploymentGroupName: jsii.String(s.Names.Function(name)),
		DeploymentConfig:    awscodedeploy.LambdaDeploymentConfig_CANARY_10PERCENT_5MINUTES(),
		Alarms:              &alarms,
		AutoRollback: &awscodedeploy.AutoRollbackConfig{
			FailedDeployment:  jsii.Bool(true),
			StoppedDeployment: jsii.Bool(true),
			DeploymentInAlarm: jsii.Bool(true),
		},
	})})
	return alias
}

// deployGroup is one function's canary deployment group.
type deployGroup struct {
	name  string
	fn    awslambda.Function
	group awscodedeploy.LambdaDeploymentGroup
}

// deployHook adds the function every deployment group runs before it
// allows traffic to a new version (shared/deployhook): it may invoke the
// versions of the functions deployed by canary and report to their
// groups, and is told the smoke request of each and, behind the edge, the
// edge's secret. It must be called once every canary is made.
func (s *Stack) deployHook(d Definition) error {
	if len(s.deployGroups) == 0 {
		return nil
	}
	plan := deployhook.Plan{}
	for _, g := range s.deployGroups {
		smoke, err := s.smoke(d, g.name)
		if err != nil {
			return err
		}
		plan[s.Names.Function(g.name)] = smoke
	}
	b, err := json.Marshal(plan)
	if err != nil {
		return err
	}
	extra := map[string]*string{deployhook.EnvPlan: jsii.String(string(b))}
	if d.Edge {
		extra[config.EnvEdgeSecret] = s.edgeSecretRef
	}
	hook := s.function(d, d.DeployHook, "Seller Platform API: smoke-tests a canary's new version before CodeDeploy shifts traffic to it", time.Minute, nil, extra)
	invoke := awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Sid: jsii.String("InvokeNewVersions"), Actions: jsii.Strings("lambda:InvokeFunction")})
	for _, g := range s.deployGroups {
		invoke.AddResources(jsii.String(*g.fn.FunctionArn() + ":*"))
		g.group.AddPreHook(hook)
	}
	hook.Role().AddToPrincipalPolicy(invoke)
	s.DeployHook = hook
	return nil
}

// smoke is the request the hook sends a new version of fn: for an API
// function, one of its group's routes that takes a credential, sent
// without one (a path parameter is "smoke"); a queue's or the stream's
// empty batch for a worker or the router; a scheduled run otherwise.
func (s *Stack) smoke(d Definition, fn string) (deployhook.Smoke, error) {
	switch {
	case d.isAPI(fn):
		for _, r := range s.Routes {
			if r.Function != fn || r.Public || r.Key == DefaultRoute {
				continue
			}
			return deployhook.Smoke{Kind: deployhook.KindAPI, Method: r.Method, Path: pathParam.ReplaceAllString(r.Path, "smoke")}, nil
		}
		return deployhook.Smoke{}, fmt.Errorf("stack: group %s has no route that takes a credential for its deploy hook to ask", fn)
	case fn == d.StreamRouter:
		return deployhook.Smoke{Kind: deployhook.KindStream}, nil
	case slices.ContainsFunc(d.Workers, func(w Worker) bool { return w.Name == fn }):
		return deployhook.Smoke{Kind: deployhook.KindQueue}, nil
	}
	return deployhook.Smoke{Kind: deployhook.KindSchedule}, nil
}

var pathParam = regexp.MustCompile(`\{[^}]+\}`)
