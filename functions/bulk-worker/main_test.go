package main

import (
	"encoding/json"
	"testing"

	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/queue"
)

// TestSampleEvent keeps events/bulk-worker/bulk-operation.json a batch as the queue's event
// source mapping delivers it, whose body is the work's JSON message.
func TestSampleEvent(t *testing.T) {
	ev := lambdatest.SQSEvent(t, "bulk-worker/bulk-operation.json", queue.BulkOperations)
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &body); err != nil {
		t.Fatalf("body: %v", err)
	}
	for _, k := range []string{"vendor_id", "bulk_operation_id"} {
		if body[k] == nil {
			t.Errorf("body %s has no %s", ev.Records[0].Body, k)
		}
	}
}
