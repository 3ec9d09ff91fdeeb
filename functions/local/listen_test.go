package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/client"
)

// serveForTest starts serve on a fresh data directory, with loopback
// webhooks allowed, and returns its base URL, demo vendor and token.
func serveForTest(t *testing.T, extra ...string) (base, vendorID, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--allow-private-webhooks"}, extra...)
		done <- run(ctx, args, &out, io.Discard)
	}()
	t.Cleanup(func() { cancel(); <-done })
	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			break
		}
	}
	demo := regexp.MustCompile(`vendor id: (\S+)\s+token:\s+(\S+)`).FindStringSubmatch(out.String())
	if base == "" || demo == nil {
		t.Fatalf("server did not start: %q", out.String())
	}
	return base, demo[1], demo[2]
}

// TestListenAndTrigger: listen subscribes a forwarder, trigger makes a real
// change, the delivery arrives verified and is forwarded with its
// signature (which the target verifies with the printed secret), and the
// subscription is gone once listen stops.
func TestListenAndTrigger(t *testing.T) {
	base, vendorID, token := serveForTest(t)
	target := newForwardTarget(t)

	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"listen", "--base", base, "--token", token, "--events", "inventory_item.adjusted,product.published", "--forward-to", target.URL}, &out, io.Discard)
	}()
	ready := regexp.MustCompile(`Ready: subscription (\S+) .* \(signing secret (whsec_\S+)\)`)
	var m []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && m == nil; time.Sleep(20 * time.Millisecond) {
		m = ready.FindStringSubmatch(out.String())
	}
	if m == nil {
		t.Fatalf("listen did not start: %q", out.String())
	}
	target.secret <- m[2]

	var trig syncBuffer
	if err := run(context.Background(), []string{"trigger", "inventory_item.adjusted", "--base", base, "--token", token}, &trig, io.Discard); err != nil {
		t.Fatalf("trigger: %v\n%s", err, trig.String())
	}
	if !strings.Contains(trig.String(), "Trigger succeeded: inventory_item.adjusted") {
		t.Fatalf("trigger printed %q", trig.String())
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(target.deliveries()) > 0 {
			break
		}
	}
	if got := target.deliveries(); len(got) != 1 || got[0].Event.Type != "inventory_item.adjusted" || got[0].Event.VendorID != vendorID {
		t.Fatalf("forwarded %+v; listen printed %q", got, out.String())
	}
	if !strings.Contains(out.String(), "--> inventory_item.adjusted") || !strings.Contains(out.String(), "signature verified") || !strings.Contains(out.String(), "<-- 204") {
		t.Fatalf("listen printed %q", out.String())
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("listen: %v", err)
	}
	if !strings.Contains(out.String(), "Removed subscription "+m[1]) {
		t.Fatalf("listen printed %q", out.String())
	}
	c := client.New(base, token)
	for sub, err := range c.AllWebhookSubscriptions(context.Background(), client.ListWebhookSubscriptionsRequest{VendorID: vendorID}) {
		if err != nil {
			t.Fatal(err)
		}
		t.Fatalf("subscription %s outlived listen", sub.ID)
	}
}

// TestTriggerEveryType: each type trigger offers ends with an event of
// that type in the vendor's log.
func TestTriggerEveryType(t *testing.T) {
	base, vendorID, token := serveForTest(t, "--rate-writes", "1000", "--rate-reads", "1000")
	c := client.New(base, token)
	count := func(typ string) int {
		n := 0
		for _, err := range c.AllEvents(context.Background(), client.ListEventsRequest{VendorID: vendorID, Type: typ, Limit: 100}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	for _, typ := range triggerTypes() {
		before := count(typ)
		if err := run(context.Background(), []string{"trigger", typ, "--base", base, "--token", token}, io.Discard, io.Discard); err != nil {
			t.Fatalf("trigger %s: %v", typ, err)
		}
		if after := count(typ); after != before+1 {
			t.Fatalf("trigger %s wrote %d events of that type, want 1", typ, after-before)
		}
	}
}

func TestTriggerRefusesUnknownTypes(t *testing.T) {
	t.Setenv(envToken, "")
	for _, args := range [][]string{{"trigger"}, {"trigger", "product.teleported", "--token", "x"}, {"trigger", "product.created"}} {
		err := run(context.Background(), args, io.Discard, io.Discard)
		if err == nil {
			t.Errorf("%v succeeded", args)
		}
	}
}

// TestListenTestAndCatchUp: listen --test asks for a test delivery once
// subscribed, which arrives verified and whose answer it prints; --after
// first reads the log oldest first after an event id (here nothing has
// settled yet: events show there a minute after they happen) and refuses
// an id that is not one; --recover-since asks for a recovery through the
// new subscription (which starts a minute later: its deliveries are the
// service's tests').
func TestListenTestAndCatchUp(t *testing.T) {
	base, _, token := serveForTest(t)
	ctx, stop := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"listen", "--base", base, "--token", token, "--events", "product.created", "--test",
			"--after", "evt_00000000000000000000000000", "--recover-since", "2h"}, &out, io.Discard)
	}()
	want := regexp.MustCompile(`Test delivery (evt_\S+): answered 200 in \d+ ms`)
	recovery := regexp.MustCompile(`Recovery rcv_\S+ queued: the events since \S+ arrive here oldest first`)
	var m []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && (m == nil || !recovery.MatchString(out.String())); time.Sleep(20 * time.Millisecond) {
		m = want.FindStringSubmatch(out.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("listen: %v", err)
	}
	if m == nil || !strings.Contains(out.String(), "--> webhook_subscription.test ["+m[1]+"]") || !strings.Contains(out.String(), "signature verified") ||
		!strings.Contains(out.String(), "Caught up: 0 events in the log after evt_00000000000000000000000000.") || !recovery.MatchString(out.String()) {
		t.Fatalf("listen printed %q", out.String())
	}
	err := run(context.Background(), []string{"listen", "--base", base, "--token", token, "--recover-since", "yesterday"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "recover-since") {
		t.Fatalf("listen --recover-since yesterday: %v", err)
	}
	err = run(context.Background(), []string{"listen", "--base", base, "--token", token, "--after", "evt_nope"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "after") {
		t.Fatalf("listen --after evt_nope: %v", err)
	}
}

// forwardTarget is a receiver listen forwards to (--forward-to): it
// verifies each delivery with the signing secret listen prints, which the
// test sends on secret once it has read it.
type forwardTarget struct {
	URL    string
	secret chan string

	mu  sync.Mutex
	got []client.Delivery
}

func newForwardTarget(t *testing.T) *forwardTarget {
	f := &forwardTarget{secret: make(chan string, 1)}
	var signing string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if signing == "" {
			signing = <-f.secret
		}
		d, err := client.ReadWebhook(r, signing, time.Now())
		if err != nil {
			t.Errorf("forwarded delivery: %v", err)
			http.Error(w, err.Error(), 400)
			return
		}
		f.got = append(f.got, d)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// deliveries are the deliveries verified so far.
func (f *forwardTarget) deliveries() []client.Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}
