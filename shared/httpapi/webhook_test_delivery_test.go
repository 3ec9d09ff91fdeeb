package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

type testDelivery struct {
	Data struct {
		EventID    string  `json:"event_id"`
		DeliveryID string  `json:"delivery_id"`
		StatusCode *int    `json:"status_code"`
		DurationMS int64   `json:"duration_ms"`
		Error      *string `json:"error"`
		Response   *string `json:"response"`
		Succeeded  bool    `json:"succeeded"`
	}
}

func postTest(e *apitest.Env, token, subID string) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + subID + "/test", Token: token})
}

// TestWebhookTestDelivery: POST .../test sends one delivery of a
// webhook_subscription.test event at once, signed and with the headers of
// every delivery, to a subscription whatever its types and status, and
// answers with what the receiver answered; the event is not kept, nothing
// is queued or logged. A dead receiver is an answer with an error; the
// usual 403, 404 and 429 come before anything is sent.
func TestWebhookTestDelivery(t *testing.T) {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) {
		c.RateWrites = 8
		c.AllowPrivateWebhooks = true
	}})
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	secret := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"seen":true}`)
	}))
	t.Cleanup(srv.Close)
	sub := mustSubscribe(t, e, srv.URL+"/hook", event.ProductCreated)
	secret = sub.Data.Secret
	if r := patchSubscription(e, sub.Data.ID, map[string]any{"expected_version": 1, "status": "disabled"}); r.Status != 200 {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}

	res := postTest(e, e.Token, sub.Data.ID)
	if res.Status != http.StatusOK {
		t.Fatalf("test: %d %s", res.Status, res.Body)
	}
	var td testDelivery
	res.JSON(t, &td)
	if !td.Data.Succeeded || td.Data.StatusCode == nil || *td.Data.StatusCode != 202 || td.Data.Error != nil ||
		td.Data.Response == nil || *td.Data.Response != `{"seen":true}` {
		t.Fatalf("answer: %s", res.Body)
	}
	mu.Lock()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests", len(got))
	}
	h, body := got[0].Header, bodies[0]
	mu.Unlock()
	if err := signature.Verify(h.Get("Moku-Signature"), body, secret, e.Clock.Now(), 0); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if h.Get("Moku-Event-Id") != td.Data.EventID || h.Get("Moku-Delivery-Id") != td.Data.DeliveryID || h.Get("Moku-Delivery-Attempt") != "1" ||
		h.Get("Content-Type") != "application/json" || !strings.HasPrefix(h.Get("User-Agent"), "Moku-Webhooks/") {
		t.Fatalf("headers %v for %+v", h, td.Data)
	}
	var ev event.Event
	if err := json.Unmarshal(body, &ev); err != nil || ev.Type != event.WebhookSubscriptionTest || ev.ID != td.Data.EventID ||
		ev.Resource.ID != sub.Data.ID || ev.Request == nil || ev.Request.ID != res.Header.Get("X-Request-Id") {
		t.Fatalf("body %s (%v)", body, err)
	}
	e.Get("/vendors/"+e.Vendor.ID+"/events/"+ev.ID).WantProblem(t, http.StatusNotFound, "NOT_FOUND")
	if n := len(logOf(t, e, sub.Data.ID, "")); n != 0 {
		t.Fatalf("%d attempts in the delivery log", n)
	}

	// A receiver that is gone: an answer with the error, no status.
	srv.Close()
	res = postTest(e, e.Token, sub.Data.ID)
	res.JSON(t, &td)
	if res.Status != http.StatusOK || td.Data.Succeeded || td.Data.StatusCode != nil || td.Data.Error == nil || td.Data.Response != nil {
		t.Fatalf("dead receiver: %d %s", res.Status, res.Body)
	}

	reader := e.NewToken(e.Vendor.ID, auth.WebhooksRead)
	postTest(e, reader, sub.Data.ID).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
	postTest(e, e.Token, "whsub_nope").WantProblem(t, http.StatusNotFound, "NOT_FOUND")
	e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + sub.Data.ID + "/test", Token: e.Token, Body: map[string]any{"x": 1}}).
		WantProblem(t, http.StatusBadRequest, "INVALID_REQUEST")
	for i := 0; ; i++ {
		r := postTest(e, e.Token, sub.Data.ID)
		if r.Status == http.StatusTooManyRequests {
			r.WantProblem(t, http.StatusTooManyRequests, "RATE_LIMITED")
			break
		}
		if i > 10 {
			t.Fatalf("no 429 after %d writes", i+6)
		}
	}
}
