package main

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"
)

// report is what the well-behaved vendors saw, and what the server spent.
type report struct {
	requests, refused429, errors5xx, transport int
	p50, p99, worstP99                         time.Duration
	worstVendor                                int

	expected, delivered, undelivered, dupes int
	counted                                 int // deliveries of events written after the warm-up
	dp50, dp99                              time.Duration

	forged401, forgedOther int
	crafted, crafted400    int
	craftedMax             time.Duration
	tarpitHits, replays    int64

	allRequests int64
	cpu         time.Duration
	rssPeak     int64

	segments *segments // the deployed shape's trace, joined (segments.go)
}

// counted is the receipts of the events written from the end of the
// warm-up on. The caller holds l.mu.
func (l *load) counted(from time.Time) map[string]receipt {
	m := make(map[string]receipt, len(l.received))
	for id, d := range l.received {
		if !d.created.Before(from) {
			m[id] = d
		}
	}
	return m
}

// report sums what the well-behaved saw from the end of the warm-up (from)
// on; undelivered events are counted over the whole run.
func (l *load) report(from time.Time, undelivered, expected int, all int64, cpu time.Duration, rss int64) *report {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &report{allRequests: all, cpu: cpu, rssPeak: rss, undelivered: undelivered, expected: expected, dupes: l.dupes, tarpitHits: l.tarpitHit.Load(), replays: l.replays.Load()}
	var lat []time.Duration
	per := map[int][]time.Duration{}
	for _, c := range l.calls {
		if c.at.Before(from) {
			continue
		}
		r.requests++
		switch {
		case c.err:
			r.transport++
		case c.status == http.StatusTooManyRequests:
			r.refused429++
		case c.status >= 500:
			r.errors5xx++
		}
		lat = append(lat, c.latency)
		per[c.vendor] = append(per[c.vendor], c.latency)
	}
	r.p50, r.p99 = quantile(lat, 0.5), quantile(lat, 0.99)
	for v, ls := range per {
		if p := quantile(ls, 0.99); p > r.worstP99 {
			r.worstP99, r.worstVendor = p, v
		}
	}
	var dl []time.Duration
	for _, d := range l.counted(from) {
		dl = append(dl, d.latency())
	}
	r.delivered, r.counted = len(l.received), len(dl)
	r.dp50, r.dp99 = quantile(dl, 0.5), quantile(dl, 0.99)
	for status, n := range l.forged {
		if status == http.StatusUnauthorized {
			r.forged401 += n
		} else {
			r.forgedOther += n
		}
	}
	for _, c := range l.crafted {
		if c.at.Before(from) {
			continue
		}
		r.crafted++
		if c.status == http.StatusBadRequest {
			r.crafted400++
		}
		r.craftedMax = max(r.craftedMax, c.latency)
	}
	return r
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(int(float64(len(d))*q), len(d)-1)]
}

func (r *report) print(w io.Writer, o options) {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
	s := func(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
	fmt.Fprintf(w, "\nMulti-tenant load, %s on %s: %d well-behaved vendors (%.0f%% subscribed, %d reads and %d writes a minute each), %d tarpit vendors with 20 subscriptions each, %d forgers at %d/s, %d crafted-image vendors, for %s after a warm-up of %s under the same load (not counted)\n\n",
		o.cli, time.Now().UTC().Format("2006-01-02"), o.vendors, o.subscribed*100, o.reads, o.writes, o.tarpits, o.forgers, o.forgeRate, o.crafted, o.duration, o.warmup)
	fmt.Fprintln(w, "| figure | well-behaved vendors | goal |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| API requests | %d | |\n", r.requests)
	fmt.Fprintf(w, "| API p50 / p99 | %s / %s | |\n", ms(r.p50), ms(r.p99))
	fmt.Fprintf(w, "| worst vendor's p99 | %s | |\n", ms(r.worstP99))
	fmt.Fprintf(w, "| 429 / 5xx / transport errors | %d / %d / %d | 0 / 0 / 0 |\n", r.refused429, r.errors5xx, r.transport)
	fmt.Fprintf(w, "| events delivered / in the log | %d / %d (duplicates %d) | all |\n", r.delivered, r.expected, r.dupes)
	fmt.Fprintf(w, "| undelivered events | %d | 0 |\n", r.undelivered)
	fmt.Fprintf(w, "| delivery p50 / p99 (the %d events written after the warm-up) | %s / %s | p99 < 2 s |\n", r.counted, s(r.dp50), s(r.dp99))
	fmt.Fprintf(w, "| forged bearers: 401 / other | %d / %d | all 401 |\n", r.forged401, r.forgedOther)
	fmt.Fprintf(w, "| crafted JPEGs: 400 / sent, slowest answer | %d / %d, %s | all 400 within seconds |\n", r.crafted400, r.crafted, s(r.craftedMax))
	fmt.Fprintf(w, "| tarpit deliveries started (their vendors also made %d replays) | %d | |\n", r.replays, r.tarpitHits)
	per := func(v float64) float64 { return v / max(float64(r.allRequests)/1000, 1e-9) }
	fmt.Fprintf(w, "| server CPU per 1,000 requests (all %d) | %.0f ms | |\n", r.allRequests, per(float64(r.cpu)/float64(time.Millisecond)))
	fmt.Fprintf(w, "| server resident memory, peak | %.0f MiB | |\n", float64(r.rssPeak)/(1<<20))
	if r.segments != nil {
		r.segments.print(w)
	}
}

// missed lists the goals the run did not meet.
func (r *report) missed() []string {
	var m []string
	if r.refused429 > 0 || r.errors5xx > 0 || r.transport > 0 {
		m = append(m, fmt.Sprintf("well-behaved vendors got %d 429s, %d 5xx and %d transport errors", r.refused429, r.errors5xx, r.transport))
	}
	if r.undelivered > 0 {
		m = append(m, fmt.Sprintf("%d events never delivered", r.undelivered))
	}
	if r.dp99 >= 2*time.Second {
		m = append(m, fmt.Sprintf("delivery p99 %s, goal under 2 s", r.dp99))
	}
	if r.forgedOther > 0 {
		m = append(m, fmt.Sprintf("%d forged bearers got something other than 401", r.forgedOther))
	}
	if r.crafted400 < r.crafted {
		m = append(m, fmt.Sprintf("%d of %d crafted JPEGs were not refused with 400", r.crafted-r.crafted400, r.crafted))
	}
	return m
}
