package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

type recoveryBody struct {
	Data struct {
		ID             string
		SubscriptionID string `json:"subscription_id"`
		Since          time.Time
		Until          time.Time
		Status         string
		Reason         *string
		Total          int64
		Delivered      int64
		Failed         int64
		Skipped        int64
		StartedAt      *time.Time `json:"started_at"`
		CompletedAt    *time.Time `json:"completed_at"`
	}
}

func recoverPath(e *apitest.Env, subID string) string { return subsPath(e) + "/" + subID + "/recover" }

func postRecover(e *apitest.Env, token, subID, key string, body any) *apitest.Resp {
	h := map[string]string{}
	if key != "" {
		h["Idempotency-Key"] = key
	}
	return e.Do(apitest.Req{Method: http.MethodPost, Path: recoverPath(e, subID), Token: token, Body: body, Headers: h})
}

func getRecovery(t *testing.T, e *apitest.Env, subID, id string) recoveryBody {
	t.Helper()
	r := e.Get(subsPath(e) + "/" + subID + "/recoveries/" + id)
	if r.Status != http.StatusOK {
		t.Fatalf("get recovery: %d %s", r.Status, r.Body)
	}
	var b recoveryBody
	r.JSON(t, &b)
	return b
}

// pump drives the workers by hand, as the queues would, on either store:
// each message gets an id of its own (the attempts' claims tell
// duplicates by it), a delayed one moves the clock on first.
type pump struct {
	t  *testing.T
	e  *apitest.Env
	q  *whOutbox
	n  int
	mu sync.Mutex
	// fail makes the next sends fail, as a worker that dies would.
	fail bool
}

type failingOutbox struct{ p *pump }

func (f failingOutbox) Send(ctx context.Context, q string, body []byte, d time.Duration) error {
	if f.p.fail {
		return errors.New("the worker died")
	}
	return f.p.q.Send(ctx, q, body, d)
}

func (p *pump) handle(name string, body []byte, receives int) error {
	p.t.Helper()
	w, err := p.e.App.Work(failingOutbox{p}, name)
	if err != nil {
		p.t.Fatal(err)
	}
	p.n++
	return w.Handle(context.Background(), queue.Message{ID: fmt.Sprintf("m%d", p.n), Queue: name, Body: body, Receives: receives})
}

// route runs the rules on the insertion at k and queues what they send.
func (p *pump) route(k store.Key) {
	p.t.Helper()
	for _, o := range whRoute(p.t, p.e, p.q, k) {
		p.q.Send(context.Background(), o.Queue, o.Body, o.Delay)
	}
}

// drain handles every message until none is left, and returns how many
// of the slow lane's were outstanding at most at once.
func (p *pump) drain() int {
	p.t.Helper()
	peak := 0
	for i := 0; ; i++ {
		msgs := p.q.take()
		if len(msgs) == 0 {
			return peak
		}
		if i > 10000 {
			p.t.Fatal("the work does not settle")
		}
		slow := 0
		for _, m := range msgs {
			if m.Queue == queue.WebhookSlowLane {
				slow++
			}
		}
		peak = max(peak, slow)
		for j, m := range msgs {
			if m.Delay > 0 {
				p.e.Clock.Advance(m.Delay)
			}
			if err := p.handle(m.Queue, m.Body, 1); err != nil {
				p.q.mu.Lock()
				p.q.msgs = append(p.q.msgs, msgs[j+1:]...)
				p.q.mu.Unlock()
				p.t.Fatalf("handle %s: %v", m.Queue, err)
			}
		}
	}
}

// receivedIDs are the event ids the receiver got, in order.
func receivedIDs(rc *whReceiver) []string {
	var out []string
	for _, r := range rc.requests() {
		out = append(out, r.Header.Get("Moku-Event-Id"))
	}
	return out
}

func recoveryEvents(t *testing.T, e *apitest.Env) []map[string]any {
	t.Helper()
	var list struct{ Data []map[string]any }
	e.Get("/vendors/"+e.Vendor.ID+"/events?type="+event.WebhookRecoveryCompleted).JSON(t, &list)
	return list.Data
}

// TestWebhookRecovery: a recovery delivers to its subscription, oldest
// first and once each, the events of its types in [since, until) that it
// had not received (what its delivery log shows delivered is skipped),
// page by page with at most webhook.RecoveryPage deliveries out at once,
// all in the slow lane; a page recorded by a worker that died before
// queueing it is queued again when its message comes back, and nothing is
// counted twice; the counters and the completion event say what happened.
func TestWebhookRecovery(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, true)
		p := &pump{t: t, e: e, q: &whOutbox{}}
		rc := newReceiver(t, e)
		sub := rc.subscribe(event.ProductCreated)
		subID := sub.Data.ID

		before := appendEvent(t, e, e.Clock.Now(), event.ProductCreated, 1)
		e.Clock.Advance(time.Second)
		since := e.Clock.Now()
		var want, delivered []string
		var failing string
		n := 2*webhook.RecoveryPage + 31
		for i := range n {
			typ := event.ProductCreated
			if i%4 == 3 {
				typ = event.ProductPublished
			}
			id := appendEvent(t, e, e.Clock.Now(), typ, i+1)
			e.Clock.Advance(10 * time.Millisecond)
			switch {
			case typ != event.ProductCreated:
			case i%7 == 0:
				delivered = append(delivered, id)
			default:
				want = append(want, id)
			}
		}
		failing = want[len(want)/2]
		until := e.Clock.Now()
		e.Clock.Advance(time.Second)
		after := appendEvent(t, e, e.Clock.Now(), event.ProductCreated, 1)

		// Some events were delivered before, by the ordinary fan-out.
		for _, id := range delivered {
			p.route(datamodel.EventKey(e.Vendor.ID, id))
		}
		p.drain()
		if got := receivedIDs(rc); !slices.Equal(got, delivered) {
			t.Fatalf("delivered before: %d of %d", len(got), len(delivered))
		}
		// One of them before delivered marks were written: its original
		// delivery's successful attempt still tells, by the outcome older
		// builds put on the attempt's claim.
		if err := e.Store.Transact(context.Background(), store.Delete(datamodel.DeliveredKey(e.Vendor.ID, subID, delivered[0]), store.Cond{})); err != nil {
			t.Fatal(err)
		}
		asOlderBuildsClaimed(t, e, webhook.DeliveryID(delivered[0], subID, ""), webhook.OutcomeSucceeded)
		rc.mu.Lock()
		rc.got = nil
		rc.answer = func(_ int, eventID string) int {
			if eventID == failing {
				return http.StatusServiceUnavailable
			}
			return http.StatusNoContent
		}
		rc.mu.Unlock()

		body := map[string]any{"since": since.Format(time.RFC3339Nano), "until": until.Format(time.RFC3339Nano)}
		r := postRecover(e, e.Token, subID, "recover-0001", body)
		var acc recoveryBody
		r.JSON(t, &acc)
		if r.Status != http.StatusAccepted || !strings.HasPrefix(acc.Data.ID, "rcv_") || acc.Data.SubscriptionID != subID || acc.Data.Status != "queued" ||
			!acc.Data.Since.Equal(since) || !acc.Data.Until.Equal(until) || acc.Data.Total != 0 || acc.Data.StartedAt != nil {
			t.Fatalf("accepted: %d %s", r.Status, r.Body)
		}
		// The same key and body: the original answer; another body: 409.
		again := postRecover(e, e.Token, subID, "recover-0001", body)
		if again.Status != http.StatusAccepted || string(again.Body) != string(r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replayed: %d %s", again.Status, again.Body)
		}
		postRecover(e, e.Token, subID, "recover-0001", map[string]any{"since": since.Format(time.RFC3339Nano)}).
			WantProblem(t, http.StatusConflict, "IDEMPOTENCY_KEY_REUSED")
		if g := getRecovery(t, e, subID, acc.Data.ID); g.Data.Status != "queued" {
			t.Fatalf("before the pipeline: %+v", g.Data)
		}

		// The rule starts it once until is settled; the first page queues
		// at most a page of deliveries, in the slow lane, and the worker
		// dies before queueing them.
		out := whRoute(t, e, p.q, datamodel.RecoveryKey(e.Vendor.ID, subID, acc.Data.ID))
		if len(out) != 1 || out[0].Queue != queue.EventReplays || out[0].Delay <= 0 || out[0].Delay > event.Settle {
			t.Fatalf("routed: %+v", out)
		}
		e.Clock.Advance(out[0].Delay)
		p.fail = true
		if err := p.handle(queue.EventReplays, out[0].Body, 1); err == nil {
			t.Fatal("the dying worker reported no error")
		}
		p.fail = false
		g := getRecovery(t, e, subID, acc.Data.ID)
		if g.Data.Status != "running" || g.Data.StartedAt == nil || g.Data.Total == 0 || g.Data.Total > webhook.RecoveryPage {
			t.Fatalf("first page: %+v", g.Data)
		}
		firstPage := g.Data
		// The message comes back: the page is queued, not read again.
		if err := p.handle(queue.EventReplays, out[0].Body, 2); err != nil {
			t.Fatal(err)
		}
		sent := p.q.take()
		if len(sent) == 0 || len(sent) > webhook.RecoveryPage {
			t.Fatalf("first page queued %d deliveries", len(sent))
		}
		for _, s := range sent {
			var m webhook.Message
			if err := json.Unmarshal(s.Body, &m); err != nil || s.Queue != queue.WebhookSlowLane || m.Lane != webhook.LaneSlow || m.RecoveryID != acc.Data.ID {
				t.Fatalf("delivery %s on %s: %v", s.Body, s.Queue, err)
			}
		}
		if g := getRecovery(t, e, subID, acc.Data.ID); !reflect.DeepEqual(g.Data, firstPage) {
			t.Fatalf("counted again: %+v, was %+v", g.Data, firstPage)
		}
		// A duplicate of the message, and of a delivery, change nothing.
		if err := p.handle(queue.EventReplays, out[0].Body, 1); err != nil || len(p.q.take()) != 0 {
			t.Fatalf("duplicate job message: %v", err)
		}
		for _, s := range append(sent, sent[0]) {
			p.q.Send(context.Background(), s.Queue, s.Body, s.Delay)
		}
		peak := p.drain()
		if peak > webhook.RecoveryPage {
			t.Fatalf("%d deliveries out at once", peak)
		}

		g = getRecovery(t, e, subID, acc.Data.ID)
		d := g.Data
		if d.Status != "completed" || d.Total != int64(len(want)+len(delivered)) || d.Skipped != int64(len(delivered)) ||
			d.Delivered != int64(len(want)-1) || d.Failed != 1 || d.CompletedAt == nil || d.Reason != nil {
			t.Fatalf("completed: %+v (want %d, delivered before %d)", d, len(want), len(delivered))
		}
		// Each missed event once, oldest first (the failing one retried
		// within the replay window); nothing before since, at until or
		// after it, nothing of another type, nothing delivered before.
		var got []string
		for _, id := range receivedIDs(rc) {
			if id == failing && slices.Contains(got, id) {
				continue
			}
			got = append(got, id)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("received %d events, want %d in order", len(got), len(want))
		}
		for _, id := range []string{before, after} {
			if slices.Contains(got, id) {
				t.Fatalf("%s is outside the window", id)
			}
		}
		var recovered int
		for _, a := range whAttemptsAll(t, e, subID) {
			if a.RecoveryID != nil && *a.RecoveryID == acc.Data.ID && a.EventID == failing {
				recovered++
			}
		}
		if recovered < 2 {
			t.Fatalf("the failing event had %d attempts", recovered)
		}
		if sub := getSub(t, e, subID); sub["status"] != "enabled" {
			t.Fatalf("a recovery's dead delivery disabled the subscription: %v", sub["status"])
		}
		evs := recoveryEvents(t, e)
		if len(evs) != 1 || evs[0]["resource"].(map[string]any)["id"] != acc.Data.ID {
			t.Fatalf("completion events: %+v", evs)
		}
		data := evs[0]["data"].(map[string]any)
		if data["subscription_id"] != subID || data["status"] != "completed" || data["delivered"] != float64(d.Delivered) ||
			data["failed"] != float64(1) || data["skipped"] != float64(d.Skipped) || data["total"] != float64(d.Total) {
			t.Fatalf("completion event data: %v", data)
		}

		// Recovered again, everything is delivered: all skipped, nothing
		// sent, completed in the first handling.
		rc.mu.Lock()
		rc.got, rc.answer = nil, nil
		rc.mu.Unlock()
		r = postRecover(e, e.Token, subID, "recover-0002", map[string]any{"since": since.Format(time.RFC3339Nano), "until": until.Format(time.RFC3339Nano)})
		r.JSON(t, &acc)
		p.route(datamodel.RecoveryKey(e.Vendor.ID, subID, acc.Data.ID))
		p.drain()
		g = getRecovery(t, e, subID, acc.Data.ID)
		if g.Data.Status != "completed" || g.Data.Total != d.Total || g.Data.Skipped != d.Total-1 || g.Data.Delivered != 1 || len(rc.requests()) != 1 {
			t.Fatalf("second recovery: %+v, %d sent", g.Data, len(rc.requests()))
		}
	})
}

// whAttemptsAll reads a subscription's whole delivery log.
func whAttemptsAll(t *testing.T, e *apitest.Env, subID string) []whAttemptRecovered {
	t.Helper()
	var all []whAttemptRecovered
	path := subsPath(e) + "/" + subID + "/deliveries?limit=100"
	for {
		var page struct {
			Data []whAttemptRecovered
			Page struct {
				NextCursor *string `json:"next_cursor"`
			}
		}
		r := e.Get(path)
		if r.Status != http.StatusOK {
			t.Fatalf("deliveries: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &page)
		all = append(all, page.Data...)
		if page.Page.NextCursor == nil {
			return all
		}
		path = subsPath(e) + "/" + subID + "/deliveries?limit=100&page_after=" + *page.Page.NextCursor
	}
}

type whAttemptRecovered struct {
	EventID    string  `json:"event_id"`
	RecoveryID *string `json:"recovery_id"`
	Outcome    string
}

func getSub(t *testing.T, e *apitest.Env, id string) map[string]any {
	t.Helper()
	var b struct{ Data map[string]any }
	e.Get(subsPath(e)+"/"+id).JSON(t, &b)
	return b.Data
}

// recoveryItems counts the stored recoveries of a vendor.
func recoveryItems(t *testing.T, e *apitest.Env) int {
	t.Helper()
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.RecoveryPrefix, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(items)
}

// TestWebhookRecoveryRefusals: a recovery's window is checked against the
// clock (since required, until after it and not in the future, since
// within the event log's retention), a disabled or unknown subscription is
// refused, and the usual scope, key and rate refusals hold; each refusal
// stores nothing. A recovery spends one write of the vendor's window.
func TestWebhookRecoveryRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) {
			c.RateWrites = 12
			c.AllowPrivateWebhooks = true
		}})
		sub := mustSubscribe(t, e, "http://127.0.0.1:9/hook", event.ProductCreated)
		off := mustSubscribe(t, e, "http://127.0.0.1:9/off", event.ProductCreated)
		if r := patchSubscription(e, off.Data.ID, map[string]any{"expected_version": 1, "status": "disabled"}); r.Status != 200 {
			t.Fatalf("disable: %d %s", r.Status, r.Body)
		}
		// Each part in a window of its own.
		e.Clock.Advance(time.Minute)
		now := e.Clock.Now()
		at := func(d time.Duration) string { return now.Add(d).Format(time.RFC3339Nano) }
		for i, body := range []any{
			map[string]any{},
			map[string]any{"since": nil},
			map[string]any{"since": "yesterday"},
			map[string]any{"since": at(-time.Hour), "until": at(-2 * time.Hour)},
			map[string]any{"since": at(-time.Hour), "until": at(-time.Hour)},
			map[string]any{"since": at(-time.Hour), "until": at(time.Hour)},
			map[string]any{"since": at(time.Hour)},
			map[string]any{"since": at(-event.Retention - time.Hour)},
			map[string]any{"since": at(-time.Hour), "types": []string{"product.created"}},
			"[]",
		} {
			r := postRecover(e, e.Token, sub.Data.ID, fmt.Sprintf("bad-window-%d", i), body)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.Header.Get("Content-Type"), "problem+json") {
				t.Fatalf("%v: %d %s", body, r.Status, r.Body)
			}
		}
		e.Clock.Advance(time.Minute)
		ok := map[string]any{"since": at(-time.Hour)}
		postRecover(e, e.Token, sub.Data.ID, "", ok).WantProblem(t, http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED")
		postRecover(e, e.Token, off.Data.ID, "recover-off-1", ok).WantProblem(t, http.StatusConflict, "WEBHOOK_SUBSCRIPTION_STATE_CONFLICT")
		postRecover(e, e.Token, "whsub_nope", "recover-nope-1", ok).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		postRecover(e, e.Token, "whsub_"+strings.Repeat("0", 26), "recover-nope-2", ok).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		reader := e.NewToken(e.Vendor.ID, auth.WebhooksRead)
		postRecover(e, reader, sub.Data.ID, "recover-read-1", ok).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		writer := e.NewToken(e.Vendor.ID, auth.WebhooksWrite)
		e.Do(apitest.Req{Path: subsPath(e) + "/" + sub.Data.ID + "/recoveries/rcv_nope", Token: writer}).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		if n := recoveryItems(t, e); n != 0 {
			t.Fatalf("%d recoveries stored by refusals", n)
		}

		// In a new window: one recovery, whatever its window holds, is one
		// write of the vendor's twelve.
		e.Clock.Advance(time.Minute)
		now = e.Clock.Now()
		r := postRecover(e, e.Token, sub.Data.ID, "recover-ok-1", ok)
		var acc recoveryBody
		r.JSON(t, &acc)
		if r.Status != http.StatusAccepted {
			t.Fatalf("recover: %d %s", r.Status, r.Body)
		}
		if rem := r.Header.Get("RateLimit-Remaining"); rem != "11" {
			t.Fatalf("remaining writes %q: %v", rem, r.Header)
		}
		e.Get(subsPath(e)+"/"+sub.Data.ID+"/recoveries/rcv_nope").WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		e.Get(subsPath(e)+"/"+off.Data.ID+"/recoveries/"+acc.Data.ID).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		e.Get(subsPath(e)+"/whsub_nope/recoveries/"+acc.Data.ID).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		if g := getRecovery(t, e, sub.Data.ID, acc.Data.ID); g.Data.Status != "queued" || !g.Data.Until.Equal(now) {
			t.Fatalf("stored: %+v", g.Data)
		}
		for i := 0; ; i++ {
			r := postRecover(e, e.Token, sub.Data.ID, fmt.Sprintf("recover-many-%d", i), ok)
			if r.Status == http.StatusTooManyRequests {
				r.WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
				break
			}
			if r.Status != http.StatusAccepted || i >= 11 {
				t.Fatalf("write %d: %d %s", i, r.Status, r.Body)
			}
		}
		before := recoveryItems(t, e)
		postRecover(e, e.Token, sub.Data.ID, "recover-refused", ok).WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
		if recoveryItems(t, e) != before {
			t.Fatal("a refused recovery was stored")
		}
	})
}

// TestWebhookReenableWithRecovery: re-enabling a disabled subscription
// with recover_since stores the recovery in the same write; it delivers
// what the subscription missed while it was off. recover_since is refused
// without the re-enable.
func TestWebhookReenableWithRecovery(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, true)
		p := &pump{t: t, e: e, q: &whOutbox{}}
		rc := newReceiver(t, e)
		sub := rc.subscribe(event.ProductCreated)
		subID := sub.Data.ID
		if r := patchSubscription(e, subID, map[string]any{"expected_version": 1, "status": "disabled"}); r.Status != 200 {
			t.Fatalf("disable: %d %s", r.Status, r.Body)
		}
		e.Clock.Advance(time.Second)
		offSince := e.Clock.Now()
		var missed []string
		for i := range 3 {
			id := appendEvent(t, e, e.Clock.Now(), event.ProductCreated, i+1)
			missed = append(missed, id)
			p.route(datamodel.EventKey(e.Vendor.ID, id)) // the fan-out skips a disabled subscription
			e.Clock.Advance(time.Second)
		}
		if p.drain(); len(rc.requests()) != 0 {
			t.Fatal("a disabled subscription received")
		}

		since := offSince.Format(time.RFC3339Nano)
		patchSubscription(e, subID, map[string]any{"expected_version": 2, "recover_since": since}).WantProblem(t, http.StatusBadRequest, "INVALID_REQUEST")
		patchSubscription(e, subID, map[string]any{"expected_version": 2, "status": "disabled", "recover_since": since}).WantProblem(t, http.StatusBadRequest, "INVALID_REQUEST")
		patchSubscription(e, subID, map[string]any{"expected_version": 2, "status": "enabled", "recover_since": e.Clock.Now().Add(-event.Retention - time.Hour).Format(time.RFC3339Nano)}).
			WantProblem(t, http.StatusBadRequest, "INVALID_REQUEST")
		patchSubscription(e, subID, map[string]any{"expected_version": 1, "status": "enabled", "recover_since": since}).
			WantProblem(t, http.StatusConflict, "WEBHOOK_SUBSCRIPTION_VERSION_CONFLICT")
		if n := recoveryItems(t, e); n != 0 || getSub(t, e, subID)["status"] != "disabled" {
			t.Fatalf("refusals changed something: %d recoveries", n)
		}

		r := patchSubscription(e, subID, map[string]any{"expected_version": 2, "status": "enabled", "recover_since": since})
		var body struct {
			Data struct {
				Status    string
				Version   int64
				UpdatedAt time.Time `json:"updated_at"`
				Recovery  *struct {
					ID             string
					SubscriptionID string `json:"subscription_id"`
					Since, Until   time.Time
					Status         string
				}
			}
		}
		r.JSON(t, &body)
		if r.Status != 200 || body.Data.Status != "enabled" || body.Data.Version != 3 || body.Data.Recovery == nil ||
			body.Data.Recovery.Status != "queued" || !body.Data.Recovery.Since.Equal(offSince) || !body.Data.Recovery.Until.Equal(body.Data.UpdatedAt) {
			t.Fatalf("re-enabled: %d %s", r.Status, r.Body)
		}
		rcv := body.Data.Recovery.ID
		p.route(datamodel.RecoveryKey(e.Vendor.ID, subID, rcv))
		p.drain()
		if got := receivedIDs(rc); !slices.Equal(got, missed) {
			t.Fatalf("received %v, want %v", got, missed)
		}
		g := getRecovery(t, e, subID, rcv)
		if g.Data.Status != "completed" || g.Data.Total != 3 || g.Data.Delivered != 3 || g.Data.Skipped != 0 {
			t.Fatalf("recovery: %+v", g.Data)
		}
		// Enabled already: recover_since is refused, POST .../recover is the way.
		patchSubscription(e, subID, map[string]any{"expected_version": 3, "status": "enabled", "recover_since": since}).
			WantProblem(t, http.StatusConflict, "WEBHOOK_SUBSCRIPTION_STATE_CONFLICT")

		// Disabled while it runs: the recovery stops at its next page.
		r2 := postRecover(e, e.Token, subID, "recover-then-off", map[string]any{"since": since})
		var acc recoveryBody
		r2.JSON(t, &acc)
		if r := patchSubscription(e, subID, map[string]any{"expected_version": 3, "status": "disabled"}); r.Status != 200 {
			t.Fatalf("disable: %d %s", r.Status, r.Body)
		}
		p.route(datamodel.RecoveryKey(e.Vendor.ID, subID, acc.Data.ID))
		p.drain()
		g = getRecovery(t, e, subID, acc.Data.ID)
		if g.Data.Status != "failed" || g.Data.Reason == nil || *g.Data.Reason != webhook.RecoveryStoppedDisabled || g.Data.CompletedAt == nil || len(recoveryEvents(t, e)) != 2 {
			t.Fatalf("stopped: %+v", g.Data)
		}
	})
}

// TestWebhookRecoveryLocalPipeline: the local server's own pipeline
// routes a recovery, holds it until its window's end is settled, and
// runs it to the end.
func TestWebhookRecoveryLocalPipeline(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	rc := newReceiver(t, e)
	sub := rc.subscribe(event.ProductCreated)
	since := e.Clock.Now()
	var missed []string
	for i := range 3 {
		missed = append(missed, appendEvent(t, e, e.Clock.Now(), event.ProductCreated, i+1))
		e.Clock.Advance(time.Second)
	}
	r := postRecover(e, e.Token, sub.Data.ID, "recover-local-1", map[string]any{"since": since.Format(time.RFC3339Nano)})
	var acc recoveryBody
	r.JSON(t, &acc)
	if r.Status != http.StatusAccepted {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	// The fan-out delivers the events meanwhile: the recovery, which
	// waits for until to settle, finds them delivered.
	whDrain(t, e)
	if g := getRecovery(t, e, sub.Data.ID, acc.Data.ID); g.Data.Status != "queued" {
		t.Fatalf("started before until settled: %+v", g.Data)
	}
	e.Clock.Advance(event.Settle)
	whDrain(t, e)
	g := getRecovery(t, e, sub.Data.ID, acc.Data.ID)
	if g.Data.Status != "completed" || g.Data.Total != 3 || g.Data.Skipped != 3 || g.Data.Delivered != 0 || len(recoveryEvents(t, e)) != 1 {
		t.Fatalf("recovery: %+v", g.Data)
	}
	if got := receivedIDs(rc); !slices.Equal(got, missed) {
		t.Fatalf("received %v, want %v once each", got, missed)
	}
}

// asOlderBuildsClaimed rewrites the claims of a delivery's attempts as
// builds before issue 26's "A delivery's writes" left them once recorded:
// the attempt's outcome on the claim, no record id.
func asOlderBuildsClaimed(t *testing.T, e *apitest.Env, deliveryID, outcome string) {
	t.Helper()
	ctx := context.Background()
	claims, err := e.Store.Query(ctx, store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.ClaimPrefix + deliveryID + "#", Limit: 50})
	if err != nil || len(claims) == 0 {
		t.Fatalf("the claims of %s: %d, %v", deliveryID, len(claims), err)
	}
	for _, c := range claims {
		var held struct {
			Owner string `json:"owner"`
		}
		if err := json.Unmarshal(c.Data, &held); err != nil {
			t.Fatal(err)
		}
		c.Data, _ = json.Marshal(map[string]any{"owner": held.Owner, "outcome": outcome})
		if err := e.Store.Transact(ctx, store.Put(c, store.Cond{})); err != nil {
			t.Fatal(err)
		}
	}
}
