package main

// Fair delivery in the deployed shape: one vendor's tarpit does not delay
// another vendor's deliveries (issue 25).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/webhook"
)

// TestFairDeliveryDeployedShape: vendor A has 20 subscriptions to a
// loopback tarpit that holds every request until the test lets go, and
// writes 3 products (60 deliveries); vendor B has one fast receiver and,
// once A holds its share, writes 3 products at once. All of B's
// deliveries arrive while none of A's requests has returned, and A never
// holds more than webhook.VendorSlots requests at once, although the
// webhook worker's environments (20) and their batches (10 each) could
// hold every one of them: the bound is the slot items in the table,
// shared by every environment. After the release every one of A's
// deliveries arrives, within the longest deferral.
//
// The tarpit lets go the moment B's third delivery arrives (no polling
// in between). Held for less than webhook.SlowReceiver (counted from each
// slot's take, a little before the tarpit sees the request), A's
// attempts are not slow, its deferrals stay within seconds and its
// backlog arrives within about half a minute; held longer (a loaded
// machine), its backlog comes back spread over up to
// webhook.MaxDeferDelay (docs/decisions.md, "A vendor's backlog comes
// back as its slots free"), which the last wait allows.
func TestFairDeliveryDeployedShape(t *testing.T) {
	tplPath := cloudTemplate(t)
	t.Parallel()
	cloud := build(t, "./scripts/cloud")
	s := start(t, cloud, []string{"SELLERAPI_CLOUD_TEMPLATE=" + tplPath}, serveFlags...)

	var mu sync.Mutex
	inside, most, returned := 0, 0, 0
	answered := map[string]bool{}
	var fullAt, releasedAt time.Time
	full := make(chan struct{}) // closed when A first holds its share
	release := make(chan struct{})
	var fullOnce, releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	tarpit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		inside++
		most = max(most, inside)
		if inside >= webhook.VendorSlots {
			fullOnce.Do(func() { fullAt = time.Now(); close(full) })
		}
		mu.Unlock()
		ok := false
		select {
		case <-release:
			ok = true
		case <-r.Context().Done():
		}
		mu.Lock()
		inside--
		returned++
		if ok {
			answered[r.Header.Get(webhook.HeaderDeliveryID)] = true
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(tarpit.Close)

	// B's receiver lets the tarpit go as its third delivery arrives, and
	// notes what A held then.
	bGot := map[string]bool{}
	var atB struct{ inside, most, returned int }
	bDone := make(chan struct{})
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		if id := r.Header.Get(webhook.HeaderDeliveryID); !bGot[id] {
			bGot[id] = true
			if len(bGot) == 3 {
				atB.inside, atB.most, atB.returned = inside, most, returned
				releasedAt = time.Now()
				letGo()
				close(bDone)
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(fast.Close)

	a := vendorTour(t, s, "Tarpit Goods", "tarpit-goods")
	for i := range 20 {
		a.want("subscribe A", 201, "POST", "/vendors/"+a.vendor+"/webhook-subscriptions",
			map[string]any{"url": tarpit.URL + "/hook", "event_types": []string{"product.created"}}, "Idempotency-Key", fmt.Sprintf("fair-a-sub-%d", i))
	}
	b := vendorTour(t, s, "Fast Goods", "fast-goods")
	b.want("subscribe B", 201, "POST", "/vendors/"+b.vendor+"/webhook-subscriptions",
		map[string]any{"url": fast.URL + "/hook", "event_types": []string{"product.created"}}, "Idempotency-Key", "fair-b-sub")
	product := func(slug string) map[string]any {
		return map[string]any{"kind": "simple", "name": "Fair shirt", "slug": slug, "description": "A shirt.",
			"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
			"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
			"features": []string{"linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": "FAIR-" + slug}
	}
	for i := range 3 {
		a.want("A writes", 201, "POST", "/vendors/"+a.vendor+"/products", product(fmt.Sprintf("a-%d", i)), "Idempotency-Key", fmt.Sprintf("fair-a-%d", i))
	}
	waitFor(t, s, "A holds its share", full)
	var writes []request
	for i := range 3 {
		writes = append(writes, request{path: "/vendors/" + b.vendor + "/products", body: product(fmt.Sprintf("b-%d", i)), key: fmt.Sprintf("fair-b-%d", i)})
	}
	b.createAtOnce(writes)
	waitFor(t, s, "B's deliveries", bDone)
	mu.Lock()
	t.Logf("the tarpit held A's share for %s", releasedAt.Sub(fullAt).Round(time.Millisecond))
	mu.Unlock()
	if atB.returned != 0 {
		t.Fatalf("B's deliveries arrived only after %d of A's requests returned (a timeout): A's tarpit delayed them", atB.returned)
	}
	if atB.most > webhook.VendorSlots || atB.inside > webhook.VendorSlots {
		t.Fatalf("A held %d requests at once (%d when B's deliveries were in), want at most %d", atB.most, atB.inside, webhook.VendorSlots)
	}
	state := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return most, len(answered)
	}
	a.eventually("all of A's deliveries", webhook.MaxDeferDelay+2*time.Minute, func() bool { _, done := state(); return done == 60 })
	t.Logf("A's 60 deliveries arrived within %s of the release", time.Since(releasedAt).Round(time.Second))
	if m, _ := state(); m > webhook.VendorSlots {
		t.Fatalf("A held %d requests at once", m)
	}
}

// waitFor waits a minute at most for done to close.
func waitFor(t *testing.T, s *shape, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s: not within a minute\nlogs:\n%s", what, tail(s.logs.String(), 60))
	}
}

// request is one create of createAtOnce.
type request struct {
	path, key string
	body      any
}

// createAtOnce POSTs every request at once, each with its Idempotency-Key
// (a tour's want is for the test's goroutine only), and fails the test
// unless each answered 201.
func (tr *tour) createAtOnce(reqs []request) {
	tr.t.Helper()
	errs := make([]error, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() {
			body, _ := json.Marshal(r.body)
			req, err := http.NewRequest(http.MethodPost, tr.s.base+r.path, bytes.NewReader(body))
			if err != nil {
				errs[i] = err
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tr.token)
			req.Header.Set("Idempotency-Key", r.key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			answer, _ := io.ReadAll(res.Body)
			if res.StatusCode != http.StatusCreated {
				errs[i] = fmt.Errorf("answered %d, want 201: %s", res.StatusCode, answer)
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			tr.t.Fatalf("POST %s (%s): %v", reqs[i].path, reqs[i].key, err)
		}
	}
}
