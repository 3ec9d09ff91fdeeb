// Package emf writes CloudWatch's embedded metric format: the "_aws"
// member of a JSON log line that tells CloudWatch Logs which of the line's
// other members are metrics, in which namespace and by which dimensions.
// The line is the one the service writes anyway; the metrics cost no call.
package emf

import (
	"log/slog"
	"strconv"
	"time"
)

// Key is the member that holds the metadata.
const Key = "_aws"

// Metric names a numeric member of the line; Unit is CloudWatch's
// ("Milliseconds", "Count"; empty: none).
type Metric struct{ Name, Unit string }

// Block is the metadata of one line. Each metric is published twice: by
// Dimension (a member of the line holding a string from a small, fixed
// set, never an id) and across all of them, so that an alarm can watch
// the total.
type Block struct {
	Namespace string
	Time      time.Time
	Dimension string
	Metrics   []Metric
}

// MarshalJSON writes the block compactly, without reflection.
func (b Block) MarshalJSON() ([]byte, error) {
	out := make([]byte, 0, 96+48*len(b.Metrics))
	out = append(out, `{"Timestamp":`...)
	out = strconv.AppendInt(out, b.Time.UnixMilli(), 10)
	out = append(out, `,"CloudWatchMetrics":[{"Namespace":`...)
	out = strconv.AppendQuote(out, b.Namespace)
	out = append(out, `,"Dimensions":[[`...)
	out = strconv.AppendQuote(out, b.Dimension)
	out = append(out, `],[]],"Metrics":[`...)
	for i, m := range b.Metrics {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"Name":`...)
		out = strconv.AppendQuote(out, m.Name)
		if m.Unit != "" {
			out = append(out, `,"Unit":`...)
			out = strconv.AppendQuote(out, m.Unit)
		}
		out = append(out, '}')
	}
	return append(out, "]}]}"...), nil
}

// Attr is the block as the line's "_aws" attribute.
func (b Block) Attr() slog.Attr { return slog.Any(Key, b) }
