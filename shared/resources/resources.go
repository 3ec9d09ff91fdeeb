// Package resources names the AWS resources of one stage of the service:
// the stack, the table, the media bucket and the functions. The CDK stack
// (infra/) and the LocalStack bootstrap (localstack/bootstrap) both take
// their names from here, so a table created locally is the one the deployed
// functions would use. Environment variable names live in shared/config.
package resources

import (
	"fmt"
	"regexp"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/queue"
)

// Service prefixes every name.
const Service = "sellerapi"

// LocalStage is the stage of LocalStack and the emulators.
const LocalStage = "local"

// MaxStageLen keeps the longest derived name, the media bucket
// (sellerapi-<stage>-media-<12-digit account>-<region>), within S3's 63
// characters for every region name.
const MaxStageLen = 16

var stagePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)

// Names are the names of one stage's resources.
type Names struct{ Stage string }

// For returns the names of stage after checking it: lowercase letters,
// digits and single inner hyphens, starting with a letter, at most
// MaxStageLen characters (it becomes part of a bucket name).
func For(stage string) (Names, error) {
	if len(stage) > MaxStageLen || !stagePattern.MatchString(stage) {
		return Names{}, fmt.Errorf("resources: stage %q must be 1 to %d lowercase letters, digits and single hyphens, starting with a letter", stage, MaxStageLen)
	}
	return Names{Stage: stage}, nil
}

func (n Names) prefix() string { return Service + "-" + n.Stage }

// Stack is the CloudFormation stack's name.
func (n Names) Stack() string { return n.prefix() }

// Table is the DynamoDB table's name (SELLERAPI_TABLE of every function).
func (n Names) Table() string { return n.prefix() }

// MediaBucket is the S3 media bucket's name. Bucket names are global, so it
// carries the account and region; in the stack they are CloudFormation
// tokens, locally LocalStack's account 000000000000 and the SDK's region.
func (n Names) MediaBucket(account, region string) string {
	return n.prefix() + "-media-" + account + "-" + region
}

// Function is the Lambda function's name for the folder fn in functions/,
// which is what `aws lambda invoke --function-name` takes.
func (n Names) Function(fn string) string { return n.prefix() + "-" + fn }

// LogGroup is the function's CloudWatch log group.
func (n Names) LogGroup(fn string) string { return "/aws/lambda/" + n.Function(fn) }

// API is the HTTP API's name.
func (n Names) API() string { return n.prefix() + "-api" }

// AlarmTopic is the SNS topic every alarm notifies.
func (n Names) AlarmTopic() string { return n.prefix() + "-alarms" }

// Queue is the SQS queue of a worker; DeadLetterQueue its dead letters.
func (n Names) Queue(worker string) string { return n.prefix() + "-" + worker }

// DeadLetterQueue is where a worker's failed messages end.
func (n Names) DeadLetterQueue(worker string) string { return n.prefix() + "-" + worker + "-dlq" }

// Worker is a work queue and its consumer: the name its SQS queues are
// named by (Names.Queue), the function that consumes it, the work queue
// (a queue.Name) and the variable that carries the queue's URL. A
// function's first queue is named for the function; another queue it
// drains (a lane) has a name of its own.
type Worker struct {
	Name     string
	Function string
	Queue    string
	URLEnv   string
}

// Workers lists the work queues; the stack deploys one queue and one
// dead-letter queue for each, and a function for each Function, and the
// LocalStack bootstrap creates the same queues.
func Workers() []Worker {
	return []Worker{
		{Name: "webhook-worker", Function: "webhook-worker", Queue: queue.WebhookDeliveries, URLEnv: config.EnvQueueURLWebhookDeliveries},
		{Name: "webhook-slow-lane", Function: "webhook-worker", Queue: queue.WebhookSlowLane, URLEnv: config.EnvQueueURLWebhookSlowLane},
		{Name: "replay-worker", Function: "replay-worker", Queue: queue.EventReplays, URLEnv: config.EnvQueueURLEventReplays},
		{Name: "bulk-worker", Function: "bulk-worker", Queue: queue.BulkOperations, URLEnv: config.EnvQueueURLBulkOperations},
		{Name: "seller-order-worker", Function: "seller-order-worker", Queue: queue.SellerOrders, URLEnv: config.EnvQueueURLSellerOrders},
		{Name: "sync-worker", Function: "sync-worker", Queue: queue.SyncJobs, URLEnv: config.EnvQueueURLSyncJobs},
	}
}
