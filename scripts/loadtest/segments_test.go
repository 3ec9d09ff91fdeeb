package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A delivery's latency is cut where the trace says: the stream's read and
// invocation, the router's send, the hops of a deferred attempt, the wait
// of the message that delivered and its worker's invocation; the segments
// add up to the whole, and invocations outside the load are not counted.
func TestSegmentsJoinTheTrace(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	at := func(ms int64) string { return strconv.FormatInt(t0.UnixMilli()+ms, 10) }
	trace := strings.Join([]string{
		`{"k":"stream","sk":"EVENT#evt_1","fetched":` + at(300) + `,"invoked":` + at(500) + `,"done":` + at(900) + `}`,
		`{"k":"stream","sk":"EVENT#evt_other","fetched":` + at(300) + `,"invoked":` + at(500) + `,"done":` + at(900) + `}`,
		// The first message was deferred into the slow lane; the second delivered.
		`{"k":"sqs","queue":"q","event":"evt_1","attempt":1,"sent":` + at(700) + `,"fetched":` + at(1000) + `,"invoked":` + at(1100) + `,"done":` + at(1300) + `,"batch":3}`,
		`{"k":"sqs","queue":"s","event":"evt_1","attempt":1,"lane":"slow","deferrals":1,"sent":` + at(1250) + `,"fetched":` + at(4000) + `,"invoked":` + at(4200) + `,"done":` + at(4500) + `,"batch":1}`,
		`{"k":"invoke","fn":"webhook-worker","start":` + at(1100) + `,"took_ms":200}`,
		`{"k":"invoke","fn":"webhook-worker","cold":true,"start":` + at(4200) + `,"took_ms":300}`,
		`{"k":"invoke","fn":"webhook-worker","start":` + at(999_000) + `,"took_ms":5}`,
		`{"k":"poll","start":` + at(2000) + `,"took_ms":300,"describe_ms":100,"get_ms":50,"batch":2}`,
		`{"k":"poll","start":` + at(2300) + `,"took_ms":40,"get_ms":30}`,
		`not a line`,
	}, "\n")
	received := map[string]receipt{
		"evt_1":       {created: t0, at: t0.Add(4400 * time.Millisecond)},
		"evt_missing": {created: t0, at: t0.Add(time.Second)},
	}
	s, err := parseSegments(strings.NewReader(trace), received, t0, t0.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s.joined != 1 || s.unjoined != 1 {
		t.Fatalf("joined %d, not found %d; want 1 and 1", s.joined, s.unjoined)
	}
	want := []time.Duration{300, 200, 200, 550, 2750, 200, 200}
	var sum time.Duration
	for i, w := range want {
		if got := s.each[i][0]; got != w*time.Millisecond {
			t.Errorf("segment %q: %v, want %v", segmentNames[i], got, w*time.Millisecond)
		}
		sum += s.each[i][0]
	}
	if sum != 4400*time.Millisecond {
		t.Errorf("the segments add up to %v, want the delivery's 4.4 s", sum)
	}
	if s.hops[2] != 1 {
		t.Errorf("hops %v, want one event delivered by its second message", s.hops)
	}
	if len(s.invokes) != 1 || len(s.invokes[0].warm) != 1 || len(s.invokes[0].cold) != 1 {
		t.Errorf("invocations %+v, want the worker's one warm and one cold within the load", s.invokes)
	}
	if len(s.polls) != 2 || len(s.describes) != 1 || s.describes[0] != 100*time.Millisecond {
		t.Errorf("polls %v, describes %v; want two polls, one of them describing for 100 ms", s.polls, s.describes)
	}
	var out bytes.Buffer
	s.print(&out)
	for _, w := range []string{"1 deliveries joined, 1 not found", "| sent → received by a poller (queue wait) | 2.75 s |", "slow(a1,d1,batch 1)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("the printout lacks %q:\n%s", w, out.String())
		}
	}
}
