package main

import (
	"testing"

	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestSampleEvent keeps events/webhook-slow-worker/delivery.json a batch as
// the slow lane's event source mapping delivers it: a retry, whose body is
// the delivery's JSON message in the slow lane.
func TestSampleEvent(t *testing.T) {
	lambdatest.SQSSample(t, "webhook-slow-worker/delivery.json", work, "vendor_id", "event_id", "subscription_id", "delivery_id", "attempt", "lane")
}
