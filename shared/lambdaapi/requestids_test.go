package lambdaapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// The request's log line names API Gateway's request id beside the
// service's own, the X-Request-Id the client sees (the access log and the
// response's apigw-requestid name it too), and leaves the time to
// CloudWatch.
func TestLogLinesCarryAPIGatewayRequestIDs(t *testing.T) {
	f := lt.SQLite(t)
	logs := &strings.Builder{}
	cfg := config.Default()
	cfg.KeyFile = f.KeyFile
	h, err := lambdaapi.New(t.Context(), cfg, []httpapi.Group{httpapi.Vendors},
		app.WithStore(f.Store), app.WithClock(clock.System{}), app.WithLogOutput(logs))
	if err != nil {
		t.Fatal(err)
	}
	ev := lt.Event(t, "vendors/get-vendor.json", f.Vars())
	ev.RequestContext.RequestID = "Kx1bTg9ZIAMEVvA="
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: "8c5e4a4e-1f0b-4c39-9f43-2d1e7b6f1a20"})
	resp, err := h(ctx, ev)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no request line in:\n%s", logs)
	}
	want := map[string]any{
		"request_id": lt.Header(resp, "X-Request-Id"),
		"apigw_id":   "Kx1bTg9ZIAMEVvA=",
		"vendor_id":  f.Vendor.ID,
	}
	for k, v := range want {
		if line[k] != v || v == "" {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	for _, k := range []string{"time", "lambda_request_id", "method"} {
		if _, ok := line[k]; ok {
			t.Errorf("the line carries %s (line %v)", k, line)
		}
	}
}

// Without Lambda's start and report lines (system level WARN), the
// environment's own lines say what they said: its first line its init
// time, an invocation's first line the resident high-water mark when it
// grew.
func TestLinesReportInitAndMemoryPeak(t *testing.T) {
	status := filepath.Join(t.TempDir(), "status")
	setHWM := func(kb string) {
		t.Helper()
		if err := os.WriteFile(status, []byte("Name:\tbootstrap\nVmPeak:\t 900000 kB\nVmHWM:\t   "+kb+" kB\nVmRSS:\t 1000 kB\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	setHWM("48000")
	var out bytes.Buffer
	log := slog.New(lambdaapi.WithRequestIDsReading(slog.NewJSONHandler(&out, nil), status)).With("fn", "products")
	in := func(id string) context.Context {
		return lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
	}
	log.Info("ready")                    // init, outside any invocation
	log.InfoContext(in("a"), "request")  // a's first line: the peak so far
	log.InfoContext(in("a"), "delivery") // a's second line: nothing more
	log.InfoContext(in("b"), "request")  // the peak did not grow
	setHWM("60001")
	log.InfoContext(in("c"), "request") // it grew: 58.6 MiB, rounded up

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	if ms, ok := lines[0]["init_ms"].(float64); !ok || ms < 0 {
		t.Errorf("first line init_ms = %v", lines[0]["init_ms"])
	}
	// Outside an HTTP API request (a worker), Lambda's id joins the line.
	if lines[1]["lambda_request_id"] != "a" || lines[0]["lambda_request_id"] != nil {
		t.Errorf("lambda_request_id: %v, %v", lines[0], lines[1])
	}
	wantPeak := []any{nil, 47.0, nil, nil, 59.0}
	for i, m := range lines {
		if _, ok := m["init_ms"]; ok && i > 0 {
			t.Errorf("line %d carries init_ms: %v", i, m)
		}
		if m["mem_peak_mb"] != wantPeak[i] {
			t.Errorf("line %d mem_peak_mb = %v, want %v", i, m["mem_peak_mb"], wantPeak[i])
		}
	}
}
