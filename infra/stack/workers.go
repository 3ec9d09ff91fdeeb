package stack

// The stream router and the workers: the queues, their dead-letter queues,
// the event source mappings and the router's sweep.

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/app"
)

// StreamFilter is the stream-router mapping's event filter: inserts of the
// items whose insertion starts work (app.Routed, which the router applies
// to itself too), so that the table's other changes, most of them, do not
// invoke the router.
func StreamFilter() *map[string]any {
	var prefixes []any
	for _, p := range app.Routed() {
		prefixes = append(prefixes, map[string]any{"prefix": p})
	}
	return awslambda.FilterCriteria_Filter(&map[string]any{
		"eventName": []any{"INSERT"},
		"dynamodb":  map[string]any{"Keys": map[string]any{"sk": map[string]any{"S": prefixes}}},
	})
}

// StreamParallelization is how many batches of one stream shard the
// router's mapping processes at once (ParallelizationFactor, 1..10). Lambda
// keeps each item's records in order, so a change's lane is fixed by its
// keys; the router's changes are inserts of distinct items and nothing it
// does depends on the order of two items' changes.
const StreamParallelization = 10

// workers adds the stream router and one queue, dead-letter queue and
// function per worker. The router reads the table's stream (partial batch
// responses, bisect on error, bounded retries, failed batches described in
// its own dead-letter queue), reads items and may send to every worker's
// queue; each worker consumes its queue with partial batch responses,
// reads and writes items, and sends only to the queues it names.
func (s *Stack) workers(d Definition, fn functionMaker) {
	st := s.Stack
	newDLQ := func(name string) awssqs.Queue {
		q := awssqs.NewQueue(st, jsii.String(name+"DLQ"), &awssqs.QueueProps{
			QueueName:       jsii.String(s.Names.DeadLetterQueue(name)),
			RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
			Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:      jsii.Bool(true),
		})
		s.observeDeadLetters(name, q)
		return q
	}

	// Queues first, so that a worker can be told another's URL.
	queueURLs := map[string]*string{}
	queues := map[string]awssqs.Queue{}
	all := d.queues()
	for _, w := range all {
		timeout, receives := w.Timeout, w.MaxReceiveCount
		if timeout == 0 {
			timeout = time.Minute
		}
		if receives == 0 {
			receives = 5
		}
		dlq := newDLQ(w.Name)
		q := awssqs.NewQueue(st, jsii.String(w.Name+"Queue"), &awssqs.QueueProps{
			QueueName:         jsii.String(s.Names.Queue(w.Name)),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(6 * timeout.Seconds())),
			Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
			EnforceSSL:        jsii.Bool(true),
			DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(receives))},
		})
		queueURLs[w.QueueURLEnv] = q.QueueUrl()
		queues[w.Name] = q
		oldest := w.OldestAlarm
		if oldest == 0 {
			oldest = 15 * time.Minute
		}
		s.observeQueue(w.Name, q, oldest.Seconds())
	}
	for _, w := range d.Workers {
		timeout := w.Timeout
		if timeout == 0 {
			timeout = time.Minute
		}
		f := fn(w.Name, "Seller Platform API: the "+w.Name, timeout, queueURLs, true)
		if w.Secrets {
			s.grantSecretKey(f)
		}
		if w.Delivers {
			s.deliverers = append(s.deliverers, f)
		}
		for _, to := range w.SendsTo {
			queues[to].GrantSendMessages(f)
		}
		for _, q := range w.queues() {
			batch, concurrency := q.BatchSize, q.MaxConcurrency
			if batch == 0 {
				batch = 10
			}
			if concurrency == 0 {
				concurrency = 5
			}
			s.Targets[w.Name].AddEventSource(awslambdaeventsources.NewSqsEventSource(queues[q.Name], &awslambdaeventsources.SqsEventSourceProps{
				BatchSize:               jsii.Number(float64(batch)),
				ReportBatchItemFailures: jsii.Bool(true),
				MaxConcurrency:          jsii.Number(float64(concurrency)),
			}))
		}
	}

	// A shard is read in StreamParallelization lanes: one vendor's slow
	// fan-out holds the lane its items hash to, not every change behind it
	// (decisions.md, "The stream router's mapping reads a shard in lanes").
	router := fn(d.StreamRouter, "Seller Platform API: sends the table's new events and jobs to the workers' queues", time.Minute, queueURLs, false)
	router.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("TableReadsAndMarkers"),
		Actions:   jsii.Strings(RouterActions...),
		Resources: &[]*string{s.Table.TableArn()},
	}))
	s.grantTableKey(router)
	for _, w := range all {
		queues[w.Name].GrantSendMessages(router)
	}
	s.observeRouter(d.StreamRouter, router)
	failed := newDLQ(d.StreamRouter)
	s.Targets[d.StreamRouter].AddEventSource(awslambdaeventsources.NewDynamoEventSource(s.Table, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(100),
		ParallelizationFactor:   jsii.Number(StreamParallelization),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(5),
		MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(24)),
		ReportBatchItemFailures: jsii.Bool(true),
		OnFailure:               awslambdaeventsources.NewSqsDlq(failed),
		Filters:                 &[]*map[string]any{StreamFilter()},
	}))
	if d.Sweep > 0 {
		// The mapping gives up on a change after its retries or a day; the
		// sweep routes it later (pipeline.Sweep). Sweeps may overlap: a
		// change routed twice does its work once.
		awsevents.NewRule(st, jsii.String("StreamSweepSchedule"), &awsevents.RuleProps{
			RuleName:    jsii.String(s.Names.Function(d.StreamRouter) + "-sweep"),
			Description: jsii.String("Asks " + s.Names.Function(d.StreamRouter) + " every " + d.Sweep.String() + " to route what its stream did not"),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(d.Sweep.Minutes()))),
			Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.Targets[d.StreamRouter], &awseventstargets.LambdaFunctionProps{
				Event:         awsevents.RuleTargetInput_FromObject(map[string]any{"sweep": map[string]any{}}),
				RetryAttempts: jsii.Number(2),
				MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(d.Sweep.Seconds())),
			})},
		})
	}
}
