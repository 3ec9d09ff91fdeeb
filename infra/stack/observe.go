package stack

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/webhook"
)

// Thresholds of the alarms on what actually fails. The API answers its
// errors as 5xx responses and recovers panics, and the queue workers
// report failed items instead of failing, so a function's Errors metric
// stays near zero while the service fails: the alarms watch the API's
// 5xx rate and latency, error-level log lines, queue ages, dead letters,
// throttles and the table's own errors as well.
const (
	// API5xxPercent is the share of 5xx answers over 5 minutes.
	API5xxPercent = 1
	// APILatencyP99Millis is the p99 of the API's latency, for three
	// 5-minute periods in a row.
	APILatencyP99Millis = 2000
	// IteratorAgeMillis is how far the stream router may fall behind the
	// table's changes.
	IteratorAgeMillis = 5 * 60 * 1000
	// RefusedPerMinute is how many requests a minute the rate windows may
	// refuse (429), five minutes in a row, before someone should look: a
	// client in a retry loop, or allowances too tight for real use.
	RefusedPerMinute = 120
	// DeliveryLagP90Millis is how late the slowest tenth of webhook
	// attempts may be made after they fell due, three 5-minute periods in
	// a row: the delivery queue is starved or the worker failing.
	DeliveryLagP90Millis = 5 * 60 * 1000
)

// ErrorLogsMetric is the metric every function's error-level log lines
// (including recovered panics, logged at error level) count into, in the
// stage's namespace.
const ErrorLogsMetric = "ErrorLogs"

// observer holds the stage's alarms and its one dashboard.
type observer struct {
	s         *Stack
	action    awscloudwatch.IAlarmAction
	namespace string
	fns       []string
	functions map[string]awslambda.Function
	queues    map[string]awssqs.Queue
	dlqs      map[string]awssqs.Queue
	router    awslambda.Function
	// The API's alarms, which every API function's canary watches too.
	api5xx, apiLatency awscloudwatch.Alarm
	rate               awscloudwatch.MathExpression
	count, errors5xx   awscloudwatch.Metric
	latency            awscloudwatch.Metric
}

func newObserver(s *Stack, action awscloudwatch.IAlarmAction) *observer {
	return &observer{s: s, action: action, namespace: "sellerapi/" + s.Names.Stage,
		functions: map[string]awslambda.Function{}, queues: map[string]awssqs.Queue{}, dlqs: map[string]awssqs.Queue{}}
}

func (o *observer) alarm(id, name, description string, metric awscloudwatch.IMetric, threshold float64, periods int) awscloudwatch.Alarm {
	a := awscloudwatch.NewAlarm(o.s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmName:          jsii.String(name),
		AlarmDescription:   jsii.String(description),
		Metric:             metric,
		Threshold:          jsii.Number(threshold),
		EvaluationPeriods:  jsii.Number(float64(periods)),
		ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
		TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
	})
	a.AddAlarmAction(o.action)
	return a
}

func fiveMinutes(statistic string) *awscloudwatch.MetricOptions {
	return &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String(statistic)}
}

// observeFunction alarms on a function's failed invocations (its throttles
// are alarmed ten functions at a time, in finish) and counts its error-level log lines into ErrorLogsMetric. It returns the
// errors alarm.
func (s *Stack) observeFunction(name string, f awslambda.Function, logs awslogs.LogGroup) awscloudwatch.Alarm {
	o := s.obs
	fn := s.Names.Function(name)
	errorsAlarm := o.alarm(name+"Errors", fn+"-errors", fn+" failed invocations (init errors, panics, timeouts, returned errors)",
		f.MetricErrors(fiveMinutes("Sum")), 1, 1)
	logs.AddMetricFilter(jsii.String(name+"ErrorLogs"), &awslogs.MetricFilterOptions{
		FilterName:      jsii.String(fn + "-error-logs"),
		FilterPattern:   awslogs.FilterPattern_StringValue(jsii.String("$.level"), jsii.String("="), jsii.String("ERROR")),
		MetricNamespace: jsii.String(o.namespace),
		MetricName:      jsii.String(ErrorLogsMetric),
		MetricValue:     jsii.String("1"),
		DefaultValue:    jsii.Number(0),
	})
	o.fns = append(o.fns, name)
	o.functions[name] = f
	return errorsAlarm
}

// observeQueue alarms on a worker queue's oldest waiting message.
func (s *Stack) observeQueue(name string, q awssqs.Queue, oldest float64) {
	s.obs.alarm(name+"Oldest", s.Names.Queue(name)+"-oldest", "The oldest message in "+name+"'s queue has waited too long: its worker is failing or starved",
		q.MetricApproximateAgeOfOldestMessage(fiveMinutes("Maximum")), oldest, 3)
	s.obs.queues[name] = q
}

// observeDeadLetters alarms on any message in a dead-letter queue.
func (s *Stack) observeDeadLetters(name string, q awssqs.Queue) {
	s.obs.alarm(name+"DeadLetters", s.Names.DeadLetterQueue(name)+"-not-empty", "Messages that failed every retry wait in "+name+"'s dead-letter queue",
		q.MetricApproximateNumberOfMessagesVisible(fiveMinutes("Maximum")), 1, 1)
	s.obs.dlqs[name] = q
}

// observeRouter alarms when the stream router falls behind the table.
func (s *Stack) observeRouter(name string, f awslambda.Function) {
	s.obs.alarm(name+"IteratorAge", s.Names.Function(name)+"-iterator-age", "The stream router is behind the table's changes: events, jobs and replays wait",
		f.Metric(jsii.String("IteratorAge"), fiveMinutes("Maximum")), IteratorAgeMillis, 1)
	s.obs.router = f
}

// apiAlarms adds the API's alarms: its 5xx rate and p99 latency.
func (o *observer) apiAlarms() {
	s := o.s
	prefix := s.Names.Stack()
	o.count = s.API.MetricCount(fiveMinutes("Sum"))
	o.errors5xx = s.API.MetricServerError(fiveMinutes("Sum"))
	o.rate = awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(requests > 0, 100 * errors / requests, 0)"),
		UsingMetrics: &map[string]awscloudwatch.IMetric{"errors": o.errors5xx, "requests": o.count},
		Label:        jsii.String("5xx %"),
		Period:       awscdk.Duration_Minutes(jsii.Number(5)),
	})
	o.api5xx = o.alarm("Api5xxRate", prefix+"-api-5xx-rate", "More than 1% of the API's answers are 5xx (503s when the store fails closed, 500s)", o.rate, API5xxPercent, 1)
	o.latency = s.API.MetricLatency(fiveMinutes("p99"))
	o.apiLatency = o.alarm("ApiLatency", prefix+"-api-latency-p99", "The API's p99 latency is above 2 s for 15 minutes", o.latency, APILatencyP99Millis, 3)
}

// finish adds the other stage-wide alarms (error logs, the table's
// throttles and system errors) and the dashboard.
func (o *observer) finish() {
	s := o.s
	prefix := s.Names.Stack()
	count, errors5xx, rate, latency := o.count, o.errors5xx, o.rate, o.latency
	// Throttles, summed over at most ten functions an alarm (an alarm's
	// math takes ten metrics): a stack holds at most 500 resources, and an
	// alarm per function would cost 23 of them.
	for i := 0; i < len(o.fns); i += 10 {
		group := o.fns[i:min(i+10, len(o.fns))]
		using := map[string]awscloudwatch.IMetric{}
		var ids []string
		for j, name := range group {
			id := fmt.Sprintf("t%d", j)
			using[id] = o.functions[name].MetricThrottles(fiveMinutes("Sum"))
			ids = append(ids, id)
		}
		sum := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String(strings.Join(ids, " + ")),
			UsingMetrics: &using,
			Label:        jsii.String("throttles"),
			Period:       awscdk.Duration_Minutes(jsii.Number(5)),
		})
		n := i/10 + 1
		o.alarm(fmt.Sprintf("Throttles%d", n), fmt.Sprintf("%s-throttles-%d", prefix, n),
			"Invocations refused for concurrency by "+strings.Join(group, ", "), sum, 1, 1)
	}
	errorLogs := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(o.namespace), MetricName: jsii.String(ErrorLogsMetric),
		Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")})
	o.alarm("ErrorLogs", prefix+"-error-logs", "Functions logged errors (recovered panics, store failures, failed deliveries' causes)", errorLogs, 1, 1)
	// The operations the store adapter calls (an alarm's math takes at most
	// ten metrics, and CDK's default is every operation).
	ops := &[]awsdynamodb.Operation{awsdynamodb.Operation_GET_ITEM, awsdynamodb.Operation_BATCH_GET_ITEM, awsdynamodb.Operation_QUERY,
		awsdynamodb.Operation_PUT_ITEM, awsdynamodb.Operation_UPDATE_ITEM, awsdynamodb.Operation_DELETE_ITEM, awsdynamodb.Operation_TRANSACT_WRITE_ITEMS}
	throttled := s.Table.MetricThrottledRequestsForOperations(&awsdynamodb.OperationsMetricOptions{Operations: ops, Period: awscdk.Duration_Minutes(jsii.Number(5))})
	o.alarm("TableThrottles", prefix+"-table-throttles", "DynamoDB throttled requests on the table", throttled, 1, 1)
	systemErrors := s.Table.MetricSystemErrorsForOperations(&awsdynamodb.SystemErrorsForOperationsMetricOptions{Operations: ops, Period: awscdk.Duration_Minutes(jsii.Number(5))})
	o.alarm("TableSystemErrors", prefix+"-table-system-errors", "DynamoDB system errors on the table", systemErrors, 1, 1)

	// The service's own metrics, embedded in its log lines (EMF): the
	// request line's (httpapi.Metric*) and the delivery line's
	// (webhook.Metric*), by operation or outcome and in total.
	own := func(name, statistic string, period float64) awscloudwatch.Metric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(o.namespace), MetricName: jsii.String(name),
			Period: awscdk.Duration_Minutes(jsii.Number(period)), Statistic: jsii.String(statistic)})
	}
	refused := own(httpapi.MetricRefused, "Sum", 1)
	o.alarm("Refused", prefix+"-refused", fmt.Sprintf("The rate windows refused %d or more requests a minute for 5 minutes (429)", RefusedPerMinute), refused, RefusedPerMinute, 5)
	lag := own(webhook.MetricLag, "p90", 5)
	o.alarm("DeliveryLag", prefix+"-delivery-lag", "Webhook attempts are made more than 5 minutes after they fall due (p90, 15 minutes)", lag, DeliveryLagP90Millis, 3)
	search := func(label, dimension, metric, statistic string) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"', '%s', 300)`, o.namespace, dimension, metric, statistic)),
			Label:      jsii.String(label),
			Period:     awscdk.Duration_Minutes(jsii.Number(5)),
		})
	}

	width := jsii.Number(12)
	graph := func(title string, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Left: &left, Width: width})
	}
	perFunction := func(metric func(awslambda.Function) awscloudwatch.IMetric) []awscloudwatch.IMetric {
		var ms []awscloudwatch.IMetric
		for _, name := range o.fns {
			ms = append(ms, metric(o.functions[name]))
		}
		return ms
	}
	names := func(m map[string]awssqs.Queue) []string {
		var ns []string
		for n := range m {
			ns = append(ns, n)
		}
		sort.Strings(ns)
		return ns
	}
	var ages, dead []awscloudwatch.IMetric
	for _, n := range names(o.queues) {
		ages = append(ages, o.queues[n].MetricApproximateAgeOfOldestMessage(fiveMinutes("Maximum")))
	}
	for _, n := range names(o.dlqs) {
		dead = append(dead, o.dlqs[n].MetricApproximateNumberOfMessagesVisible(fiveMinutes("Maximum")))
	}
	rows := [][]awscloudwatch.IWidget{
		{graph("API requests and 5xx", count, errors5xx), graph("API latency p99 (ms)", latency)},
		{graph("5xx rate (%)", rate), graph("Error log lines", errorLogs)},
		{graph("Function errors", perFunction(func(f awslambda.Function) awscloudwatch.IMetric { return f.MetricErrors(fiveMinutes("Sum")) })...),
			graph("Function throttles", perFunction(func(f awslambda.Function) awscloudwatch.IMetric { return f.MetricThrottles(fiveMinutes("Sum")) })...)},
		{graph("Function duration p99 (ms)", perFunction(func(f awslambda.Function) awscloudwatch.IMetric { return f.MetricDuration(fiveMinutes("p99")) })...),
			graph("DynamoDB throttled requests", throttled)},
		{graph("DynamoDB system errors", systemErrors), graph("Queue age of oldest message (s)", ages...)},
	}
	last := []awscloudwatch.IWidget{graph("Dead-letter messages", dead...)}
	if o.router != nil {
		last = append(last, graph("Stream router iterator age (ms)", o.router.Metric(jsii.String("IteratorAge"), fiveMinutes("Maximum"))))
	}
	rows = append(rows, last,
		[]awscloudwatch.IWidget{graph("Requests by operation", search("requests", httpapi.MetricDimension, httpapi.MetricDuration, "SampleCount")),
			graph("Refusals (429) and errors", own(httpapi.MetricRefused, "Sum", 5), own(httpapi.MetricErrors4xx, "Sum", 5), own(httpapi.MetricErrors5xx, "Sum", 5))},
		[]awscloudwatch.IWidget{graph("Latency p99 by operation (ms)", search("p99", httpapi.MetricDimension, httpapi.MetricDuration, "p99")),
			graph("Capacity units by operation", search("capacity", httpapi.MetricDimension, httpapi.MetricCapacity, "Sum"))},
		[]awscloudwatch.IWidget{graph("Webhook attempts by outcome", search("attempts", webhook.MetricDimension, webhook.MetricLag, "SampleCount")),
			graph("Webhook delivery lag (ms)", lag, own(webhook.MetricLag, "Maximum", 5))},
	)
	widgets := make([]*[]awscloudwatch.IWidget, len(rows))
	for i := range rows {
		widgets[i] = &rows[i]
	}
	awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String(prefix),
		Widgets:       &widgets,
	})
}
