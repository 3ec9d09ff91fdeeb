package webhook

import (
	"log/slog"
	"time"

	"github.com/moku/sellerapi/shared/emf"
)

// Metric names of an attempt's line (docs/operations.md, "Metrics"), by
// its outcome (succeeded, failed, dead) and in total: MetricLag is how late
// the attempt was made after it fell due (queue wait and slot deferrals;
// a retry's own backoff is not lag), the line's duration_ms how long the
// receiver took. Attempts per outcome are the lag's sample count.
const (
	MetricLag      = "lag_ms"
	MetricDuration = "duration_ms"
	// MetricDimension is the line's member the metrics are published by.
	MetricDimension = "outcome"
)

// metrics are the attributes that make the attempt's line carry its
// metrics; the line itself carries duration_ms only when it succeeded, so
// it is given here for every outcome.
func (d Deliverer) metrics(m Message, rec Attempt, now time.Time) []any {
	ms := []emf.Metric{{Name: MetricLag, Unit: "Milliseconds"}}
	attrs := []any{slog.String(MetricDimension, rec.Outcome), slog.Int64(MetricLag, max(now.Sub(m.NotBefore), 0).Milliseconds())}
	if rec.Outcome != OutcomeSucceeded {
		attrs = append(attrs, slog.Int64(MetricDuration, rec.DurationMS))
	}
	ms = append(ms, emf.Metric{Name: MetricDuration, Unit: "Milliseconds"})
	return append(attrs, emf.Block{Namespace: d.MetricsNamespace, Time: now, Dimension: MetricDimension, Metrics: ms}.Attr())
}
