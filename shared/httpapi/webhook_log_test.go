package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook"
)

// logAttempt is an attempt as the delivery log shows it, with the answer.
type logAttempt struct {
	whAttempt
	Response *string `json:"response"`
	Notice   *string `json:"notice"`
}

func logOf(t *testing.T, e *apitest.Env, subID, query string) []logAttempt {
	t.Helper()
	r := e.Get(subsPath(e) + "/" + subID + "/deliveries?limit=100" + query)
	if r.Status != http.StatusOK {
		t.Fatalf("deliveries%s: %d %s", query, r.Status, r.Body)
	}
	var page struct{ Data []logAttempt }
	r.JSON(t, &page)
	return page.Data
}

// TestDeliveryLogFiltersAndAnswers: each attempt keeps the receiver's
// status and the first 1 KiB of what it answered, as text (a body that is
// not UTF-8 comes back with replacement characters, markup as the bytes
// it was); the log filters by event and by outcome; bad filters are 400,
// another vendor's or an unknown subscription 404, a token without
// webhooks.read 403.
func TestDeliveryLogFiltersAndAnswers(t *testing.T) {
	{
		e := webhookEnv(t, apitest.SQLite, true)
		failing := "<html><script>alert(1)</script>" + strings.Repeat("x", 2000) + "\xff"
		var n atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if n.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, failing)
				return
			}
			_, _ = io.WriteString(w, "ok \xfe")
		}))
		t.Cleanup(srv.Close)
		sub := mustSubscribe(t, e, srv.URL+"/hook", "product.created")

		a := whProductEvent(t, e, "log-a")["id"].(string)
		whDrain(t, e)
		b := whProductEvent(t, e, "log-b")["id"].(string)
		whDrain(t, e)

		all := logOf(t, e, sub.Data.ID, "")
		if len(all) != 2 {
			t.Fatalf("%d attempts, want 2", len(all))
		}
		onlyA := logOf(t, e, sub.Data.ID, "&event_id="+a)
		if len(onlyA) != 1 || onlyA[0].EventID != a || onlyA[0].Outcome != webhook.OutcomeFailed || *onlyA[0].StatusCode != 500 {
			t.Fatalf("event_id=%s: %+v", a, onlyA)
		}
		if got := onlyA[0].Response; got == nil || *got != failing[:webhook.ResponseExcerpt] {
			t.Fatalf("the failed attempt's answer: %v, want its first %d bytes", got, webhook.ResponseExcerpt)
		}
		ok := logOf(t, e, sub.Data.ID, "&outcome=succeeded")
		if len(ok) != 1 || ok[0].EventID != b || ok[0].Response == nil || *ok[0].Response != "ok \uFFFD" {
			t.Fatalf("outcome=succeeded: %+v", ok)
		}
		if got := logOf(t, e, sub.Data.ID, "&outcome=succeeded&event_id="+a); len(got) != 0 {
			t.Fatalf("both filters: %+v", got)
		}
		if got := logOf(t, e, sub.Data.ID, "&outcome=dead"); len(got) != 0 {
			t.Fatalf("outcome=dead: %+v", got)
		}

		path := subsPath(e) + "/" + sub.Data.ID + "/deliveries?"
		e.Get(path+"outcome=lost").WantProblem(t, http.StatusBadRequest, "INVALID_PARAMETER")
		e.Get(path+"event_id=prd_0123456789abcdefghijklmnop").WantProblem(t, http.StatusBadRequest, "INVALID_PARAMETER")
		e.Get(path+"outcome=failed&outcome=dead").WantProblem(t, http.StatusBadRequest, "INVALID_PARAMETER")
		e.Get(subsPath(e)+"/whsub_nope/deliveries?outcome=failed").WantProblem(t, http.StatusNotFound, "NOT_FOUND")
		reader := e.NewToken(e.Vendor.ID, auth.ProductsRead)
		e.Do(apitest.Req{Path: path + "outcome=failed", Token: reader}).WantProblem(t, http.StatusForbidden, "INSUFFICIENT_SCOPE")
		// A cursor is bound to its filters.
		r := e.Get(path + "limit=1")
		var page struct {
			Page struct {
				NextCursor *string `json:"next_cursor"`
			}
		}
		r.JSON(t, &page)
		if page.Page.NextCursor == nil {
			t.Fatal("no cursor")
		}
		e.Get(path+"limit=1&outcome=failed&page_after="+*page.Page.NextCursor).WantProblem(t, http.StatusBadRequest, "INVALID_CURSOR")
	}
}

// TestDeliveryLogFilterBudget: a filtered page of the delivery log costs
// one sequential store round trip, like every list page (its first query
// starts beside the admission batch), on both stores.
func TestDeliveryLogFilterBudget(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe, Config: func(c *config.Config) {
			c.RateReads, c.RateWrites = 1<<20, 1<<20
			c.AllowPrivateWebhooks = true
		}})
		sub := mustSubscribe(t, e, "http://127.0.0.1:9/hook", "product.created")
		evID := "evt_" + strings.Repeat("0", 26)
		e.Get(subsPath(e) + "/" + sub.Data.ID + "/deliveries?limit=1")
		for _, query := range []string{"outcome=failed", "event_id=" + evID, "outcome=dead&event_id=" + evID} {
			res := e.Get(subsPath(e) + "/" + sub.Data.ID + "/deliveries?limit=2&" + query)
			if res.Status != http.StatusOK {
				t.Fatalf("%s: %d %s", query, res.Status, res.Body)
			}
			if got := rt.of("listWebhookDeliveries"); got != 1 {
				t.Errorf("%s: %d sequential store round trips, budget 1", query, got)
			}
		}
	})
}
