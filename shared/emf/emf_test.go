package emf

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

// The block is valid JSON of the format's shape, and a line logged with it
// carries it as its top-level "_aws" member.
func TestBlockShape(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	at := time.Date(2026, 11, 26, 12, 0, 0, 5e6, time.UTC) // clocktest:literal: a fixed instant
	b := Block{Namespace: `sellerapi/"prod"`, Time: at, Dimension: "operation",
		Metrics: []Metric{{Name: "duration_ms", Unit: "Milliseconds"}, {Name: "round_trips"}}}
	log.Info("request", slog.String("operation", "getVendor"), slog.Float64("duration_ms", 1.5), slog.Int("round_trips", 1), b.Attr())
	var line struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []map[string]string
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%s: %v", buf.Bytes(), err)
	}
	d := line.AWS.CloudWatchMetrics
	if line.AWS.Timestamp != at.UnixMilli() || len(d) != 1 || d[0].Namespace != `sellerapi/"prod"` ||
		!reflect.DeepEqual(d[0].Dimensions, [][]string{{"operation"}, {}}) ||
		!reflect.DeepEqual(d[0].Metrics, []map[string]string{{"Name": "duration_ms", "Unit": "Milliseconds"}, {"Name": "round_trips"}}) {
		t.Errorf("block %s", buf.Bytes())
	}
}
