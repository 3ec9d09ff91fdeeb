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

// Markers go with the share of events a subscription receives: a write
// measured without its markers (the benchmark's vendor has no
// subscription) is billed webhookShare of what they would have cost, and
// the router's work on an event is the marked and unmarked measures
// weighed by the same share.
func TestMarkersFollowTheDeliveredShare(t *testing.T) {
	write := op{name: "adjust-inventory", m: map[string]float64{"rru/op": 3, "wru/op": 10, "unmarked-wru/op": 2}}
	if got, want := price(write, 1).wru, 10+webhookShare*2+1; got != want {
		t.Errorf("a write without its markers: %v write units, want %v", got, want)
	}
	bg := map[string]float64{"route-rru/op": 4, "route-wru/op": 1, "route-waits/op": 2,
		"route-unmarked-rru/op": 4, "route-unmarked-wru/op": 0, "route-unmarked-waits/op": 1}
	router, _ := backgroundCost(bg)
	if want := webhookShare * 1; router.wru != want || router.rru != 4 {
		t.Errorf("the router on an event: %v read and %v write units, want 4 and %v", router.rru, router.wru, want)
	}
	if want := webhookShare*lambdaCost(2*roundTripMS) + (1-webhookShare)*lambdaCost(roundTripMS); router.lambda != want {
		t.Errorf("the router's invocation: %v, want %v", router.lambda, want)
	}
	// A benchmark run before markers followed the share: every event marked.
	delete(bg, "route-unmarked-wru/op")
	if router, _ := backgroundCost(bg); router.wru != 1 {
		t.Errorf("the router on an older benchmark's event: %v write units, want 1", router.wru)
	}
}
