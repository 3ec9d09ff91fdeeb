package main

// Faults in the deployed shape (faults.go switches them): nothing the API
// accepted is lost, and nothing is applied twice.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFaultsLoseNothing runs the deployed shape through three faults, one
// after the other, with the stream router's sweep every 2 s (grace 4 s)
// and visibility timeouts capped at 8 s so that recovery takes seconds:
//
//  1. SQS refuses every send for 20 s while products are created and a
//     bulk operation is submitted: the stream mapping retries, gives up
//     (its on-failure record is logged) and the sweep routes the changes
//     once SQS is back.
//  2. The bulk worker is killed with SIGKILL 50 ms into a batch: the
//     message returns after the visibility timeout and the job resumes.
//  3. The stream router is killed at the start of its next stream batch
//     (a timeout, as Lambda sees it): the mapping retries.
//
// Then every event of the vendor was delivered, each delivery reached the
// receiver once and has one succeeded attempt record, both bulk jobs
// completed with every record succeeded, and each adjusted item has one
// stock effect per adjustment: nothing lost, nothing applied twice.
func TestFaultsLoseNothing(t *testing.T) {
	tpl := cloudTemplate(t)
	t.Parallel()
	cloud := build(t, "./scripts/cloud")
	s := start(t, cloud, []string{"SELLERAPI_CLOUD_TEMPLATE=" + tpl},
		append(serveFlags, "--sweep-every", "2s", "--sweep-grace", "4s", "--max-visibility", "8s")...)
	tr := &tour{t: t, s: s}
	var v struct{ Data struct{ ID string } }
	s.cli(&v, "vendor", "create", "--name", "Faulty Goods", "--slug", "faulty-goods")
	var tok struct{ Data struct{ ID, Token string } }
	s.cli(&tok, "token", "issue", "--vendor", v.Data.ID, "--scopes", "all")
	tr.token = tok.Data.Token
	vp := "/vendors/" + v.Data.ID
	keys := 0
	idem := func() []string { keys++; return []string{"Idempotency-Key", fmt.Sprintf("fault-key-%d", keys)} }
	fault := func(name, content string) {
		if err := os.WriteFile(filepath.Join(s.data, "faults", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clear := func(name string) { os.Remove(filepath.Join(s.data, "faults", name)) }

	rc := newReceiver(t)
	var sub struct{ Data struct{ ID string } }
	tr.want("subscribe", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"url": rc.URL, "event_types": []string{"*"}}, idem()...).json(t, &sub)

	product := func(i int) {
		body := map[string]any{
			"kind": "simple", "name": fmt.Sprintf("Linen shirt %d", i), "slug": fmt.Sprintf("linen-shirt-%d", i), "description": "A shirt of washed linen.",
			"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
			"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
			"features": []string{"washed linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": fmt.Sprintf("SHIRT-%d", i),
		}
		tr.want("create product", 201, "POST", vp+"/products", body, idem()...)
	}
	version := func(item string) int64 {
		var inv struct{ Data struct{ Version int64 } }
		tr.want("", 200, "GET", vp+"/inventory-items/"+item, nil).json(t, &inv)
		return inv.Data.Version
	}
	// bulk submits one adjustment per item to target.
	bulk := func(items []string, target int) string {
		var recs []any
		for i, it := range items {
			recs = append(recs, map[string]any{"key": fmt.Sprintf("r%d", i), "inventory_item_id": it,
				"body": map[string]any{"target_on_hand": target, "expected_version": version(it)}})
		}
		var bop struct{ Data struct{ ID string } }
		tr.want("submit bulk", 202, "POST", vp+"/bulk-operations", map[string]any{"kind": "inventory_adjustment", "items": recs}, idem()...).json(t, &bop)
		return bop.Data.ID
	}
	finished := func(id string) func() bool {
		return func() bool {
			var b struct{ Data struct{ Status string } }
			tr.want("", 200, "GET", vp+"/bulk-operations/"+id, nil).json(t, &b)
			return b.Data.Status == "completed"
		}
	}
	logged := func(what string) func() bool { return func() bool { return strings.Contains(s.logs.String(), what) } }

	// 1. SQS refuses sends.
	fault("refuse-sqs-sends", "")
	for i := range 4 {
		product(i)
	}
	var list struct{ Data []struct{ ID string } }
	tr.want("", 200, "GET", vp+"/inventory-items?limit=100", nil).json(t, &list)
	var items []string
	for _, it := range list.Data {
		items = append(items, it.ID)
	}
	if len(items) != 4 {
		t.Fatalf("inventory items %v", items)
	}
	first := bulk(items, 5)
	tr.eventually("the stream mapping gave up on a batch", time.Minute, logged("stream: batch dropped"))
	time.Sleep(20 * time.Second)
	clear("refuse-sqs-sends")
	tr.eventually("bulk operation 1 completed after the outage", 2*time.Minute, finished(first))
	if !strings.Contains(s.logs.String(), "routed changes the stream had not") {
		t.Fatalf("the sweep routed nothing: the outage was not seen\n%s", tail(s.logs.String(), 60))
	}

	// 2. The bulk worker dies mid-batch.
	fault("kill-bulk-worker", "50")
	second := bulk(items, 9)
	tr.eventually("bulk operation 2 completed after the kill", 2*time.Minute, finished(second))
	if !strings.Contains(s.logs.String(), "fault: killing the next invocation") {
		t.Fatal("the bulk worker was not killed")
	}

	// 3. The stream router dies on its next invocation.
	fault("kill-stream-router", "0 Records")
	product(4)
	tr.eventually("the router was killed", time.Minute, func() bool {
		_, err := os.Stat(filepath.Join(s.data, "faults", "kill-stream-router"))
		return os.IsNotExist(err)
	})

	// Every event delivered, each delivery made once.
	var evs struct{ Data []struct{ ID, Type string } }
	tr.eventually("every event delivered", 2*time.Minute, func() bool {
		tr.want("", 200, "GET", vp+"/events?limit=100", nil).json(t, &evs)
		for _, e := range evs.Data {
			if rc.count(e.ID) == 0 {
				return false
			}
		}
		return len(evs.Data) > 0
	})
	var dl struct {
		Data []struct {
			DeliveryID string `json:"delivery_id"`
			Outcome    string
		}
	}
	tr.want("", 200, "GET", vp+"/webhook-subscriptions/"+sub.Data.ID+"/deliveries?limit=100", nil).json(t, &dl)
	succeeded := map[string]int{}
	for _, a := range dl.Data {
		if a.Outcome == "succeeded" {
			succeeded[a.DeliveryID]++
		}
	}
	rc.mu.Lock()
	for id, n := range rc.byID {
		if n != 1 || succeeded[id] != 1 {
			t.Errorf("delivery %s: %d requests, %d succeeded attempt records", id, n, succeeded[id])
		}
	}
	if len(rc.byID) != len(evs.Data) {
		t.Errorf("%d deliveries for %d events", len(rc.byID), len(evs.Data))
	}
	rc.mu.Unlock()

	// Both jobs applied every record once.
	for _, id := range []string{first, second} {
		var b struct {
			Data struct {
				Status string
				Counts struct{ Total, Succeeded int }
			}
		}
		tr.want("", 200, "GET", vp+"/bulk-operations/"+id, nil).json(t, &b)
		if b.Data.Status != "completed" || b.Data.Counts.Total != 4 || b.Data.Counts.Succeeded != 4 {
			t.Errorf("bulk operation %s: %+v", id, b.Data)
		}
	}
	for _, it := range items {
		var inv struct {
			Data struct {
				OnHand int `json:"on_hand"`
			}
		}
		tr.want("", 200, "GET", vp+"/inventory-items/"+it, nil).json(t, &inv)
		var fx struct{ Data []any }
		tr.want("", 200, "GET", vp+"/stock-effects?inventory_item_id="+it, nil).json(t, &fx)
		if inv.Data.OnHand != 9 || len(fx.Data) != 2 {
			t.Errorf("item %s: on hand %d, %d stock effects; want 9 and 2", it, inv.Data.OnHand, len(fx.Data))
		}
	}
	logs := s.logs.String()
	swept := 0
	for _, m := range sweptCount.FindAllStringSubmatch(logs, -1) {
		n, _ := strconv.Atoi(m[1])
		swept += n
	}
	t.Logf("faults: %d stream batches dropped by the mapping, %d changes routed by the sweep, %d invocations killed, %d stream retries; "+
		"%d events each delivered once, %d deliveries, 2 bulk operations of %d records completed, %d stock effects",
		strings.Count(logs, "stream: batch dropped"), swept, strings.Count(logs, "fault: killing the next invocation"),
		strings.Count(logs, "stream: batch failed; retrying"), len(evs.Data), len(rc.byID), len(items), 2*len(items))

	// Bodies the contract refuses, and those API Gateway and Lambda refuse
	// before the function sees them.
	media := func(n int) resp {
		return tr.do("", "PUT", vp+"/media/"+strings.Repeat("0", 64), make([]byte, n), "Content-Type", "image/png")
	}
	if r := media(2<<20 + 1); r.Status != 413 || !strings.Contains(string(r.Body), "MEDIA_TOO_LARGE") {
		t.Errorf("a body over 2 MiB: %d %s", r.Status, r.Body)
	}
	if r := media(5 << 20); r.Status != 500 || string(r.Body) != `{"message":"Internal Server Error"}` {
		t.Errorf("a 5 MiB body (over Lambda's 6 MB event once base64-encoded): %d %s", r.Status, r.Body)
	}
	if r := media(11 << 20); r.Status != 413 || string(r.Body) != `{"message":"Request Entity Too Large"}` {
		t.Errorf("an 11 MiB body (over API Gateway's 10 MB): %d %s", r.Status, r.Body)
	}
}

var sweptCount = regexp.MustCompile(`routed changes the stream had not.*?"routed":(\d+)`)
