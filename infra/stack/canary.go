package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscodedeploy"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"
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
	awscodedeploy.NewLambdaDeploymentGroup(s.Stack, jsii.String(name+"Deploy"), &awscodedeploy.LambdaDeploymentGroupProps{
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
	})
	return alias
}
