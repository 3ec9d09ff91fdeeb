package lambdatest_test

import (
	"encoding/base64"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// notHTTP are the folders of events/ whose samples are not HTTP API
// requests: the admin function's direct invocations, the EventBridge
// schedule of the reservation expirer, the stream router's DynamoDB stream
// batches and the workers' SQS batches. Their functions' tests check them.
var notHTTP = map[string]bool{"admin": true, "reservation-expirer": true,
	"stream-router": true, "webhook-worker": true, "bulk-worker": true, "replay-worker": true, "seller-order-worker": true, "sync-worker": true}

// Every HTTP API sample event decodes once the placeholders events/README.md
// lists are filled, and is consistent as API Gateway would deliver it. Ids
// that appear in bodies have their real lengths (a body's content-length
// counts the real ids).
func TestSampleEvents(t *testing.T) {
	vars := map[string]string{"TOKEN": "tok", "VENDOR_ID": "ven_1", "PRODUCT_ID": "prd_1",
		"INVENTORY_ITEM_ID": "inv_" + strings.Repeat("a", 26) + "_000",
		"CONNECTION_ID":     "conn_" + strings.Repeat("b", 26),
		"RESERVATION_ID":    "res_" + strings.Repeat("c", 26),
		"BULK_OPERATION_ID": "bulk_" + strings.Repeat("d", 26),
		"PAIRING_ID":        "pair_" + strings.Repeat("e", 26),
		"CODE":              "ABCD-EFGH-JKMN-PQRS",
		"DISCOVERY_TOKEN":   "mkdsc_" + strings.Repeat("e", 26) + "_" + strings.Repeat("f", 52)}
	root := filepath.Join("..", "..", "..", "events")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && notHTTP[d.Name()] {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".json" {
			return nil
		}
		n++
		rel, _ := filepath.Rel(root, path)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			ev := lt.Event(t, filepath.ToSlash(rel), vars)
			req := ev.RequestContext.HTTP
			if ev.Version != "2.0" || ev.RouteKey != ev.RequestContext.RouteKey || req.Path != ev.RawPath {
				t.Errorf("version %q, routeKey %q / %q, path %q / %q; want 2.0 and each pair equal",
					ev.Version, ev.RouteKey, ev.RequestContext.RouteKey, ev.RawPath, req.Path)
			}
			if ev.RouteKey != "$default" && !strings.HasPrefix(ev.RouteKey, req.Method+" /v1/") {
				t.Errorf("routeKey %q does not match method %s", ev.RouteKey, req.Method)
			}
			body := ev.Body
			if ev.IsBase64Encoded {
				// A binary body travels base64-encoded; the client's
				// content-length, which API Gateway forwards, counts its bytes.
				raw, err := base64.StdEncoding.DecodeString(ev.Body)
				if err != nil {
					t.Errorf("isBase64Encoded, but the body is not base64: %v", err)
				}
				body = string(raw)
			}
			if got, want := ev.Headers["content-length"], strconv.Itoa(len(body)); got != want {
				t.Errorf("content-length %s, body is %s bytes", got, want)
			}
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no sample events under %s", root)
	}
}
