package httpapi_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook"
)

// requestLines are the request lines logged so far, parsed.
func requestLines(t *testing.T, e *apitest.Env) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.Logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %s: %v", sc.Bytes(), err)
		}
		if line["msg"] == "request" {
			out = append(out, line)
		}
	}
	return out
}

// Each request line embeds CloudWatch metrics: duration, round trips and
// capacity by operation (and in total), plus a 4xx, 5xx or refusal count
// on the lines that are one; no id is a dimension, and the metadata is one
// compact block.
func TestRequestLinesEmbedMetrics(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := newEnv(t, kind, apitest.Options{Config: func(c *config.Config) { c.RateReads, c.MetricsNamespace = 1, "sellerapi/test" }})
		e.Get("/vendors/" + e.Vendor.ID)                                                          // 200
		e.Get("/vendors/"+e.Vendor.ID).WantProblem(t, 429, "RATE_LIMITED")                        // refused
		e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID}).WantProblem(t, 401, "UNAUTHENTICATED") // no credential
		lines := requestLines(t, e)
		if len(lines) != 3 {
			t.Fatalf("%d request lines, want 3:\n%s", len(lines), e.Logs.String())
		}
		want := []struct {
			status float64
			extra  []string
		}{{200, nil}, {429, []string{httpapi.MetricErrors4xx, httpapi.MetricRefused}}, {401, []string{httpapi.MetricErrors4xx}}}
		for i, line := range lines {
			if line["status"] != want[i].status {
				t.Fatalf("line %d: status %v, want %v", i, line["status"], want[i].status)
			}
			raw, _ := json.Marshal(line["_aws"])
			var aws struct {
				Timestamp         int64
				CloudWatchMetrics []struct {
					Namespace  string
					Dimensions [][]string
					Metrics    []struct{ Name, Unit string }
				}
			}
			if err := json.Unmarshal(raw, &aws); err != nil || len(aws.CloudWatchMetrics) != 1 {
				t.Fatalf("line %d: _aws %s (%v)", i, raw, err)
			}
			if aws.Timestamp != e.Clock.Now().UnixMilli() {
				t.Errorf("line %d: timestamp %d, want the clock's %d", i, aws.Timestamp, e.Clock.Now().UnixMilli())
			}
			d := aws.CloudWatchMetrics[0]
			if d.Namespace != "sellerapi/test" || len(d.Dimensions) != 2 || len(d.Dimensions[0]) != 1 || d.Dimensions[0][0] != "operation" || len(d.Dimensions[1]) != 0 {
				t.Errorf("line %d: namespace %q, dimensions %v", i, d.Namespace, d.Dimensions)
			}
			if line["operation"] != "getVendor" {
				t.Errorf("line %d: operation %v", i, line["operation"])
			}
			names := map[string]bool{}
			for _, m := range d.Metrics {
				names[m.Name] = true
				if _, ok := line[m.Name].(float64); !ok {
					t.Errorf("line %d: metric %s has no numeric member: %v", i, m.Name, line[m.Name])
				}
			}
			for _, n := range append([]string{httpapi.MetricDuration, httpapi.MetricRoundTrips, httpapi.MetricCapacity}, want[i].extra...) {
				if !names[n] {
					t.Errorf("line %d: no metric %s in %v", i, n, d.Metrics)
				}
			}
			if len(names) != 3+len(want[i].extra) {
				t.Errorf("line %d: metrics %v, want the three and %v", i, d.Metrics, want[i].extra)
			}
			if want[i].status != 401 && line[httpapi.MetricRoundTrips].(float64) < 1 {
				t.Errorf("line %d: round trips %v", i, line[httpapi.MetricRoundTrips])
			}
			if kind == apitest.DynamoDB && want[i].status == 200 && line[httpapi.MetricCapacity].(float64) <= 0 {
				t.Errorf("line %d: DynamoDB reported no capacity", i)
			}
			if len(raw) > 280 {
				t.Errorf("line %d: the metadata takes %d bytes: %s", i, len(raw), raw)
			}
		}
	})
}

// Without a namespace (the local server) the line carries no metrics.
func TestRequestLinesWithoutANamespaceArePlain(t *testing.T) {
	e := newEnv(t, apitest.SQLite, apitest.Options{})
	e.Get("/vendors/" + e.Vendor.ID)
	for _, line := range requestLines(t, e) {
		if _, ok := line["_aws"]; ok {
			t.Errorf("line %v embeds metrics", line)
		}
		if _, ok := line[httpapi.MetricCapacity]; ok {
			t.Errorf("line %v carries capacity", line)
		}
	}
}

// Each delivery attempt's line embeds its lag and duration by outcome (and
// in total), through the real worker: a failed attempt, then its retry
// delivered.
func TestDeliveryLinesEmbedMetrics(t *testing.T) {
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, WebhookResolver: publicHosts, Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<20, 1<<20
		c.AllowPrivateWebhooks = true
		c.MetricsNamespace = "sellerapi/test"
	}})
	e.Clock.Tick(time.Millisecond)
	rc := newReceiver(t, e)
	rc.answer = func(n int, _ string) int {
		if n == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	rc.subscribe("product.created")
	whProductEvent(t, e, "measured")
	whDrain(t, e)
	e.Clock.Advance(webhook.FirstRetryCeiling)
	whDrain(t, e)

	var outcomes []string
	sc := bufio.NewScanner(strings.NewReader(e.Logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line %s: %v", sc.Bytes(), err)
		}
		msg, _ := line["msg"].(string)
		if !strings.HasPrefix(msg, "webhook ") || line["_aws"] == nil {
			continue
		}
		raw, _ := json.Marshal(line["_aws"])
		var aws struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		}
		if err := json.Unmarshal(raw, &aws); err != nil || len(aws.CloudWatchMetrics) != 1 {
			t.Fatalf("%s: _aws %s (%v)", msg, raw, err)
		}
		d := aws.CloudWatchMetrics[0]
		if d.Namespace != "sellerapi/test" || len(d.Dimensions) != 2 || len(d.Dimensions[0]) != 1 || d.Dimensions[0][0] != "outcome" || len(d.Dimensions[1]) != 0 {
			t.Errorf("%s: namespace %q, dimensions %v", msg, d.Namespace, d.Dimensions)
		}
		var names []string
		for _, m := range d.Metrics {
			names = append(names, m.Name)
			if v, ok := line[m.Name].(float64); !ok || v < 0 {
				t.Errorf("%s: metric %s = %v", msg, m.Name, line[m.Name])
			}
		}
		if strings.Join(names, ",") != webhook.MetricLag+","+webhook.MetricDuration {
			t.Errorf("%s: metrics %v", msg, names)
		}
		if _, ok := line["vendor_id"]; !ok {
			t.Errorf("%s: no vendor id on the line", msg)
		}
		outcomes = append(outcomes, line["outcome"].(string))
	}
	if strings.Join(outcomes, ",") != webhook.OutcomeFailed+","+webhook.OutcomeSucceeded {
		t.Errorf("outcomes %v, want failed then succeeded", outcomes)
	}
}
