package main

import "testing"

// The router's sends are billed ten messages to a request: one
// subscription an event costs a request a delivery, as before batches;
// many share them.
func TestSendRequests(t *testing.T) {
	for _, c := range []struct {
		subs     int
		requests float64
	}{{1, 1}, {9, 1}, {10, 1}, {11, 2}, {20, 2}, {25, 3}} {
		if got := sendRequests(c.subs); got != c.requests {
			t.Errorf("%d subscriptions: %v send requests, want %v", c.subs, got, c.requests)
		}
	}
	if got := deliverySQS(1); got != 3 {
		t.Errorf("one subscription an event: %v SQS requests a delivery, want 3 (send, receive, delete)", got)
	}
	if got := deliverySQS(20); got != 2.1 {
		t.Errorf("20 subscriptions an event: %v SQS requests a delivery, want 2.1", got)
	}
}
