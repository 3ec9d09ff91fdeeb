package lambdaapi_test

import (
	"encoding/json"
	"net/http"
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

// The request's log line names Lambda's request id beside the service's
// own, the X-Request-Id the client sees (the access log names both, and
// API Gateway's), and leaves the time to CloudWatch.
func TestLogLinesCarryLambdaRequestIDs(t *testing.T) {
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
		"request_id":        lt.Header(resp, "X-Request-Id"),
		"lambda_request_id": "8c5e4a4e-1f0b-4c39-9f43-2d1e7b6f1a20",
		"vendor_id":         f.Vendor.ID,
	}
	for k, v := range want {
		if line[k] != v || v == "" {
			t.Errorf("%s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	for _, k := range []string{"time", "apigw_request_id", "method"} {
		if _, ok := line[k]; ok {
			t.Errorf("the line carries %s (line %v)", k, line)
		}
	}
}
