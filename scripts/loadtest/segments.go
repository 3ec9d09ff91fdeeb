package main

// Where a delivery's time goes in the deployed shape: bin/cloud's trace
// (serve --trace, scripts/cloud/trace.go) joined with the fast receiver's
// receipts, each well-behaved delivery's latency cut into segments:
//
//	written   → stream read    the stream poller's lag (created_at → the poller read the record)
//	stream    → router invoked the record waiting behind the router's earlier batches
//	router    → sent           the router's invocation until it sent the delivery's message
//	hops                       the messages before the one that delivered (moves to the slow lane, deferrals)
//	sent      → received       the message's wait in its queue
//	received  → invoked        the poller's hand-over to a worker invocation
//	invoked   → receiver       the worker's invocation until the receiver had the request
//
// and, per function, the invocations made while the load ran: how many
// started a process (cold) and the warm and cold times.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// traceLine is the part of a trace line the segments need.
type traceLine struct {
	Kind     string  `json:"k"`
	SK       string  `json:"sk"`
	Queue    string  `json:"queue"`
	Event    string  `json:"event"`
	Lane     string  `json:"lane"`
	Deferred int     `json:"deferrals"`
	Attempt  int     `json:"attempt"`
	Sent     int64   `json:"sent"`
	Batch    int     `json:"batch"`
	Fetched  int64   `json:"fetched"`
	Invoked  int64   `json:"invoked"`
	Done     int64   `json:"done"`
	Failed   bool    `json:"failed"`
	Function string  `json:"fn"`
	Cold     bool    `json:"cold"`
	Start    int64   `json:"start"`
	Took     float64 `json:"took_ms"`
	Describe float64 `json:"describe_ms"`
	Get      float64 `json:"get_ms"`
}

const eventPrefix = "EVENT#" // datamodel.EventPrefix

var segmentNames = []string{
	"written → stream read",
	"stream read → router invoked",
	"router invoked → message sent",
	"earlier hops (slow-lane moves, deferrals)",
	"sent → received by a poller (queue wait)",
	"received → worker invoked",
	"worker invoked → receiver got it",
}

// segments is the trace's account of the deliveries.
type segments struct {
	joined, unjoined int
	hops             map[int]int // messages an event took → events
	each             [][]time.Duration
	slowest          []slowDelivery
	invokes          []invokeStats
	batch            []int // messages per fresh-lane invocation that delivered
	// the stream poller's iterations while the load ran: each whole, its
	// DescribeStream calls (when it made one) and its GetRecords calls.
	polls, describes, gets []time.Duration
}

type slowDelivery struct {
	total time.Duration
	segs  []time.Duration
	path  string
}

type invokeStats struct {
	fn         string
	cold, warm []time.Duration
}

// readSegments joins the trace at path with the receipts; invocations
// count when they started within [from, to].
func readSegments(path string, received map[string]receipt, from, to time.Time) (*segments, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseSegments(f, received, from, to)
}

func parseSegments(r io.Reader, received map[string]receipt, from, to time.Time) (*segments, error) {
	s := &segments{hops: map[int]int{}, each: make([][]time.Duration, len(segmentNames))}
	stream := map[string]traceLine{} // event id → its record's line
	msgs := map[string][]traceLine{} // event id → its messages' lines
	inv := map[string]*invokeStats{} // function → its invocations
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		var l traceLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		switch l.Kind {
		case "stream":
			if id, ok := strings.CutPrefix(l.SK, eventPrefix); ok {
				if _, seen := received[id]; seen && !l.Failed {
					stream[id] = l
				}
			}
		case "sqs":
			if _, seen := received[l.Event]; seen {
				msgs[l.Event] = append(msgs[l.Event], l)
			}
		case "poll":
			if at := time.UnixMilli(l.Start); at.Before(from) || at.After(to) {
				continue
			}
			s.polls = append(s.polls, msDuration(l.Took))
			s.gets = append(s.gets, msDuration(l.Get))
			if l.Describe > 0 {
				s.describes = append(s.describes, msDuration(l.Describe))
			}
		case "invoke":
			at := time.UnixMilli(l.Start)
			if at.Before(from) || at.After(to) {
				continue
			}
			st := inv[l.Function]
			if st == nil {
				st = &invokeStats{fn: l.Function}
				inv[l.Function] = st
			}
			d := msDuration(l.Took)
			if l.Cold {
				st.cold = append(st.cold, d)
			} else {
				st.warm = append(st.warm, d)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	ms := func(t int64) time.Time { return time.UnixMilli(t) }
	for id, rc := range received {
		st, ok := stream[id]
		ms0 := msgs[id]
		if !ok || len(ms0) == 0 {
			s.unjoined++
			continue
		}
		sort.Slice(ms0, func(i, j int) bool { return ms0[i].Sent < ms0[j].Sent })
		// The message that delivered: the last whose invocation began
		// before the receipt.
		last := -1
		for i, m := range ms0 {
			if !ms(m.Invoked).After(rc.at) {
				last = i
			}
		}
		if last < 0 {
			s.unjoined++
			continue
		}
		m := ms0[last]
		first := ms0[0]
		segs := []time.Duration{
			ms(st.Fetched).Sub(rc.created),
			ms(st.Invoked).Sub(ms(st.Fetched)),
			ms(first.Sent).Sub(ms(st.Invoked)),
			ms(m.Sent).Sub(ms(first.Sent)),
			ms(m.Fetched).Sub(ms(m.Sent)),
			ms(m.Invoked).Sub(ms(m.Fetched)),
			rc.at.Sub(ms(m.Invoked)),
		}
		s.joined++
		s.hops[last+1]++
		if m.Lane == "" {
			s.batch = append(s.batch, m.Batch)
		}
		for i, d := range segs {
			s.each[i] = append(s.each[i], d)
		}
		var path []string
		for _, x := range ms0[:last+1] {
			lane := "fresh"
			if x.Lane != "" {
				lane = x.Lane
			}
			path = append(path, fmt.Sprintf("%s(a%d,d%d,batch %d)", lane, x.Attempt, x.Deferred, x.Batch))
		}
		s.slowest = append(s.slowest, slowDelivery{total: rc.latency(), segs: segs, path: strings.Join(path, " → ")})
	}
	sort.Slice(s.slowest, func(i, j int) bool { return s.slowest[i].total > s.slowest[j].total })
	s.slowest = s.slowest[:min(len(s.slowest), 8)]
	for _, st := range inv {
		s.invokes = append(s.invokes, *st)
	}
	sort.Slice(s.invokes, func(i, j int) bool { return s.invokes[i].fn < s.invokes[j].fn })
	return s, nil
}

func (s *segments) print(w io.Writer) {
	sec := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	fmt.Fprintf(w, "\nWhere the well-behaved deliveries' time went (bin/cloud's trace; %d deliveries joined, %d not found in it):\n\n", s.joined, s.unjoined)
	fmt.Fprintln(w, "| segment | p50 | p99 | max |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for i, name := range segmentNames {
		d := slices.Clone(s.each[i])
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, sec(quantile(d, 0.5)), sec(quantile(d, 0.99)), sec(quantile(d, 1)))
	}
	var hops []string
	for _, n := range slices.Sorted(maps.Keys(s.hops)) {
		hops = append(hops, fmt.Sprintf("%d message(s): %d", n, s.hops[n]))
	}
	b := make([]time.Duration, len(s.batch))
	for i, n := range s.batch {
		b[i] = time.Duration(n)
	}
	fmt.Fprintf(w, "\nMessages per delivered event: %s. Fresh-lane batch size of the delivering invocation: p50 %d, p99 %d.\n", strings.Join(hops, ", "), quantile(b, 0.5), quantile(b, 0.99))
	msf := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
	fmt.Fprintf(w, "The stream poller while the load ran: %d polls, p50 %s, p99 %s; DescribeStream %d calls, p50 %s, p99 %s; GetRecords p50 %s, p99 %s a poll.\n",
		len(s.polls), msf(quantile(s.polls, 0.5)), msf(quantile(s.polls, 0.99)), len(s.describes), msf(quantile(s.describes, 0.5)), msf(quantile(s.describes, 0.99)), msf(quantile(s.gets, 0.5)), msf(quantile(s.gets, 0.99)))
	fmt.Fprintln(w, "\nThe slowest deliveries, by segment (s):")
	for _, d := range s.slowest {
		var parts []string
		for _, x := range d.segs {
			parts = append(parts, fmt.Sprintf("%.2f", x.Seconds()))
		}
		fmt.Fprintf(w, "  %s: %s via %s\n", sec(d.total), strings.Join(parts, " / "), d.path)
	}
	fmt.Fprintln(w, "\nInvocations while the load ran:")
	fmt.Fprintln(w, "| function | warm | warm p50 | warm p99 | cold | cold p50 | cold max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, st := range s.invokes {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %d | %s | %s |\n", st.fn, len(st.warm), msf(quantile(st.warm, 0.5)), msf(quantile(st.warm, 0.99)), len(st.cold), msf(quantile(st.cold, 0.5)), msf(quantile(st.cold, 1)))
	}
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }
