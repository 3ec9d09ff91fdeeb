package stack

// Cost guards: a monthly budget and a cost anomaly monitor on the stage's
// tags, both notifying the alarm topic, and a ceiling on the table's
// on-demand throughput derived from the stage's throttle.

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsbudgets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsce"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/resources"
)

// Request units one API request may cost at most (docs/decisions.md, "Cost
// guards"): a read, a full page of 101 one-kilobyte items read strongly
// consistent (26 RRU) beside its admission batch (2 RRU), rounded up to
// 30; a write, the rate window's increment and give-back (2 WRU) and a
// transaction of up to four items (8 WRU), 10 in all.
const (
	ReadUnitsPerRequest  = 30
	WriteUnitsPerRequest = 10
)

// TableMaxThroughput is the table's on-demand ceiling in request units a
// second: the stage throttle's steady rate times the most one request
// costs. Above it DynamoDB throttles, the API answers 503 and the
// table-throttles alarm goes off: a bug or a flood is bounded by the
// ceiling, not found on the invoice.
func (d Definition) TableMaxThroughput() (reads, writes int) {
	return int(d.Throttle.Rate) * ReadUnitsPerRequest, int(d.Throttle.Rate) * WriteUnitsPerRequest
}

// Cost is a stage's spending guard, in US dollars.
type Cost struct {
	// MonthlyBudget is the month's expected cost of the stage's tagged
	// resources: the topic is told when the actual cost passes 80% of it
	// and when the forecast passes 100%.
	MonthlyBudget float64
	// AnomalyImpact is the least total impact of a cost anomaly that is
	// reported to the topic.
	AnomalyImpact float64
}

// DefaultCost is prod's guard and every other deployed stage's; local and
// localstack (one machine, LocalStack) have no bill to guard.
func DefaultCost(stage string) *Cost {
	switch stage {
	case "prod":
		return &Cost{MonthlyBudget: 500, AnomalyImpact: 25}
	case "local", "localstack":
		return nil
	}
	return &Cost{MonthlyBudget: 50, AnomalyImpact: 10}
}

// costGuards adds, in the ops stack, the budget and the anomaly monitor, both on the stack's
// tags (service and stage, which must be activated as cost allocation tags
// in the billing console), and lets AWS Budgets and Cost Anomaly Detection
// publish to the topic.
func (s *Stack) costGuards(d Definition, topic awssns.Topic) {
	st := s.OpsStack
	// The topic's policy lives beside the guards that need it. A topic
	// policy replaces SNS's default one, so it grants again what that did
	// (the account's own use) and CloudWatch's alarms.
	policy := awssns.NewTopicPolicy(st, jsii.String("AlarmTopicPolicy"), &awssns.TopicPolicyProps{Topics: &[]awssns.ITopic{topic}})
	policy.Document().AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("Account"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewAccountRootPrincipal()},
		Actions:    jsii.Strings("sns:GetTopicAttributes", "sns:ListSubscriptionsByTopic", "sns:Publish", "sns:Subscribe"),
		Resources:  &[]*string{topic.TopicArn()},
	}))
	for sid, service := range map[string]string{"AlarmsPublish": "cloudwatch.amazonaws.com", "BudgetsPublish": "budgets.amazonaws.com", "CostAnomaliesPublish": "costalerts.amazonaws.com"} {
		policy.Document().AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String(sid),
			Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(service), nil)},
			Actions:    jsii.Strings("sns:Publish"),
			Resources:  &[]*string{topic.TopicArn()},
		}))
	}
	tag := func(key, value string) *awsbudgets.CfnBudget_ExpressionProperty {
		return &awsbudgets.CfnBudget_ExpressionProperty{Tags: &awsbudgets.CfnBudget_TagValuesProperty{
			Key: jsii.String(key), Values: jsii.Strings(value), MatchOptions: jsii.Strings("EQUALS"),
		}}
	}
	notify := func(kind string, percent float64) *awsbudgets.CfnBudget_NotificationWithSubscribersProperty {
		return &awsbudgets.CfnBudget_NotificationWithSubscribersProperty{
			Notification: &awsbudgets.CfnBudget_NotificationProperty{
				NotificationType: jsii.String(kind), ComparisonOperator: jsii.String("GREATER_THAN"),
				Threshold: jsii.Number(percent), ThresholdType: jsii.String("PERCENTAGE"),
			},
			Subscribers: []any{&awsbudgets.CfnBudget_SubscriberProperty{SubscriptionType: jsii.String("SNS"), Address: topic.TopicArn()}},
		}
	}
	awsbudgets.NewCfnBudget(st, jsii.String("Budget"), &awsbudgets.CfnBudgetProps{
		Budget: &awsbudgets.CfnBudget_BudgetDataProperty{
			BudgetName:  jsii.String(s.Names.Stack()),
			BudgetType:  jsii.String("COST"),
			TimeUnit:    jsii.String("MONTHLY"),
			BudgetLimit: &awsbudgets.CfnBudget_SpendProperty{Amount: jsii.Number(d.Cost.MonthlyBudget), Unit: jsii.String("USD")},
			FilterExpression: &awsbudgets.CfnBudget_ExpressionProperty{And: []any{
				tag("service", resources.Service), tag("stage", d.Stage),
			}},
		},
		NotificationsWithSubscribers: []any{notify("ACTUAL", 80), notify("FORECASTED", 100)},
	})

	spec, _ := json.Marshal(map[string]any{"And": []any{
		map[string]any{"Tags": map[string]any{"Key": "service", "Values": []string{resources.Service}, "MatchOptions": []string{"EQUALS"}}},
		map[string]any{"Tags": map[string]any{"Key": "stage", "Values": []string{d.Stage}, "MatchOptions": []string{"EQUALS"}}},
	}})
	monitor := awsce.NewCfnAnomalyMonitor(st, jsii.String("CostMonitor"), &awsce.CfnAnomalyMonitorProps{
		MonitorName:          jsii.String(s.Names.Stack()),
		MonitorType:          jsii.String("CUSTOM"),
		MonitorSpecification: jsii.String(string(spec)),
	})
	threshold, _ := json.Marshal(map[string]any{"Dimensions": map[string]any{
		"Key": "ANOMALY_TOTAL_IMPACT_ABSOLUTE", "MatchOptions": []string{"GREATER_THAN_OR_EQUAL"}, "Values": []string{jsonNumber(d.Cost.AnomalyImpact)},
	}})
	awsce.NewCfnAnomalySubscription(st, jsii.String("CostAnomalies"), &awsce.CfnAnomalySubscriptionProps{
		SubscriptionName:    jsii.String(s.Names.Stack()),
		Frequency:           jsii.String("IMMEDIATE"),
		MonitorArnList:      &[]any{monitor.AttrMonitorArn()},
		Subscribers:         []any{&awsce.CfnAnomalySubscription_SubscriberProperty{Type: jsii.String("SNS"), Address: topic.TopicArn()}},
		ThresholdExpression: jsii.String(string(threshold)),
	})
}

func jsonNumber(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}
