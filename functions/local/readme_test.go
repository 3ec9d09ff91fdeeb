package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// runAsLocal is the variable under which the test binary stands in for
// bin/local (see TestMain).
const runAsLocal = "SELLERAPI_TEST_RUN_AS_LOCAL"

// TestMain lets the test binary stand in for bin/local: with runAsLocal=1
// it runs its arguments as the local binary's command line and exits, so
// that a shell script under test can call the admin commands.
func TestMain(m *testing.M) {
	if os.Getenv(runAsLocal) == "1" {
		if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "error:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReadmeFirstCalls runs the README's "First calls" block as a newcomer
// would, with bash and curl, against serve on a loopback port: the admin
// commands through bin/local on the served data directory, every curl
// failing the script on an answer that is not a success. Only the base URL
// is changed (to the port this test got). It also checks that the first
// start prints what the README says it prints.
func TestReadmeFirstCalls(t *testing.T) {
	var missing []string
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("REQUIRE_EMULATORS") == "1" {
			t.Fatalf("%v not installed", missing)
		}
		t.Skipf("%v not installed", missing)
	}
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	block := shBlockAfter(t, readme, "\n## First calls\n")
	const base = "http://127.0.0.1:8080/v1"
	if strings.Count(block, base) != 1 || !strings.Contains(block, "bin/local ") || !strings.Contains(block, "--data .data") {
		t.Fatalf("the block no longer names the base URL once, bin/local and --data .data:\n%s", block)
	}
	banner := regexp.MustCompile(`(?m)^First start on an empty store: .*$`).FindString(readme)
	if banner == "" {
		t.Fatal("the README no longer shows the first start's banner")
	}

	// The repository root as the newcomer has it: bin/local and .data.
	root := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	shim := fmt.Sprintf("#!/bin/sh\n%s=1 exec '%s' \"$@\"\n", runAsLocal, strings.ReplaceAll(self, "'", `'\''`))
	if err := os.WriteFile(filepath.Join(root, "bin", "local"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, ".data")

	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", data}, &out, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	var served string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			served = m[1]
			break
		}
	}
	if served == "" {
		t.Fatalf("server did not start: %q", out.String())
	}
	if !strings.Contains(out.String(), banner) {
		t.Errorf("the first start printed\n%s\nnot the README's %q", out.String(), banner)
	}

	// Each answer on a line of its own, so that the block's "# -> " lines
	// can be matched against them.
	script := "set -eo pipefail\ncurl() { command curl --fail-with-body --max-time 60 \"$@\" || return; echo; }\n" +
		strings.Replace(block, base, served, 1)
	runCtx, stop := context.WithTimeout(ctx, 3*time.Minute)
	defer stop()
	cmd := exec.CommandContext(runCtx, "bash", "-c", script)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the README's first calls failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	// Every answer the block shows ("# -> ", with "..." for what it
	// elides) is an answer the calls printed.
	answers := strings.Split(stdout.String(), "\n")
	shown := 0
	for _, line := range strings.Split(block, "\n") {
		example, ok := strings.CutPrefix(line, "# -> ")
		if !ok {
			continue
		}
		shown++
		pattern := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(example), `\.\.\.`, ".*") + "$")
		if !slices.ContainsFunc(answers, pattern.MatchString) {
			t.Errorf("no answer is like the README's\n%s\nthe answers:\n%s", example, stdout.String())
		}
	}
	if shown < 4 {
		t.Errorf("the block shows %d answers; it showed the read, the list, the adjustment and the events", shown)
	}
}

// shBlockAfter returns the first ```sh block after heading.
func shBlockAfter(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, heading)
	if i < 0 {
		t.Fatalf("no %q", strings.TrimSpace(heading))
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		t.Fatalf("no sh block after %q", strings.TrimSpace(heading))
	}
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("the sh block after %q is not closed", strings.TrimSpace(heading))
	}
	return rest[:end]
}
