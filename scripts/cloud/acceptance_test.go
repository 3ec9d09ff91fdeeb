package main

// The acceptance tour: one walk through every operation group, every
// worker (through the stream router) and the reservation expirer, driven
// over HTTP and the administrative command line, run against
// functions/local (the in-process server) and against this binary (the
// deployed shape from the synthesized template). Both must pass the same
// assertions and answer every step with the same status.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// cloudTemplate is the template the tour runs on: $SELLERAPI_CLOUD_TEMPLATE
// (make test synthesizes one), or the tests skip unless
// REQUIRE_CLOUD=1.
func cloudTemplate(t *testing.T) string {
	p := os.Getenv("SELLERAPI_CLOUD_TEMPLATE")
	if p == "" {
		if os.Getenv("REQUIRE_CLOUD") != "" {
			t.Fatal("REQUIRE_CLOUD is set but SELLERAPI_CLOUD_TEMPLATE names no synthesized template")
		}
		t.Skip("no synthesized template: set SELLERAPI_CLOUD_TEMPLATE (scripts/cloud-synth makes one; make test does)")
	}
	return p
}

func build(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// shape is a running binary of functions/local's command line.
type shape struct {
	t    *testing.T
	bin  string
	data string
	base string
	cmd  *exec.Cmd
	logs *apitest.SyncBuffer
	done chan error
}

var listening = regexp.MustCompile(`listening on (http://\S+/v1)`)

func start(t *testing.T, bin string, env []string, args ...string) *shape {
	t.Helper()
	s := &shape{t: t, bin: bin, data: t.TempDir(), logs: &apitest.SyncBuffer{}, done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", s.data}, args...)...)
	s.cmd.Dir = "../.."
	s.cmd.Env = append(os.Environ(), env...)
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.logs.Write([]byte(sc.Text() + "\n"))
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(s.stop)
	timeout := time.After(3 * time.Minute)
	for s.base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				var exit error
				select {
				case exit = <-s.done:
					s.done <- exit // for stop
				case <-time.After(10 * time.Second):
					exit = errors.New("still running, its output closed")
				}
				t.Fatalf("%s exited before listening (%v):\n%s", bin, exit, s.logs.String())
			}
			if m := listening.FindStringSubmatch(l); m != nil {
				s.base = m[1]
			}
		case <-timeout:
			t.Fatalf("%s did not listen within 3 minutes:\n%s", bin, s.logs.String())
		}
	}
	go func() {
		for range lines {
		}
	}()
	return s
}

// stop interrupts the serve as a developer would (Ctrl-C) and waits for it.
func (s *shape) stop() {
	if s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// cli runs an administrative command on the shape's data directory and
// decodes its {"data": ...} output.
func (s *shape) cli(v any, args ...string) {
	s.t.Helper()
	cmd := exec.Command(s.bin, append(args, "--data", s.data)...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		s.t.Fatalf("%v printed %q: %v", args, out, err)
	}
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// tour is one walk, recording each step's status.
type tour struct {
	t      *testing.T
	s      *shape
	token  string
	vendor string
	steps  []string
}

func (tr *tour) do(step, method, path string, body any, headers ...string) resp {
	tr.t.Helper()
	var rd io.Reader
	ct := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, _ := json.Marshal(b)
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, tr.s.base+path, rd)
	if err != nil {
		tr.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", ct)
	}
	if tr.token != "" {
		req.Header.Set("Authorization", "Bearer "+tr.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		tr.t.Fatalf("%s: %v", step, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if step != "" {
		tr.steps = append(tr.steps, fmt.Sprintf("%s %d", step, res.StatusCode))
	}
	return resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

func (tr *tour) want(step string, status int, method, path string, body any, headers ...string) resp {
	tr.t.Helper()
	r := tr.do(step, method, path, body, headers...)
	if r.Status != status {
		tr.t.Fatalf("%s: %s %s answered %d, want %d: %s\nlogs:\n%s", step, method, path, r.Status, status, r.Body, tail(tr.s.logs.String(), 40))
	}
	return r
}

// eventually polls check until it reports true, for at most d.
func (tr *tour) eventually(what string, d time.Duration, check func() bool) {
	tr.t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(500 * time.Millisecond) {
		if check() {
			tr.steps = append(tr.steps, what+" done")
			return
		}
		if time.Now().After(deadline) {
			tr.t.Fatalf("%s: not done within %s\nlogs:\n%s", what, d, tail(tr.s.logs.String(), 60))
		}
	}
}

func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// receiver is a webhook endpoint on loopback.
type receiver struct {
	mu  sync.Mutex
	got []string // Moku-Event-Id of each delivery
	// byID counts the requests of each Moku-Delivery-Id.
	byID map[string]int
	URL  string
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{byID: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, r.Header.Get("Moku-Event-Id"))
		rc.byID[r.Header.Get("Moku-Delivery-Id")]++
		rc.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hook"
	return rc
}

func (rc *receiver) count(eventID string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := 0
	for _, id := range rc.got {
		if id == eventID {
			n++
		}
	}
	return n
}

// sellerSQS is the SQS emulator of the tour's seller, whose queue is a
// subscription's destination: the one $AWS_ENDPOINT_URL_SQS names, else
// one started for the test (scripts/sqs-local) and stopped when it ends.
// The shapes reach it on loopback, as --allow-private-webhooks allows.
func sellerSQS(t *testing.T) *sqs.Client {
	t.Helper()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_SQS")
	if endpoint == "" {
		root, err := filepath.Abs("../..")
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var log bytes.Buffer
		if endpoint, err = startEmulator(context.Background(), root, "sqs-local", dir, &log); err != nil {
			t.Fatalf("%v\n%s", err, log.String())
		}
		t.Cleanup(func() { stopEmulator(root, "sqs-local", dir, io.Discard) })
	}
	return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint), Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
}

// sellerQueue creates a queue of the seller's for one walk.
func sellerQueue(t *testing.T, c *sqs.Client) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String("seller-" + hex.EncodeToString(b[:]))})
	if err != nil {
		t.Fatalf("create the seller's queue: %v", err)
	}
	return aws.ToString(out.QueueUrl)
}

// takeQueued takes the next message of the seller's queue, if any, as
// the seller's consumer would: its signature (the Moku-Signature
// attribute, with Moku-Timestamp its t) verifies over the body with the
// subscription's secret, Moku-Event-Id names the body's event; then it
// deletes the message and returns the event.
func takeQueued(t *testing.T, c *sqs.Client, queue, secret string) map[string]any {
	t.Helper()
	ctx := context.Background()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 1, MessageAttributeNames: []string{"All"}})
	if err != nil {
		t.Fatalf("receive from the seller's queue: %v", err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	m := out.Messages[0]
	attr := func(k string) string { return aws.ToString(m.MessageAttributes[k].StringValue) }
	body := []byte(aws.ToString(m.Body))
	if err := signature.Verify(attr("Moku-Signature"), body, secret, time.Now(), 0); err != nil {
		t.Fatalf("queued message %s: %v", body, err)
	}
	var ev map[string]any
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatalf("queued message %s: %v", body, err)
	}
	if p, err := signature.Parse(attr("Moku-Signature")); err != nil || attr("Moku-Timestamp") != fmt.Sprint(p.Timestamp) ||
		attr("Moku-Event-Id") != ev["id"] || !strings.HasPrefix(attr("Moku-Delivery-Id"), "dlv_") || attr("Moku-Delivery-Attempt") == "" {
		t.Fatalf("queued message attributes: %v", m.MessageAttributes)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queue), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("delete from the seller's queue: %v", err)
	}
	return ev
}

var destinationRoles = map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "destination",
	"order_ingress": "enabled", "external_order_fulfillment": "moku"}

// png is a 4×4 PNG image.
var png, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAQAAAAECAIAAAAmkwkpAAAAG0lEQVR42mJhYDhhw8AAQSwgAgZwcwABAAD//1kIAkG4RTDCAAAAAElFTkSuQmCC")

// walk is the tour itself; sq is the seller's SQS emulator.
func walk(t *testing.T, s *shape, sq *sqs.Client) []string {
	tr := &tour{t: t, s: s}
	var v struct{ Data struct{ ID string } }
	s.cli(&v, "vendor", "create", "--name", "Acme Goods", "--slug", "acme-goods")
	var tok struct{ Data struct{ ID, Token string } }
	s.cli(&tok, "token", "issue", "--vendor", v.Data.ID, "--scopes", "all")
	tr.token, tr.vendor = tok.Data.Token, v.Data.ID
	vp := "/vendors/" + v.Data.ID
	idem := func(k string) []string { return []string{"Idempotency-Key", "tour-key-" + k} }

	// vendors, and the catch-all route.
	tr.want("openapi", 200, "GET", "/openapi.json", nil)
	tr.want("list vendors", 200, "GET", "/vendors", nil)
	tr.want("get vendor", 200, "GET", vp, nil)
	tr.want("unknown path", 404, "GET", "/nowhere", nil)
	tr.want("wrong method", 405, "DELETE", vp, nil)
	// A method no route of another group's path takes: in the deployed
	// shape it goes through $default to the vendors function, which
	// answers as the products function would.
	if r := tr.want("wrong method elsewhere", 405, "PUT", vp+"/products", nil); r.Header.Get("Allow") != "GET, POST" {
		t.Fatalf("wrong method elsewhere: Allow %q, want GET, POST", r.Header.Get("Allow"))
	}

	// webhooks: a subscription to every event, delivered by the
	// webhook-worker from the stream router's messages.
	rc := newReceiver(t)
	tr.want("subscribe", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"url": rc.URL, "event_types": []string{"*"}}, idem("sub-1")...)
	tr.want("list subscriptions", 200, "GET", vp+"/webhook-subscriptions", nil)
	// a second subscription, off while the tour makes its changes: its
	// re-enable recovers them (the replay-worker and the slow lane).
	off := newReceiver(t)
	var offSub struct {
		Data struct {
			ID        string
			CreatedAt string `json:"created_at"`
		}
	}
	tr.want("subscribe another", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"url": off.URL, "event_types": []string{"*"}}, idem("sub-2")...).json(t, &offSub)
	tr.want("disable it", 200, "PATCH", vp+"/webhook-subscriptions/"+offSub.Data.ID, map[string]any{"expected_version": 1, "status": "disabled"})
	// a third, to an SQS queue of the seller's: the webhook-worker sends
	// there (no delivery role here: the emulator's dummy credentials).
	queue := sellerQueue(t, sq)
	var qSub struct{ Data struct{ ID, Secret string } }
	tr.want("subscribe a queue", 201, "POST", vp+"/webhook-subscriptions", map[string]any{"destination": map[string]string{"type": "sqs", "queue_url": queue},
		"event_types": []string{"product.created"}}, idem("sub-3")...).json(t, &qSub)

	// products and inventory.
	product := map[string]any{
		"kind": "simple", "name": "Linen shirt", "slug": "linen-shirt", "description": "A shirt of washed linen.",
		"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
		"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
		"features": []string{"washed linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": "SHIRT-1",
	}
	var p struct{ Data struct{ ID string } }
	tr.want("create product", 201, "POST", vp+"/products", product, idem("prod-1")...).json(t, &p)
	tr.want("get product", 200, "GET", vp+"/products/"+p.Data.ID, nil)
	tr.eventually("product.created in the queue", time.Minute, func() bool {
		ev := takeQueued(t, sq, queue, qSub.Data.Secret)
		if r, _ := ev["resource"].(map[string]any); ev != nil && (ev["type"] != "product.created" || r["id"] != p.Data.ID) {
			t.Fatalf("the queue got %v, want the product's product.created", ev)
		}
		return ev != nil
	})
	var qTest struct {
		Data struct {
			EventID    string `json:"event_id"`
			StatusCode *int   `json:"status_code"`
			Response   string
			Succeeded  bool
		}
	}
	tr.want("test the queue", 200, "POST", vp+"/webhook-subscriptions/"+qSub.Data.ID+"/test", nil).json(t, &qTest)
	if !qTest.Data.Succeeded || qTest.Data.StatusCode != nil || !strings.HasPrefix(qTest.Data.Response, `{"MessageId":"`) {
		t.Fatalf("test delivery to the queue: %+v", qTest.Data)
	}
	tr.eventually("test delivery in the queue", time.Minute, func() bool {
		ev := takeQueued(t, sq, queue, qSub.Data.Secret)
		if ev != nil && (ev["type"] != "webhook_subscription.test" || ev["id"] != qTest.Data.EventID) {
			t.Fatalf("the queue got %v, want the test delivery's event %s", ev, qTest.Data.EventID)
		}
		return ev != nil
	})
	var items struct{ Data []struct{ ID string } }
	tr.want("list inventory", 200, "GET", vp+"/inventory-items", nil).json(t, &items)
	if len(items.Data) != 1 {
		t.Fatalf("inventory items: %+v", items)
	}
	item := items.Data[0].ID
	tr.want("adjust inventory", 200, "POST", vp+"/inventory-items/"+item+"/adjustments", map[string]any{"target_on_hand": 20, "expected_version": 1}, idem("adj-1")...)

	// connections, listings, external orders, conflicts.
	var conn struct{ Data struct{ ID string } }
	tr.want("create connection", 201, "POST", vp+"/connections", map[string]any{"provider": "marketplace_a", "external_account_id": "acct-1", "display_name": "Main store", "roles": destinationRoles}, idem("conn-1")...).json(t, &conn)
	tr.want("get connection", 200, "GET", vp+"/connections/"+conn.Data.ID, nil)
	tr.want("list listings", 200, "GET", vp+"/listings", nil)
	tr.want("list external orders", 200, "GET", vp+"/external-orders", nil)
	tr.want("list conflicts", 200, "GET", vp+"/conflicts", nil)

	// reservations: one left to expire (the reservation-expirer's
	// schedule), one committed (the seller-order-worker's projection).
	var held, sold struct {
		Data struct {
			ID      string
			Version int64
		}
	}
	tr.want("reserve to expire", 201, "POST", vp+"/inventory-reservations", map[string]any{"connection_id": conn.Data.ID, "inventory_item_id": item, "quantity": 1, "expires_in_seconds": 60}, idem("res-1")...).json(t, &held)
	tr.want("reserve to commit", 201, "POST", vp+"/inventory-reservations", map[string]any{"connection_id": conn.Data.ID, "inventory_item_id": item, "quantity": 2}, idem("res-2")...).json(t, &sold)
	tr.want("commit", 200, "POST", vp+"/inventory-reservations/"+sold.Data.ID+"/commit", map[string]any{"expected_version": sold.Data.Version}, idem("res-2-commit")...)
	var xo struct{ Data struct{ ID string } }
	tr.want("import external order", 201, "POST", vp+"/external-orders", map[string]any{"connection_id": conn.Data.ID, "external_order_id": "EXT-1",
		"lines": []any{map[string]any{"line_id": "a", "inventory_item_id": item, "quantity": 1, "unit_price": 1250}}}, idem("xo-1")...).json(t, &xo)
	tr.want("commit external order", 200, "POST", vp+"/external-orders/"+xo.Data.ID+"/commit", map[string]any{"expected_version": 1}, idem("xo-1-commit")...)
	tr.eventually("seller order projected", time.Minute, func() bool {
		var l struct{ Data []any }
		tr.want("", 200, "GET", vp+"/seller-orders", nil).json(t, &l)
		return len(l.Data) == 1
	})

	// bulk operations: the bulk-worker applies the adjustment.
	var inv struct{ Data struct{ Version int64 } }
	tr.want("get inventory item", 200, "GET", vp+"/inventory-items/"+item, nil).json(t, &inv)
	var bop struct{ Data struct{ ID, Status string } }
	tr.want("submit bulk", 202, "POST", vp+"/bulk-operations", map[string]any{"kind": "inventory_adjustment", "items": []any{
		map[string]any{"key": "r1", "inventory_item_id": item, "body": map[string]any{"target_on_hand": 30, "expected_version": inv.Data.Version}}}}, idem("bulk-1")...).json(t, &bop)
	tr.eventually("bulk operation finished", time.Minute, func() bool {
		var b struct{ Data struct{ Status string } }
		tr.want("", 200, "GET", vp+"/bulk-operations/"+bop.Data.ID, nil).json(t, &b)
		return b.Data.Status != "queued" && b.Data.Status != "running"
	})

	// sync jobs: the sync-worker checks a destination's stock report.
	var job struct{ Data struct{ ID string } }
	tr.want("submit sync job", 202, "POST", vp+"/sync-jobs", map[string]any{"connection_id": conn.Data.ID, "kind": "inventory", "items": []any{map[string]any{"inventory_item_id": item, "on_hand": 30}}}, idem("sync-1")...).json(t, &job)
	tr.eventually("sync job finished", time.Minute, func() bool {
		var b struct{ Data struct{ Status string } }
		tr.want("", 200, "GET", vp+"/sync-jobs/"+job.Data.ID, nil).json(t, &b)
		return b.Data.Status != "queued" && b.Data.Status != "running"
	})

	// events, webhook delivery and replay (the replay-worker).
	var evs struct{ Data []struct{ ID, Type string } }
	tr.want("list events", 200, "GET", vp+"/events", nil).json(t, &evs)
	if len(evs.Data) == 0 {
		t.Fatal("no events")
	}
	ev := evs.Data[len(evs.Data)-1].ID
	tr.want("get event", 200, "GET", vp+"/events/"+ev, nil)
	tr.eventually("webhook delivered", time.Minute, func() bool { return rc.count(ev) >= 1 })
	var rp struct {
		Data struct {
			ReplayID string `json:"replay_id"`
			ID       string
		}
	}
	tr.want("replay", 202, "POST", vp+"/events/"+ev+"/replay", map[string]any{}, idem("replay-1")...).json(t, &rp)
	tr.eventually("replay delivered", time.Minute, func() bool { return rc.count(ev) >= 2 })
	var reenabled struct {
		Data struct{ Recovery struct{ ID string } }
	}
	tr.want("re-enable with recover_since", 200, "PATCH", vp+"/webhook-subscriptions/"+offSub.Data.ID,
		map[string]any{"expected_version": 2, "status": "enabled", "recover_since": offSub.Data.CreatedAt}).json(t, &reenabled)
	recovery := vp + "/webhook-subscriptions/" + offSub.Data.ID + "/recoveries/" + reenabled.Data.Recovery.ID

	// media through the media function (the S3 stand-in on the cloud).
	sum := sha256.Sum256(png)
	var media struct{ Data struct{ URL string } }
	tr.want("put media", 200, "PUT", vp+"/media/"+hex.EncodeToString(sum[:]), png, "Content-Type", "image/png").json(t, &media)
	if !strings.HasPrefix(media.Data.URL, s.base+"/") {
		t.Fatalf("media URL %q is not under %s", media.Data.URL, s.base)
	}
	tr.want("get media file", 200, "GET", strings.TrimPrefix(media.Data.URL, s.base), nil)

	// store pairings.
	tr.want("create store pairing", 201, "POST", vp+"/store-pairings", map[string]any{}, idem("pair-1")...)

	// the expirer releases the first hold within a minute of its end.
	tr.eventually("reservation expired", 3*time.Minute, func() bool {
		var r struct{ Data struct{ Status string } }
		tr.want("", 200, "GET", vp+"/inventory-reservations/"+held.Data.ID, nil).json(t, &r)
		return r.Data.Status == "expired"
	})

	// the recovery (started a minute after the re-enable) has sent the
	// second subscription what it missed.
	tr.eventually("recovery completed", 2*time.Minute, func() bool {
		var r struct{ Data struct{ Status string } }
		tr.want("", 200, "GET", recovery, nil).json(t, &r)
		off.mu.Lock()
		got := len(off.got)
		off.mu.Unlock()
		return r.Data.Status == "completed" && got > 0
	})

	// token revoke through the admin command line.
	s.cli(&struct{}{}, "token", "revoke", "--id", tok.Data.ID)
	tr.want("revoked token", 401, "GET", vp, nil)
	return tr.steps
}

// serveFlags are the tour's: loopback webhooks, and allowances the polling
// does not spend.
var serveFlags = []string{"--allow-private-webhooks", "--rate-reads", "100000", "--rate-writes", "100000"}

// TestAcceptance walks the tour on functions/local and on the deployed
// shape and wants the same statuses from both.
func TestAcceptance(t *testing.T) {
	tpl := cloudTemplate(t)
	t.Parallel()
	local := build(t, "./functions/local")
	cloud := build(t, "./scripts/cloud")
	sq := sellerSQS(t)
	var got [2][]string
	// Both shapes walk at once (the expirer's minute dominates each walk);
	// the group returns when both are done.
	t.Run("shapes", func(t *testing.T) {
		t.Run("local", func(t *testing.T) {
			t.Parallel()
			got[0] = walk(t, start(t, local, nil, serveFlags...), sq)
		})
		t.Run("cloud", func(t *testing.T) {
			t.Parallel()
			s := start(t, cloud, []string{"SELLERAPI_CLOUD_TEMPLATE=" + tpl}, serveFlags...)
			got[1] = walk(t, s, sq)
			s.stop()
			if left, _ := filepath.Glob(filepath.Join(s.data, "emulators", "*.pid")); len(left) > 0 {
				t.Errorf("the interrupted serve left emulators running: %v", left)
			}
			if i := strings.LastIndex(s.logs.String(), "cold and warm latency per function"); i < 0 {
				t.Errorf("the cloud serve printed no latency table:\n%s", tail(s.logs.String(), 40))
			} else {
				t.Logf("latency:\n%s", s.logs.String()[i:])
			}
		})
	})
	if got[0] != nil && got[1] != nil && !slices.Equal(got[0], got[1]) {
		t.Fatalf("the shapes differ:\nlocal: %v\ncloud: %v", got[0], got[1])
	}
}
