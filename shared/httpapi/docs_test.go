package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/openapi"
)

// TestDocsPageInBrowser loads GET /docs in headless Chromium (Debian's
// package, installed by scripts/chromium, which make test runs): the page
// loads with no console message and shows every tag of the document as a
// group, with every operation in it.
func TestDocsPageInBrowser(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("REQUIRE_EMULATORS") == "1" {
			t.Fatal("chromium is not installed: run scripts/chromium (make test does)")
		}
		t.Skip("chromium is not installed (scripts/chromium installs it)")
	}
	e := apitest.New(t, apitest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir="+t.TempDir(), "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", e.URL+"/docs")
	var dom, logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &dom, &logs
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, logs.String())
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "CONSOLE") {
			t.Errorf("console message: %s", line)
		}
	}
	var doc struct {
		Tags  []struct{ Name string }               `json:"tags"`
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	html := dom.String()
	for _, tag := range doc.Tags {
		if !regexp.MustCompile(`<section class="group" id="[^"]+" data-tag="` + regexp.QuoteMeta(tag.Name) + `">`).MatchString(html) {
			t.Errorf("the page shows no group %q", tag.Name)
		}
	}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				OperationID string `json:"operationId"`
			}
			if json.Unmarshal(raw, &op) != nil || op.OperationID == "" {
				continue // path-level parameters
			}
			if !strings.Contains(html, `data-operation="`+op.OperationID+`"`) {
				t.Errorf("the page lacks %s %s (%s)", method, path, op.OperationID)
			}
		}
	}
	if t.Failed() {
		t.Logf("DOM: %.2000s", html)
	}
}
