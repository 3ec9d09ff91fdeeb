package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook"
)

// TestWebhookFailureStreak: a subscription shows its failed attempts
// since the last success; when the streak reaches webhook.FailingStreak it
// writes webhook_subscription.failing once, and the attempt that reached
// it carries the notice in the delivery log; more failures announce
// nothing more; a success ends the streak, and the next streak is
// announced again.
func TestWebhookFailureStreak(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	var failing atomic.Bool
	failing.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	sub := mustSubscribe(t, e, srv.URL+"/hook", event.ProductCreated)
	streak := func() int64 {
		var s struct {
			Data struct {
				FailureStreak int64 `json:"failure_streak"`
			}
		}
		e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &s)
		return s.Data.FailureStreak
	}
	n := 0
	produce := func(k int) {
		for range k {
			n++
			mustCreate(t, e, fmt.Sprintf("streak-%d", n), simpleProduct(fmt.Sprintf("streak-%d", n)))
		}
		whDrain(t, e)
	}
	announced := func() []event.Event { return eventsOf(t, e, event.WebhookSubscriptionFailing) }
	notices := func() int {
		k := 0
		for _, a := range logOf(t, e, sub.Data.ID, "&outcome=failed") {
			if a.Notice != nil && *a.Notice == webhook.NoticeFailing {
				k++
			}
		}
		return k
	}

	produce(webhook.FailingStreak - 1)
	if s := streak(); s != webhook.FailingStreak-1 || len(announced()) != 0 {
		t.Fatalf("before the threshold: streak %d, %d announcements", s, len(announced()))
	}
	produce(1)
	got := announced()
	if s := streak(); s != webhook.FailingStreak || len(got) != 1 || notices() != 1 {
		t.Fatalf("at the threshold: streak %d, announcements %+v, %d notices", s, got, notices())
	}
	if got[0].Resource.ID != sub.Data.ID || got[0].Data["failure_streak"] != float64(webhook.FailingStreak) || got[0].Request != nil {
		t.Fatalf("announcement %+v", got[0])
	}
	produce(3)
	if s := streak(); s != webhook.FailingStreak+3 || len(announced()) != 1 || notices() != 1 {
		t.Fatalf("past the threshold: streak %d, %d announcements, %d notices", s, len(announced()), notices())
	}
	var status struct{ Data struct{ Status string } }
	e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &status)
	if status.Data.Status != "enabled" {
		t.Fatalf("a streak alone disabled the subscription: %s", status.Data.Status)
	}

	failing.Store(false)
	produce(1)
	if s := streak(); s != 0 {
		t.Fatalf("after a success: streak %d", s)
	}
	failing.Store(true)
	produce(webhook.FailingStreak)
	if s := streak(); s != webhook.FailingStreak || len(announced()) != 2 || notices() != 2 {
		t.Fatalf("the next streak: %d, %d announcements, %d notices", s, len(announced()), notices())
	}
}
