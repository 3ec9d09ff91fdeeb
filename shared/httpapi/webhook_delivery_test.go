package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// receiver is a webhook endpoint on loopback (allowed only under
// --allow-private-webhooks) that verifies every delivery's signature with
// the signature package, as a vendor's receiver would.
type whReceiver struct {
	t   *testing.T
	e   *apitest.Env
	URL string

	mu     sync.Mutex
	secret string
	got    []whReceived
	// answer picks the status of the n-th request (from 0); 204 when nil.
	answer func(n int, eventID string) int
}

type whReceived struct {
	Header   http.Header
	Body     []byte
	VerifyOK error
}

func newReceiver(t *testing.T, e *apitest.Env) *whReceiver {
	rc := &whReceiver{t: t, e: e}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		err := signature.Verify(r.Header.Get("Moku-Signature"), body, rc.secret, e.Clock.Now(), 0)
		rc.got = append(rc.got, whReceived{Header: r.Header.Clone(), Body: body, VerifyOK: err})
		answer := rc.answer
		rc.mu.Unlock()
		status := http.StatusNoContent
		if answer != nil {
			status = answer(n, r.Header.Get("Moku-Event-Id"))
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	rc.URL = srv.URL + "/hook"
	return rc
}

// subscribe subscribes the receiver and keeps the secret to verify with.
func (rc *whReceiver) subscribe(types ...string) subscriptionBody {
	s := mustSubscribe(rc.t, rc.e, rc.URL, types...)
	rc.setSecret(s.Data.Secret)
	return s
}

func (rc *whReceiver) setSecret(s string) {
	rc.mu.Lock()
	rc.secret = s
	rc.mu.Unlock()
}

func (rc *whReceiver) requests() []whReceived {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]whReceived(nil), rc.got...)
}

func whDrain(t *testing.T, e *apitest.Env) {
	t.Helper()
	if err := e.App.Drain(context.Background()); err != nil {
		t.Fatalf("drain: %v", err)
	}
}

type whAttempt struct {
	ID             string
	SubscriptionID string     `json:"subscription_id"`
	DeliveryID     string     `json:"delivery_id"`
	EventID        string     `json:"event_id"`
	EventType      string     `json:"event_type"`
	ReplayID       *string    `json:"replay_id"`
	Attempt        int        `json:"attempt"`
	AttemptedAt    time.Time  `json:"attempted_at"`
	DurationMS     *int64     `json:"duration_ms"`
	StatusCode     *int       `json:"status_code"`
	Error          *string    `json:"error"`
	Outcome        string     `json:"outcome"`
	NextAttemptAt  *time.Time `json:"next_attempt_at"`
}

func whAttempts(t *testing.T, e *apitest.Env, subID string) []whAttempt {
	t.Helper()
	r := e.Get(subsPath(e) + "/" + subID + "/deliveries?limit=100")
	if r.Status != 200 {
		t.Fatalf("deliveries: %d %s", r.Status, r.Body)
	}
	var page struct{ Data []whAttempt }
	r.JSON(t, &page)
	return page.Data
}

// productEvent creates a product and returns its product.created event as
// GET /events/{id} shows it.
func whProductEvent(t *testing.T, e *apitest.Env, slug string) map[string]any {
	t.Helper()
	p := mustCreate(t, e, "prod-"+slug, simpleProduct(slug))
	var list struct{ Data []map[string]any }
	e.Get("/vendors/"+e.Vendor.ID+"/events?type=product.created&limit=100").JSON(t, &list)
	for _, ev := range list.Data {
		if ev["resource"].(map[string]any)["id"] == p.Data.ID {
			var one struct{ Data map[string]any }
			e.Get("/vendors/"+e.Vendor.ID+"/events/"+ev["id"].(string)).JSON(t, &one)
			return one.Data
		}
	}
	t.Fatalf("no product.created event for %s", p.Data.ID)
	return nil
}

func TestWebhookDeliveryEndToEnd(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	rc := newReceiver(t, e)
	sub := rc.subscribe("product.created")
	other := newReceiver(t, e)
	other.subscribe("inventory_item.adjusted")
	off := newReceiver(t, e)
	offSub := off.subscribe("*")
	if r := patchSubscription(e, offSub.Data.ID, map[string]any{"expected_version": 1, "status": "disabled"}); r.Status != 200 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}

	ev := whProductEvent(t, e, "delivered")
	whDrain(t, e)

	got := rc.requests()
	if len(got) != 1 {
		t.Fatalf("receiver got %d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.VerifyOK != nil {
		t.Fatalf("signature: %v (header %q)", d.VerifyOK, d.Header.Get("Moku-Signature"))
	}
	if d.Header.Get("Moku-Event-Id") != ev["id"] || !strings.HasPrefix(d.Header.Get("Moku-Delivery-Id"), "dlv_") ||
		d.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(d.Header.Get("User-Agent"), "Moku-Webhooks/") ||
		d.Header.Get("Moku-Delivery-Attempt") != "1" {
		t.Fatalf("headers: %v", d.Header)
	}
	// The body is the event exactly as GET /events/{id} shows it.
	var body map[string]any
	if err := json.Unmarshal(d.Body, &body); err != nil || !reflect.DeepEqual(body, ev) {
		t.Fatalf("body %s, want %v", d.Body, ev)
	}
	if n := len(other.requests()) + len(off.requests()); n != 0 {
		t.Fatalf("a subscription of another type or a disabled one got %d deliveries", n)
	}
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "succeeded" || as[0].StatusCode == nil || *as[0].StatusCode != 204 || as[0].Attempt != 1 ||
		as[0].EventID != ev["id"] || as[0].EventType != "product.created" || as[0].DeliveryID != d.Header.Get("Moku-Delivery-Id") ||
		as[0].ReplayID != nil || as[0].Error != nil || as[0].NextAttemptAt != nil || as[0].DurationMS == nil {
		t.Fatalf("attempts: %+v", as)
	}
	// Nothing is sent twice.
	whDrain(t, e)
	if len(rc.requests()) != 1 {
		t.Fatalf("redelivered: %d", len(rc.requests()))
	}
}

func TestWebhookRetriesThenSucceeds(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	rc := newReceiver(t, e)
	rc.answer = func(n int, _ string) int {
		if n == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	sub := rc.subscribe("product.created")
	whProductEvent(t, e, "retried")
	whDrain(t, e)
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "failed" || *as[0].StatusCode != 500 || as[0].NextAttemptAt == nil ||
		as[0].NextAttemptAt.Sub(as[0].AttemptedAt) > webhook.FirstRetryCeiling+time.Second {
		t.Fatalf("first attempt: %+v", as)
	}
	// Not due yet: nothing happens.
	whDrain(t, e)
	if len(rc.requests()) != 1 {
		t.Fatalf("retried before its time: %d requests", len(rc.requests()))
	}
	e.Clock.Advance(webhook.FirstRetryCeiling)
	whDrain(t, e)
	got := rc.requests()
	if len(got) != 2 {
		t.Fatalf("%d requests after the backoff, want 2", len(got))
	}
	for i, d := range got {
		if d.VerifyOK != nil {
			t.Fatalf("request %d: signature %v", i, d.VerifyOK)
		}
	}
	if got[0].Header.Get("Moku-Delivery-Id") != got[1].Header.Get("Moku-Delivery-Id") ||
		got[0].Header.Get("Moku-Event-Id") != got[1].Header.Get("Moku-Event-Id") || got[1].Header.Get("Moku-Delivery-Attempt") != "2" {
		t.Fatalf("a retry is the same delivery: %v / %v", got[0].Header, got[1].Header)
	}
	as = whAttempts(t, e, sub.Data.ID)
	if len(as) != 2 || as[0].Outcome != "succeeded" || as[0].Attempt != 2 || as[1].Outcome != "failed" || as[1].Attempt != 1 {
		t.Fatalf("attempts, newest first: %+v", as)
	}
	// The list pages with a cursor.
	r := e.Get(subsPath(e) + "/" + sub.Data.ID + "/deliveries?limit=1")
	var page struct {
		Data []whAttempt
		Page struct {
			NextCursor *string `json:"next_cursor"`
		}
	}
	r.JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].Attempt != 2 || page.Page.NextCursor == nil {
		t.Fatalf("page 1: %s", r.Body)
	}
	cursor := *page.Page.NextCursor
	r = e.Get(subsPath(e) + "/" + sub.Data.ID + "/deliveries?limit=1&page_after=" + cursor)
	page.Page.NextCursor = nil
	r.JSON(t, &page)
	if len(page.Data) != 1 || page.Data[0].Attempt != 1 || page.Page.NextCursor != nil {
		t.Fatalf("page 2: %s", r.Body)
	}
	// A cursor of one subscription's list is no good for another's.
	two := newReceiver(t, e).subscribe("*")
	e.Get(subsPath(e)+"/"+two.Data.ID+"/deliveries?limit=1&page_after="+cursor).WantProblem(t, 400, "INVALID_CURSOR")
}

// failUntilDead advances the clock by the longest backoff until the
// subscription's delivery of eventID is dead, and returns its attempts,
// newest first.
func whFailUntilDead(t *testing.T, e *apitest.Env, subID, eventID string) []whAttempt {
	t.Helper()
	for i := 0; i < 20; i++ {
		e.Clock.Advance(webhook.MaxRetryCeiling)
		whDrain(t, e)
		var mine []whAttempt
		for _, a := range whAttempts(t, e, subID) {
			if a.EventID == eventID {
				mine = append(mine, a)
			}
		}
		if len(mine) > 0 && mine[0].Outcome == "dead" {
			return mine
		}
	}
	t.Fatal("the delivery never died")
	return nil
}

func TestWebhookExhaustedRetriesDisableTheSubscription(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	failing := newReceiver(t, e)
	failing.answer = func(int, string) int { return http.StatusServiceUnavailable }
	sub := failing.subscribe("product.created")
	healthy := newReceiver(t, e)
	healthySub := healthy.subscribe("product.created")

	ev := whProductEvent(t, e, "doomed")
	whDrain(t, e)
	as := whFailUntilDead(t, e, sub.Data.ID, ev["id"].(string))
	first, last := as[len(as)-1], as[0]
	if span := last.AttemptedAt.Sub(first.AttemptedAt); span < webhook.RetryWindow-time.Minute || span > webhook.RetryWindow+time.Minute {
		t.Fatalf("retried for %s, want about %s", span, webhook.RetryWindow)
	}
	if last.NextAttemptAt != nil || len(as) < 4 {
		t.Fatalf("attempts: %+v", as)
	}
	for i, a := range as[1:] {
		if a.Outcome != "failed" || a.NextAttemptAt == nil || *a.StatusCode != 503 {
			t.Fatalf("attempt %d: %+v", i, a)
		}
	}
	var g subscriptionBody
	e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &g)
	if g.Data.Status != "disabled" || g.Data.DisabledReason == nil || *g.Data.DisabledReason != "deliveries_failing" {
		t.Fatalf("subscription after a dead delivery: %+v", g.Data)
	}
	var events struct{ Data []map[string]any }
	e.Get("/vendors/"+e.Vendor.ID+"/events?type=webhook_subscription.disabled").JSON(t, &events)
	if len(events.Data) != 1 || events.Data[0]["resource"].(map[string]any)["id"] != sub.Data.ID {
		t.Fatalf("disabled events: %+v", events.Data)
	}
	e.Get(subsPath(e)+"/"+healthySub.Data.ID).JSON(t, &g)
	if g.Data.Status != "enabled" || len(healthy.requests()) != 1 {
		t.Fatalf("the healthy subscription: %+v, %d deliveries", g.Data, len(healthy.requests()))
	}

	// Disabled, it gets nothing; re-enabled, it gets new events again.
	before := len(failing.requests())
	whProductEvent(t, e, "while-disabled")
	whDrain(t, e)
	if len(failing.requests()) != before {
		t.Fatal("a disabled subscription got a delivery")
	}
	failing.answer = nil
	if r := patchSubscription(e, sub.Data.ID, map[string]any{"expected_version": 2, "status": "enabled"}); r.Status != 200 {
		t.Fatalf("re-enable: %d %s", r.Status, r.Body)
	}
	whProductEvent(t, e, "after-reenable")
	whDrain(t, e)
	if got := failing.requests(); len(got) != before+1 || got[len(got)-1].VerifyOK != nil {
		t.Fatalf("after re-enabling: %d requests (before %d)", len(got), before)
	}
}

// A delivery that dies while other deliveries to the same endpoint
// succeed does not disable it: the endpoint works, one event failed.
func TestWebhookRecoveredEndpointStaysEnabled(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	rc := newReceiver(t, e)
	sub := rc.subscribe("product.created")
	bad := whProductEvent(t, e, "poison")
	rc.answer = func(_ int, eventID string) int {
		if eventID == bad["id"] {
			return http.StatusBadRequest
		}
		return http.StatusOK
	}
	whDrain(t, e)
	whProductEvent(t, e, "fine")
	whDrain(t, e)
	whFailUntilDead(t, e, sub.Data.ID, bad["id"].(string))
	var g subscriptionBody
	e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &g)
	if g.Data.Status != "enabled" {
		t.Fatalf("status %s, want enabled", g.Data.Status)
	}
}

func TestWebhookRotationTakesEffectAtOnce(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	rc := newReceiver(t, e)
	sub := rc.subscribe("product.created")
	old := sub.Data.Secret
	r := e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + sub.Data.ID + "/rotate-secret", Token: e.Token})
	var rs subscriptionBody
	r.JSON(t, &rs)
	rc.setSecret(rs.Data.Secret)
	whProductEvent(t, e, "rotated")
	whDrain(t, e)
	got := rc.requests()
	if len(got) != 1 || got[0].VerifyOK != nil {
		t.Fatalf("with the new secret: %+v", got)
	}
	err := signature.Verify(got[0].Header.Get("Moku-Signature"), got[0].Body, old, e.Clock.Now(), 0)
	if !errors.Is(err, signature.ErrMismatch) {
		t.Fatalf("the old secret still verifies: %v", err)
	}
}

// DNS rebinding: the name resolved to a public address when the
// subscription was made and resolves to loopback at delivery; the dialer
// refuses the connection, and the attempt's error names the rule, not the
// address.
func TestWebhookDialTimeRefusal(t *testing.T) {
	hosts := webhook.Hosts{}
	for name, addrs := range publicHosts {
		hosts[name] = addrs
	}
	e := webhookEnvResolving(t, apitest.SQLite, false, hosts)
	sub := mustSubscribe(t, e, "https://rebind.example.com/hook", "product.created")
	// The name now resolves to loopback (the test is the only goroutine).
	hosts["rebind.example.com"] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	whProductEvent(t, e, "rebound")
	whDrain(t, e)
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 1 || as[0].Outcome != "failed" || as[0].StatusCode != nil || as[0].Error == nil ||
		!strings.Contains(*as[0].Error, "refused to connect: the host must resolve only to public addresses") || strings.Contains(*as[0].Error, "127.0.0.1") {
		t.Fatalf("attempts: %+v", as)
	}
}

type replayBody struct {
	Data struct {
		ReplayID        string   `json:"replay_id"`
		EventID         string   `json:"event_id"`
		Status          string   `json:"status"`
		SubscriptionIDs []string `json:"subscription_ids"`
		Total           *int64   `json:"total"`
		Delivered       int64
		Failed          int64
		Skipped         int64
		StartedAt       *time.Time `json:"started_at"`
		CompletedAt     *time.Time `json:"completed_at"`
	}
}

func postReplay(e *apitest.Env, eventID string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/events/" + eventID + "/replay", Token: e.Token, Body: body})
}

func getReplay(t *testing.T, e *apitest.Env, eventID, replayID string) replayBody {
	t.Helper()
	r := e.Get("/vendors/" + e.Vendor.ID + "/events/" + eventID + "/replays/" + replayID)
	if r.Status != 200 {
		t.Fatalf("get replay: %d %s", r.Status, r.Body)
	}
	var b replayBody
	r.JSON(t, &b)
	return b
}

func TestEventReplay(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	ok := newReceiver(t, e)
	okSub := ok.subscribe("product.created")
	off := newReceiver(t, e)
	offSub := off.subscribe("product.created")
	gone := newReceiver(t, e)
	goneSub := gone.subscribe("product.created")
	bad := newReceiver(t, e)
	bad.answer = func(int, string) int { return http.StatusBadGateway }
	badSub := bad.subscribe("product.created")
	elsewhere := newReceiver(t, e)
	elsewhereSub := elsewhere.subscribe("inventory_item.adjusted")

	ev := whProductEvent(t, e, "replayed")
	evID := ev["id"].(string)
	whDrain(t, e)
	patchSubscription(e, offSub.Data.ID, map[string]any{"expected_version": 1, "status": "disabled"})
	e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + goneSub.Data.ID, Token: e.Token})
	originals := len(ok.requests())
	skippedBefore := len(off.requests()) + len(gone.requests()) + len(elsewhere.requests())

	all := []string{okSub.Data.ID, offSub.Data.ID, goneSub.Data.ID, badSub.Data.ID, elsewhereSub.Data.ID}
	r := postReplay(e, evID, map[string]any{"subscription_ids": all})
	var rb replayBody
	r.JSON(t, &rb)
	if r.Status != 202 || rb.Data.Status != "queued" || rb.Data.Total != nil || rb.Data.EventID != evID || !strings.HasPrefix(rb.Data.ReplayID, "rpl_") ||
		len(rb.Data.SubscriptionIDs) != 5 || rb.Data.StartedAt != nil {
		t.Fatalf("accepted: %d %s", r.Status, r.Body)
	}
	if g := getReplay(t, e, evID, rb.Data.ReplayID); g.Data.Status != "queued" || g.Data.Total != nil {
		t.Fatalf("before the pipeline: %+v", g.Data)
	}

	whDrain(t, e)
	g := getReplay(t, e, evID, rb.Data.ReplayID)
	if g.Data.Status != "running" || g.Data.Total == nil || *g.Data.Total != 5 || g.Data.Delivered != 1 || g.Data.Skipped != 3 || g.Data.Failed != 0 || g.Data.StartedAt == nil {
		t.Fatalf("running: %+v", g.Data)
	}
	got := ok.requests()
	if len(got) != originals+1 {
		t.Fatalf("replayed to the good endpoint %d times", len(got)-originals)
	}
	re := got[len(got)-1]
	if re.VerifyOK != nil || re.Header.Get("Moku-Event-Id") != evID || re.Header.Get("Moku-Delivery-Id") == got[0].Header.Get("Moku-Delivery-Id") {
		t.Fatalf("replayed delivery: %v %v", re.VerifyOK, re.Header)
	}
	if len(off.requests())+len(gone.requests())+len(elsewhere.requests()) != skippedBefore {
		t.Fatal("a skipped subscription got the replay")
	}
	// The failing destination is retried within the replay window, then counted.
	for i := 0; i < 10 && g.Data.Status == "running"; i++ {
		e.Clock.Advance(webhook.ReplayRetryWindow / 4)
		whDrain(t, e)
		g = getReplay(t, e, evID, rb.Data.ReplayID)
	}
	if g.Data.Status != "completed" || *g.Data.Total != 5 || g.Data.Delivered != 1 || g.Data.Failed != 1 || g.Data.Skipped != 3 || g.Data.CompletedAt == nil {
		t.Fatalf("completed: %+v", g.Data)
	}
	var replayed int
	for _, a := range whAttempts(t, e, badSub.Data.ID) {
		if a.ReplayID != nil && *a.ReplayID == rb.Data.ReplayID {
			replayed++
		}
	}
	if replayed < 2 {
		t.Fatalf("the failing destination had %d replay attempts", replayed)
	}
	var events struct{ Data []map[string]any }
	e.Get("/vendors/"+e.Vendor.ID+"/events?type=event_replay.completed").JSON(t, &events)
	if len(events.Data) != 1 || events.Data[0]["resource"].(map[string]any)["id"] != rb.Data.ReplayID {
		t.Fatalf("completion events: %+v", events.Data)
	}

	// Each POST is a new replay; without a body it goes to every
	// subscription receiving the type (the disabled one is skipped).
	r2 := postReplay(e, evID, nil)
	var rb2 replayBody
	r2.JSON(t, &rb2)
	if r2.Status != 202 || rb2.Data.ReplayID == rb.Data.ReplayID || rb2.Data.SubscriptionIDs != nil {
		t.Fatalf("second replay: %d %s", r2.Status, r2.Body)
	}
	whDrain(t, e)
	g = getReplay(t, e, evID, rb2.Data.ReplayID)
	if *g.Data.Total != 3 || g.Data.Skipped != 1 || g.Data.Delivered != 1 {
		t.Fatalf("replay to all: %+v", g.Data)
	}

	// Nothing delivered and something failed: the replay failed.
	r3 := postReplay(e, evID, map[string]any{"subscription_ids": []string{badSub.Data.ID}})
	var rb3 replayBody
	r3.JSON(t, &rb3)
	whDrain(t, e)
	for i := 0; i < 10 && getReplay(t, e, evID, rb3.Data.ReplayID).Data.Status == "running"; i++ {
		e.Clock.Advance(webhook.ReplayRetryWindow / 4)
		whDrain(t, e)
	}
	if g := getReplay(t, e, evID, rb3.Data.ReplayID); g.Data.Status != "failed" || g.Data.Failed != 1 || *g.Data.Total != 1 {
		t.Fatalf("all failed: %+v", g.Data)
	}
	// Only skipped destinations: completed at once.
	r4 := postReplay(e, evID, map[string]any{"subscription_ids": []string{goneSub.Data.ID}})
	var rb4 replayBody
	r4.JSON(t, &rb4)
	whDrain(t, e)
	if g := getReplay(t, e, evID, rb4.Data.ReplayID); g.Data.Status != "completed" || *g.Data.Total != 1 || g.Data.Skipped != 1 {
		t.Fatalf("all skipped: %+v", g.Data)
	}

	// Errors.
	postReplay(e, "evt_missing", nil).WantProblem(t, 404, "NOT_FOUND")
	e.Get("/vendors/"+e.Vendor.ID+"/events/"+evID+"/replays/rpl_missing").WantProblem(t, 404, "NOT_FOUND")
	other := whProductEvent(t, e, "other")
	e.Get("/vendors/"+e.Vendor.ID+"/events/"+other["id"].(string)+"/replays/"+rb.Data.ReplayID).WantProblem(t, 404, "NOT_FOUND")
	postReplay(e, evID, map[string]any{"subscription_ids": []string{}}).WantProblem(t, 400, "INVALID_REQUEST")
	postReplay(e, evID, map[string]any{"subscription_ids": "all"}).WantProblem(t, 400, "INVALID_REQUEST")
	postReplay(e, evID, map[string]any{"to": []string{}}).WantProblem(t, 400, "INVALID_REQUEST")
	reader := e.NewToken(e.Vendor.ID, "webhooks.read")
	e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/events/" + evID + "/replay", Token: reader}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
}

// whSent is a message a work sent to a queue.
type whSent struct {
	Queue string
	Body  []byte
	Delay time.Duration
}

// whOutbox is a queue.Sender that keeps what is sent, for driving the
// workers by hand where the embedded queue is not available.
type whOutbox struct {
	mu   sync.Mutex
	msgs []whSent
}

func (o *whOutbox) Send(_ context.Context, q string, body []byte, delay time.Duration) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.msgs = append(o.msgs, whSent{q, body, delay})
	return nil
}

func (o *whOutbox) take() []whSent {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.msgs
	o.msgs = nil
	return out
}

// whRoute runs the works' rules on an item as the stream router would
// see its insertion, and returns what they send.
func whRoute(t *testing.T, e *apitest.Env, q *whOutbox, k store.Key) []pipeline.Outgoing {
	t.Helper()
	it, err := e.Store.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	var out []pipeline.Outgoing
	for _, w := range e.App.Works(q) {
		if w.Rule == nil {
			continue
		}
		o, err := w.Rule(context.Background(), store.Change{Kind: store.Inserted, Key: k, New: &it})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o...)
	}
	return out
}

func whHandle(t *testing.T, e *apitest.Env, q *whOutbox, queueName string, body []byte) {
	t.Helper()
	w, err := e.App.Work(q, queueName)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Handle(context.Background(), queue.Message{ID: "m1", Queue: queueName, Body: body, Receives: 1}); err != nil {
		t.Fatalf("handle: %v", err)
	}
}

// The delivery and replay workers on DynamoDB: the same handlers the
// webhook-worker and replay-worker Lambdas run, called with messages.
func TestWebhookWorkersOnDynamoDB(t *testing.T) {
	e := webhookEnv(t, apitest.DynamoDB, true)
	rc := newReceiver(t, e)
	rc.answer = func(n int, _ string) int {
		if n == 0 {
			return http.StatusInternalServerError
		}
		return http.StatusAccepted
	}
	sub := rc.subscribe("product.created")
	ev := whProductEvent(t, e, "on-dynamodb")
	q := &whOutbox{}

	// The stream router's rule makes one message per matching subscription.
	out := whRoute(t, e, q, datamodel.EventKey(e.Vendor.ID, ev["id"].(string)))
	if len(out) != 1 || out[0].Queue != queue.WebhookDeliveries || out[0].Delay != 0 {
		t.Fatalf("routed: %+v", out)
	}
	var m webhook.Message
	if err := json.Unmarshal(out[0].Body, &m); err != nil || m.SubscriptionID != sub.Data.ID || m.Attempt != 1 || m.EventID != ev["id"] {
		t.Fatalf("message %s: %v", out[0].Body, err)
	}

	// First attempt fails: recorded, and a retry is sent with its delay.
	whHandle(t, e, q, queue.WebhookDeliveries, out[0].Body)
	retries := q.take()
	if len(retries) != 1 || retries[0].Delay <= 0 || retries[0].Delay > webhook.FirstRetryCeiling {
		t.Fatalf("retry: %+v", retries)
	}
	var retry webhook.Message
	json.Unmarshal(retries[0].Body, &retry)
	if retry.Attempt != 2 || retry.DeliveryID != m.DeliveryID {
		t.Fatalf("retry message: %s", retries[0].Body)
	}

	// A message handled before its time is re-sent, in hops of at most
	// the queue's maximum delay, without an attempt.
	far := retry
	far.NotBefore = e.Clock.Now().Add(5 * time.Hour)
	farBody, _ := json.Marshal(far)
	whHandle(t, e, q, queue.WebhookDeliveries, farBody)
	hop := q.take()
	if len(hop) != 1 || hop[0].Delay != queue.MaxDelay || string(hop[0].Body) != string(farBody) || len(rc.requests()) != 1 {
		t.Fatalf("hop: %+v, %d requests", hop, len(rc.requests()))
	}

	e.Clock.Advance(retries[0].Delay)
	whHandle(t, e, q, queue.WebhookDeliveries, retries[0].Body)
	if got := rc.requests(); len(got) != 2 || got[1].VerifyOK != nil || len(q.take()) != 0 {
		t.Fatalf("second attempt: %d requests", len(got))
	}
	as := whAttempts(t, e, sub.Data.ID)
	if len(as) != 2 || as[0].Outcome != "succeeded" || *as[0].StatusCode != 202 || as[1].Outcome != "failed" || *as[1].StatusCode != 500 {
		t.Fatalf("attempts on DynamoDB: %+v", as)
	}

	// A replay: the rule starts it, the handler selects and fans out, the
	// deliveries count.
	r := postReplay(e, ev["id"].(string), nil)
	var rb replayBody
	r.JSON(t, &rb)
	out = whRoute(t, e, q, datamodel.ReplayKey(e.Vendor.ID, ev["id"].(string), rb.Data.ReplayID))
	if len(out) != 1 || out[0].Queue != queue.EventReplays {
		t.Fatalf("replay routed: %+v", out)
	}
	whHandle(t, e, q, queue.EventReplays, out[0].Body)
	fan := q.take()
	if len(fan) != 1 || fan[0].Queue != queue.WebhookDeliveries {
		t.Fatalf("replay fan-out: %+v", fan)
	}
	// Handled twice (at least once), the replay is started once.
	whHandle(t, e, q, queue.EventReplays, out[0].Body)
	if g := getReplay(t, e, ev["id"].(string), rb.Data.ReplayID); g.Data.Status != "running" || *g.Data.Total != 1 {
		t.Fatalf("running: %+v", g.Data)
	}
	q.take()
	whHandle(t, e, q, queue.WebhookDeliveries, fan[0].Body)
	// A duplicate of the delivery message is not counted twice.
	whHandle(t, e, q, queue.WebhookDeliveries, fan[0].Body)
	g := getReplay(t, e, ev["id"].(string), rb.Data.ReplayID)
	if g.Data.Status != "completed" || g.Data.Delivered != 1 || g.Data.Failed != 0 || g.Data.Skipped != 0 || *g.Data.Total != 1 {
		t.Fatalf("replay on DynamoDB: %+v", g.Data)
	}
}
