package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// build compiles functions/<fn> for this machine as `make invoke` does.
func build(t *testing.T, fn string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), fn)
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc,embedded", "-o", bin, "../../functions/"+fn)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", fn, err, out)
	}
	return bin
}

func invokeFile(t *testing.T, bin, event string, args ...string) (map[string]any, string) {
	t.Helper()
	var out, log bytes.Buffer
	args = append(args, bin, filepath.Join("..", "..", "events", event))
	if err := run(t.Context(), args, &out, &log); err != nil {
		t.Fatalf("lambdarun %s: %v\n%s", event, err, log.String())
	}
	var resp map[string]any
	if err := json.Unmarshal(out.Bytes(), &resp); err != nil {
		t.Fatalf("response %q: %v", out.String(), err)
	}
	return resp, log.String()
}

// The admin binary, run through the Runtime API as Lambda runs it, answers
// a sample event with a placeholder lambdarun fills by seeding a vendor.
func TestTheAdminBinaryAnswersASampleEvent(t *testing.T) {
	t.Setenv("SELLERAPI_STORE", "")
	t.Setenv("SELLERAPI_DATA_DIR", "")
	resp, log := invokeFile(t, build(t, "admin"), "admin/token-issue.json")
	data, _ := resp["data"].(map[string]any)
	if tok, _ := data["token"].(string); !strings.HasPrefix(tok, "mkpat_") {
		t.Fatalf("response %v, want an issued token", resp)
	}
	if !strings.Contains(log, "created vendor") || !strings.Contains(log, "start to first response") {
		t.Errorf("log lacks the seeding or the timing:\n%s", log)
	}
}

// An API function answers an API Gateway event; values given in the
// environment fill the placeholders.
func TestAnAPIBinaryAnswersAnHTTPEvent(t *testing.T) {
	t.Setenv("SELLERAPI_STORE", "")
	t.Setenv("SELLERAPI_DATA_DIR", "")
	resp, _ := invokeFile(t, build(t, "vendors"), "vendors/unknown-path.json", "-n", "2")
	if resp["statusCode"] != float64(404) {
		t.Fatalf("response %v, want 404", resp)
	}
	t.Setenv("VENDOR_ID", "ven_00000000000000000000000000")
	t.Setenv("TOKEN", "mkpat_nope")
	resp, _ = invokeFile(t, build(t, "vendors"), "vendors/get-vendor.json")
	if resp["statusCode"] != float64(401) {
		t.Fatalf("response %v, want 401 for a made-up token", resp)
	}
}

func TestAnInitFailureIsReported(t *testing.T) {
	t.Setenv("SELLERAPI_STORE", "postgres")
	t.Setenv("SELLERAPI_DATA_DIR", "")
	var out, log bytes.Buffer
	err := run(t.Context(), []string{build(t, "admin"), filepath.Join("..", "..", "events", "admin", "vendor-create.json")}, &out, &log)
	if err == nil || !strings.Contains(log.String(), "init") {
		t.Fatalf("err = %v, log:\n%s", err, log.String())
	}
}

func TestAPlaceholderNobodyFillsIsRefused(t *testing.T) {
	t.Setenv("SELLERAPI_STORE", "")
	t.Setenv("SELLERAPI_DATA_DIR", "")
	var out, log bytes.Buffer
	err := run(t.Context(), []string{"/bin/true", filepath.Join("..", "..", "events", "products", "get-product.json")}, &out, &log)
	if err == nil || !strings.Contains(err.Error(), "PRODUCT_ID") {
		t.Fatalf("err = %v, want a request for PRODUCT_ID", err)
	}
}
