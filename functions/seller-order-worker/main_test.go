package main

import (
	"encoding/json"
	"testing"

	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/queue"
)

// TestSampleEvent keeps events/seller-order-worker/committed.json a batch
// as the queue's event source mapping delivers it, whose body is the event
// the projection applies.
func TestSampleEvent(t *testing.T) {
	ev := lambdatest.SQSEvent(t, "seller-order-worker/committed.json", queue.SellerOrders)
	var body map[string]any
	if err := json.Unmarshal([]byte(ev.Records[0].Body), &body); err != nil {
		t.Fatalf("body: %v", err)
	}
	for _, k := range []string{"id", "type", "vendor_id", "resource", "data"} {
		if body[k] == nil {
			t.Errorf("body %s has no %s", ev.Records[0].Body, k)
		}
	}
}
