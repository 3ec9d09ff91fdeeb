// Command stream-router is the Lambda on the table's DynamoDB stream: it
// turns each batch of records into store changes and sends the work they
// call for (webhook deliveries and seller orders for new events, replays,
// bulk operations, sync jobs) to the SQS work queues, by the rules of the
// works registered in shared/app.
// A batch that stops routing at a record reports that record's sequence
// number as its failure, so Lambda retries from there.
package main

import "github.com/moku/sellerapi/shared/lambdaapi"

func main() { lambdaapi.StreamRouterMain("stream-router") }
