package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// syncBuffer is a goroutine-safe sink for a serve's output.
type syncBuffer = apitest.SyncBuffer

// cli runs a subcommand in-process and decodes its {"data": ...} output.
func cli(t *testing.T, v any, args ...string) {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		t.Fatalf("%v printed %q: %v", args, out.String(), err)
	}
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestLocalContract drives the binary's contract: serve creates a demo
// vendor and token on an empty store and prints them, and the admin
// subcommands work on the same data directory while it serves.
func TestLocalContract(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, &out, io.Discard) }()

	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
	}
	if base == "" {
		t.Fatalf("server did not start: %q", out.String())
	}
	demo := regexp.MustCompile(`vendor id: (\S+)\s+token:\s+(\S+)`).FindStringSubmatch(out.String())
	if demo == nil {
		t.Fatalf("no demo vendor and token printed: %q", out.String())
	}
	if code := get(t, base+"/vendors/"+demo[1], demo[2]); code != 200 {
		t.Fatalf("demo token: %d", code)
	}

	var v struct {
		Data struct{ ID, Name, Slug string }
	}
	cli(t, &v, "vendor", "create", "--data", dir, "--name", "Acme Goods", "--slug", "acme-goods")
	if !strings.HasPrefix(v.Data.ID, "ven_") || v.Data.Name != "Acme Goods" || v.Data.Slug != "acme-goods" {
		t.Fatalf("vendor create printed %+v", v)
	}
	var tok struct {
		Data map[string]any `json:"data"`
	}
	cli(t, &tok, "token", "issue", "--data", dir, "--vendor", v.Data.ID, "--scopes", "vendors.read,products.read", "--expires-in", "1h")
	for _, k := range []string{"id", "token", "vendor_id", "scopes", "expires_at"} {
		if _, ok := tok.Data[k]; !ok {
			t.Fatalf("token issue printed no %q: %v", k, tok.Data)
		}
	}
	if len(tok.Data) != 5 || tok.Data["vendor_id"] != v.Data.ID || tok.Data["expires_at"] == nil {
		t.Fatalf("token issue printed %v", tok.Data)
	}
	token, id := tok.Data["token"].(string), tok.Data["id"].(string)
	if code := get(t, base+"/vendors/"+v.Data.ID, token); code != 200 {
		t.Fatalf("issued token against the running server: %d", code)
	}
	var all struct {
		Data struct{ Scopes []string }
	}
	cli(t, &all, "token", "issue", "--data", dir, "--vendor", v.Data.ID, "--scopes", "all")
	if len(all.Data.Scopes) != 13 {
		t.Fatalf("--scopes all gave %v", all.Data.Scopes)
	}
	var revoked struct{ Data map[string]any }
	cli(t, &revoked, "token", "revoke", "--data", dir, "--id", id)
	if code := get(t, base+"/vendors/"+v.Data.ID, token); code != 401 {
		t.Fatalf("revoked token: %d, want 401", code)
	}

	// A second start on the same data creates no second demo.
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	var again syncBuffer
	ctx2, cancel2 := context.WithCancel(context.Background())
	done2 := make(chan error, 1)
	go func() { done2 <- run(ctx2, []string{"--addr", "127.0.0.1:0", "--data", dir}, &again, io.Discard) }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !listening.MatchString(again.String()); time.Sleep(20 * time.Millisecond) {
	}
	cancel2()
	<-done2
	if strings.Contains(again.String(), "token:") || !listening.MatchString(again.String()) {
		t.Fatalf("second start printed %q", again.String())
	}
}

func TestBadInvocations(t *testing.T) {
	for _, args := range [][]string{
		{"frobnicate"},
		{"token", "issue", "--data", t.TempDir(), "--vendor", "ven_none", "--scopes", "all"},
		{"token", "issue", "--data", t.TempDir(), "--vendor", "ven_x", "--scopes", "nope.read"},
		{"vendor", "create", "--data", t.TempDir(), "--name", "", "--slug", "x"},
		{"token", "revoke", "--data", t.TempDir(), "--id", "tok_missing"},
		{"pairing", "review", "--data", t.TempDir(), "--id", "pair_missing"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

// TestNoDemoBesideAVendor: a store that already has a vendor (made with
// vendor create before the first serve) is not empty, so serve creates no
// demo vendor and says nothing about a first start.
func TestNoDemoBesideAVendor(t *testing.T) {
	dir := t.TempDir()
	var v struct{ Data struct{ ID string } }
	cli(t, &v, "vendor", "create", "--data", dir, "--name", "Acme Goods", "--slug", "acme-goods")
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", dir}, &out, io.Discard) }()
	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !listening.MatchString(out.String()); time.Sleep(20 * time.Millisecond) {
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if !listening.MatchString(out.String()) || strings.Contains(out.String(), "First start") || strings.Contains(out.String(), "token:") {
		t.Fatalf("serve beside an existing vendor printed %q", out.String())
	}
}
