package main

// Faults in the deployed shape (faults.go switches them): nothing the API
// accepted is lost, and nothing is applied twice.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	events "github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/webhook"
)

// vendorTour makes a vendor on s through the admin command line, and a
// tour with a token of all its scopes.
func vendorTour(t *testing.T, s *shape, name, slug string) *tour {
	var v struct{ Data struct{ ID string } }
	s.cli(&v, "vendor", "create", "--name", name, "--slug", slug)
	var tok struct{ Data struct{ ID, Token string } }
	s.cli(&tok, "token", "issue", "--vendor", v.Data.ID, "--scopes", "all")
	return &tour{t: t, s: s, token: tok.Data.Token, vendor: v.Data.ID}
}

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
	tr := vendorTour(t, s, "Faulty Goods", "faulty-goods")
	vp := "/vendors/" + tr.vendor
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
	// A delivery's attempt is recorded once its receiver has answered:
	// wait for the records of what the receiver got.
	succeeded := map[string]int{}
	tr.eventually("every delivery recorded", time.Minute, func() bool {
		tr.want("", 200, "GET", vp+"/webhook-subscriptions/"+sub.Data.ID+"/deliveries?limit=100", nil).json(t, &dl)
		succeeded = map[string]int{}
		for _, a := range dl.Data {
			if a.Outcome == "succeeded" {
				succeeded[a.DeliveryID]++
			}
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		for id := range rc.byID {
			if succeeded[id] == 0 {
				return false
			}
		}
		return true
	})
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

// TestFaultsWebhookOutlivesLoopGuard proves that a delivery to a receiver
// that is down for longer than Lambda's recursive-loop guard allows (about
// 16 invocations of one chain) is retried for its whole window and then
// recorded dead once. The cap-sqs-delay switch lowers every send's delay
// to 1 s, so the webhook worker's 15-minute hops of a wait come every
// second, and the delivery message is put on the webhook queue as the
// stream router would, but with CreatedAt backdated so that its 72 h
// window ends 50 s after it is sent. The receiver answers 503 throughout.
// Then the worker re-sent the delivery to its own queue more than 16
// times, every attempt was made once (attempts 1..n, one request each),
// only the last is dead, and the subscription, which never succeeded, is
// disabled with the reason deliveries_failing.
func TestFaultsWebhookOutlivesLoopGuard(t *testing.T) {
	tplPath := cloudTemplate(t)
	t.Parallel()
	cloud := build(t, "./scripts/cloud")
	s := start(t, cloud, []string{"SELLERAPI_CLOUD_TEMPLATE=" + tplPath}, serveFlags...)
	if err := os.WriteFile(filepath.Join(s.data, "faults", "cap-sqs-delay"), []byte("1"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := vendorTour(t, s, "Down Hooks", "down-hooks")
	vp := "/vendors/" + tr.vendor

	// A receiver that is down: 503 to every request, counted per attempt.
	var mu sync.Mutex
	attempts := map[string]int{} // Moku-Delivery-Attempt → requests
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		attempts[r.Header.Get(webhook.HeaderAttempt)]++
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)

	// The event comes first and the subscription after the router fanned
	// it out (a witness subscription received it), so that the router
	// fans nothing out to it: the only delivery is the one put on the
	// queue below.
	witness := newReceiver(t)
	tr.want("subscribe the witness", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"url": witness.URL, "event_types": []string{events.ProductCreated}},
		"Idempotency-Key", "hops-witness")
	tr.want("create product", 201, "POST", vp+"/products", map[string]any{
		"kind": "simple", "name": "Hop shirt", "slug": "hop-shirt", "description": "A shirt.",
		"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
		"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
		"features": []string{"linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": "HOP-1",
	}, "Idempotency-Key", "hops-product")
	var evs struct{ Data []struct{ ID, Type string } }
	tr.want("", 200, "GET", vp+"/events?limit=100", nil).json(t, &evs)
	var eventID string
	for _, e := range evs.Data {
		if e.Type == events.ProductCreated {
			eventID = e.ID
		}
	}
	if eventID == "" {
		t.Fatalf("no %s event: %+v", events.ProductCreated, evs.Data)
	}
	tr.eventually("the event fanned out", time.Minute, func() bool { return witness.count(eventID) > 0 })
	var sub struct{ Data struct{ ID string } }
	tr.want("subscribe", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"url": down.URL + "/hook", "event_types": []string{events.ProductCreated}},
		"Idempotency-Key", "hops-sub").json(t, &sub)

	// The delivery message, as the router makes it, on the webhook queue.
	tpl, err := LoadTemplate(tplPath)
	if err != nil {
		t.Fatal(err)
	}
	// The fresh lane's queue, where the router sends; the retries hop in
	// the slow lane's (webhook/lanes.go).
	var queueName, slowName string
	for _, q := range tpl.Queues {
		switch {
		case q.DeadLetter != "" && strings.HasSuffix(q.Name, "-webhook-worker"):
			queueName = q.Name
		case q.DeadLetter != "" && strings.HasSuffix(q.Name, "-webhook-slow-lane"):
			slowName = q.Name
		}
	}
	if queueName == "" || slowName == "" {
		t.Fatalf("no webhook queues of both lanes in the template: %q, %q", queueName, slowName)
	}
	endpoint, err := os.ReadFile(filepath.Join(s.data, "emulators", "sqs-local.endpoint"))
	if err != nil {
		t.Fatal(err)
	}
	sq := sqs.New(sqs.Options{Region: region(), BaseEndpoint: aws.String(strings.TrimSpace(string(endpoint))),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	ctx := t.Context()
	qu, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queueName)})
	if err != nil {
		t.Fatalf("the webhook queue %q: %v", queueName, err)
	}
	const window = 50 * time.Second
	now := time.Now()
	deliveryID := webhook.DeliveryID(eventID, sub.Data.ID, "")
	msg, err := json.Marshal(webhook.Message{VendorID: tr.vendor, EventID: eventID, SubscriptionID: sub.Data.ID, DeliveryID: deliveryID,
		Attempt: 1, CreatedAt: now.Add(window - webhook.RetryWindow), NotBefore: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: qu.QueueUrl, MessageBody: aws.String(string(msg))}); err != nil {
		t.Fatal(err)
	}

	type attempt struct {
		DeliveryID string `json:"delivery_id"`
		Attempt    int
		Outcome    string
	}
	records := func() []attempt {
		var dl struct{ Data []attempt }
		tr.want("", 200, "GET", vp+"/webhook-subscriptions/"+sub.Data.ID+"/deliveries?limit=100", nil).json(t, &dl)
		return dl.Data
	}
	var recs []attempt
	tr.eventually("the delivery recorded dead", window+time.Minute, func() bool {
		recs = records()
		return slices.ContainsFunc(recs, func(a attempt) bool { return a.Outcome == webhook.OutcomeDead })
	})
	if since := time.Since(now); since < window {
		t.Errorf("the delivery died %s after it began, before its window of %s ended", since, window)
	}
	// Nothing follows a death: no attempt, no hop.
	hops := func() int {
		n := 0
		for _, l := range strings.Split(s.logs.String(), "\n") {
			if strings.Contains(l, "fault: send delay capped") && (strings.Contains(l, queueName) || strings.Contains(l, slowName)) {
				n++
			}
		}
		return n
	}
	hopsAtDeath := hops()
	time.Sleep(3 * time.Second)
	recs = records()
	if h := hops(); h != hopsAtDeath {
		t.Errorf("%d hops after the delivery died", h-hopsAtDeath)
	}
	if hopsAtDeath <= 16 {
		t.Errorf("the webhook worker re-sent the delivery to its own queues %d times; want more than Lambda's loop guard allows (16)", hopsAtDeath)
	}

	slices.SortFunc(recs, func(a, b attempt) int { return a.Attempt - b.Attempt })
	mu.Lock()
	defer mu.Unlock()
	dead := 0
	for i, a := range recs {
		if a.DeliveryID != deliveryID || a.Attempt != i+1 {
			t.Errorf("attempt record %d: %+v; want attempt %d of %s", i, a, i+1, deliveryID)
		}
		want := webhook.OutcomeFailed
		if i == len(recs)-1 {
			want = webhook.OutcomeDead
		}
		if a.Outcome != want {
			t.Errorf("attempt %d: outcome %s, want %s", a.Attempt, a.Outcome, want)
		}
		if a.Outcome == webhook.OutcomeDead {
			dead++
		}
		if n := attempts[strconv.Itoa(a.Attempt)]; n != 1 {
			t.Errorf("attempt %d reached the receiver %d times", a.Attempt, n)
		}
	}
	if dead != 1 || len(attempts) != len(recs) {
		t.Errorf("%d dead records; the receiver saw attempts %v for %d records", dead, attempts, len(recs))
	}
	var got struct {
		Data struct {
			Status         string
			DisabledReason *string `json:"disabled_reason"`
		}
	}
	tr.want("", 200, "GET", vp+"/webhook-subscriptions/"+sub.Data.ID, nil).json(t, &got)
	if got.Data.Status != webhook.StatusDisabled || got.Data.DisabledReason == nil || *got.Data.DisabledReason != webhook.DisabledByFailures {
		t.Errorf("the subscription after its only delivery died: %+v", got.Data)
	}
	tr.want("", 200, "GET", vp+"/events?limit=100", nil).json(t, &evs)
	disabled := 0
	for _, e := range evs.Data {
		if e.Type == events.WebhookSubscriptionDisabled {
			disabled++
		}
	}
	if disabled != 1 {
		t.Errorf("%d %s events, want 1", disabled, events.WebhookSubscriptionDisabled)
	}
	// A second message of an attempt already made (an SQS duplicate, a
	// sweep's re-routing) re-sends the next attempt, so that two chains
	// hop until the window ends; the claims still make each attempt once.
	forks := 0
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, deliveryID) && strings.Contains(l, "webhook attempt already made") {
			forks++
		}
	}
	t.Logf("a receiver down for %s of a delivery's window: %d hops of the webhook worker to its own queue, %d attempts (%d dead), each made once, %d duplicate messages of an attempt; subscription %s (%s)",
		window, hopsAtDeath, len(recs), dead, forks, got.Data.Status, *got.Data.DisabledReason)
}

// TestCapDelays lowers the delays of both protocols' sends and leaves
// shorter ones alone.
func TestCapDelays(t *testing.T) {
	jsonReq := httptest.NewRequest("POST", "/", nil)
	jsonReq.Header.Set("X-Amz-Target", "AmazonSQS.SendMessageBatch")
	body := `{"QueueUrl":"http://q/webhook","Entries":[{"Id":"a","MessageBody":"{}","DelaySeconds":900},{"Id":"b","MessageBody":"{}","DelaySeconds":1},{"Id":"c","MessageBody":"{}"}]}`
	out, queue, n := capDelays(jsonReq, []byte(body), 1)
	var got struct{ Entries []struct{ DelaySeconds *int } }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if n != 1 || queue != "http://q/webhook" || len(got.Entries) != 3 || *got.Entries[0].DelaySeconds != 1 || *got.Entries[1].DelaySeconds != 1 || got.Entries[2].DelaySeconds != nil {
		t.Errorf("JSON batch: %d capped, queue %q, %s", n, queue, out)
	}
	if out, _, n := capDelays(jsonReq, []byte(`{"QueueUrl":"q","DelaySeconds":0}`), 1); n != 0 || string(out) != `{"QueueUrl":"q","DelaySeconds":0}` {
		t.Errorf("a send under the cap: %d capped, %s", n, out)
	}
	query := httptest.NewRequest("POST", "/", nil)
	out, queue, n = capDelays(query, []byte("Action=SendMessage&QueueUrl=http%3A%2F%2Fq%2Fw&DelaySeconds=600&MessageBody=x"), 2)
	if n != 1 || queue != "http://q/w" || !strings.Contains(string(out), "DelaySeconds=2") {
		t.Errorf("query send: %d capped, queue %q, %s", n, queue, out)
	}
}
