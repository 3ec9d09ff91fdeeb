package main

// Fair delivery in the deployed shape: one vendor's tarpit does not delay
// another vendor's deliveries (issue 25).

import (
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
// writes 3 products (60 deliveries); vendor B has one fast receiver and
// writes 3 products. All of B's deliveries arrive while none of A's
// requests has returned, and A never holds more than webhook.VendorSlots
// requests at once, although the webhook worker's environments (20) and
// their batches (10 each) could hold every one of them: the bound is the
// slot items in the table, shared by every environment. After the release
// every one of A's deliveries arrives, within the longest deferral: a
// vendor whose slots are held by slow attempts has its backlog spread over
// minutes, not brought back every second (docs/decisions.md, "A vendor's
// backlog comes back as its slots free").
func TestFairDeliveryDeployedShape(t *testing.T) {
	tplPath := cloudTemplate(t)
	t.Parallel()
	cloud := build(t, "./scripts/cloud")
	s := start(t, cloud, []string{"SELLERAPI_CLOUD_TEMPLATE=" + tplPath}, serveFlags...)

	var mu sync.Mutex
	inside, most, returned := 0, 0, 0
	answered := map[string]bool{}
	release := make(chan struct{})
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	tarpit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		inside++
		most = max(most, inside)
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
	state := func() (int, int, int, int) {
		mu.Lock()
		defer mu.Unlock()
		return inside, most, returned, len(answered)
	}

	a := vendorTour(t, s, "Tarpit Goods", "tarpit-goods")
	for i := range 20 {
		a.want("subscribe A", 201, "POST", "/vendors/"+a.vendor+"/webhook-subscriptions",
			map[string]any{"url": tarpit.URL + "/hook", "event_types": []string{"product.created"}}, "Idempotency-Key", fmt.Sprintf("fair-a-sub-%d", i))
	}
	b := vendorTour(t, s, "Fast Goods", "fast-goods")
	fast := newReceiver(t)
	b.want("subscribe B", 201, "POST", "/vendors/"+b.vendor+"/webhook-subscriptions",
		map[string]any{"url": fast.URL, "event_types": []string{"product.created"}}, "Idempotency-Key", "fair-b-sub")
	product := func(slug string) map[string]any {
		return map[string]any{"kind": "simple", "name": "Fair shirt", "slug": slug, "description": "A shirt.",
			"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
			"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
			"features": []string{"linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": "FAIR-" + slug}
	}
	for i := range 3 {
		a.want("A writes", 201, "POST", "/vendors/"+a.vendor+"/products", product(fmt.Sprintf("a-%d", i)), "Idempotency-Key", fmt.Sprintf("fair-a-%d", i))
	}
	a.eventually("A holds its share", time.Minute, func() bool { n, _, _, _ := state(); return n >= webhook.VendorSlots })
	for i := range 3 {
		b.want("B writes", 201, "POST", "/vendors/"+b.vendor+"/products", product(fmt.Sprintf("b-%d", i)), "Idempotency-Key", fmt.Sprintf("fair-b-%d", i))
	}
	b.eventually("B's deliveries", time.Minute, func() bool {
		fast.mu.Lock()
		defer fast.mu.Unlock()
		return len(fast.byID) == 3
	})
	n, m, r, _ := state()
	if r != 0 {
		t.Fatalf("B's deliveries arrived only after %d of A's requests returned (a timeout): A's tarpit delayed them", r)
	}
	if m > webhook.VendorSlots || n > webhook.VendorSlots {
		t.Fatalf("A held %d requests at once (%d now), want at most %d", m, n, webhook.VendorSlots)
	}
	letGo()
	a.eventually("all of A's deliveries", webhook.MaxDeferDelay+2*time.Minute, func() bool { _, _, _, done := state(); return done == 60 })
	if _, m, _, _ := state(); m > webhook.VendorSlots {
		t.Fatalf("A held %d requests at once", m)
	}
}
