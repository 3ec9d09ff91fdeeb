package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/moku/sellerapi/shared/emf"
)

// Metric names of the request line (docs/operations.md, "Metrics"): the
// line's own duration_ms and round_trips, the capacity units the store
// reported, and, only on the lines they describe, a 4xx, a 5xx and a 429
// refusal (a 429 counts as a 4xx too). Requests are duration_ms's sample
// count. Their dimension is the operation: one of the contract's, never an
// id.
const (
	MetricDuration   = "duration_ms"
	MetricRoundTrips = "round_trips"
	MetricCapacity   = "capacity"
	MetricErrors4xx  = "errors_4xx"
	MetricErrors5xx  = "errors_5xx"
	MetricRefused    = "refused"
	// MetricDimension is the line's member the metrics are published by.
	MetricDimension = "operation"
)

// metrics adds the capacity, the error counts and the embedded metric
// metadata to the request line's attributes.
func (c *Call) metrics(attrs []slog.Attr, namespace string) []slog.Attr {
	ms := make([]emf.Metric, 3, 5)
	ms[0] = emf.Metric{Name: MetricDuration, Unit: "Milliseconds"}
	ms[1] = emf.Metric{Name: MetricRoundTrips}
	ms[2] = emf.Metric{Name: MetricCapacity}
	read, write := c.roundTrips.Capacity()
	attrs = append(attrs, slog.Float64(MetricCapacity, read+write))
	switch status := c.rec.status; {
	case status >= 500:
		ms = append(ms, emf.Metric{Name: MetricErrors5xx})
		attrs = append(attrs, slog.Int(MetricErrors5xx, 1))
	case status >= 400:
		ms = append(ms, emf.Metric{Name: MetricErrors4xx})
		attrs = append(attrs, slog.Int(MetricErrors4xx, 1))
		if status == http.StatusTooManyRequests {
			ms = append(ms, emf.Metric{Name: MetricRefused})
			attrs = append(attrs, slog.Int(MetricRefused, 1))
		}
	}
	now := c.start
	if c.s.deps.Clock != nil {
		now = c.s.deps.Clock.Now()
	}
	return append(attrs, emf.Block{Namespace: namespace, Time: now, Dimension: MetricDimension, Metrics: ms}.Attr())
}
