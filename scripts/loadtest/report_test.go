package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
)

// The warm-up's requests and deliveries are not in the figures; every
// event still counts as delivered or not.
func TestReportCountsFromTheWarmupsEnd(t *testing.T) {
	from := clocktest.Date(2026, 1, 2, 3, 4, 5)
	before, after := from.Add(-time.Second), from.Add(time.Second)
	l := &load{received: map[string]receipt{
		"evt_warm": {created: before, at: before.Add(9 * time.Second)},
		"evt_1":    {created: after, at: after.Add(100 * time.Millisecond)},
	}, forged: map[int]int{}}
	l.calls = []call{
		{at: before, status: http.StatusTooManyRequests, latency: 5 * time.Second},
		{at: after, status: http.StatusOK, latency: 10 * time.Millisecond},
	}
	l.crafted = []call{{at: before, status: http.StatusInternalServerError}, {at: after, status: http.StatusBadRequest}}
	r := l.report(from, 0, 2, 2, time.Second, 0)
	if r.requests != 1 || r.refused429 != 0 || r.p99 != 10*time.Millisecond {
		t.Errorf("requests %d, 429s %d, p99 %s: want the one after the warm-up, 0, 10ms", r.requests, r.refused429, r.p99)
	}
	if r.delivered != 2 || r.counted != 1 || r.dp99 != 100*time.Millisecond {
		t.Errorf("delivered %d, counted %d, p99 %s: want 2, 1, 100ms", r.delivered, r.counted, r.dp99)
	}
	if r.crafted != 1 || r.crafted400 != 1 {
		t.Errorf("crafted %d, 400s %d: want 1 and 1", r.crafted, r.crafted400)
	}
}
