package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook"
)

// tarpit is a loopback receiver that holds every request until the test
// releases it (or the delivery gives up), counting what it holds.
type tarpit struct {
	release    chan struct{}
	releaseNow func()

	mu       sync.Mutex
	inside   int
	most     int
	returned int
	answered map[string]bool // delivery ids answered 2xx
}

func newTarpit(t *testing.T) (*tarpit, string) {
	tp := &tarpit{release: make(chan struct{}), answered: map[string]bool{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: the server notices a client that gave up
		// (r.Context ends) only once it has.
		_, _ = io.Copy(io.Discard, r.Body)
		tp.mu.Lock()
		tp.inside++
		tp.most = max(tp.most, tp.inside)
		tp.mu.Unlock()
		released := false
		select {
		case <-tp.release:
			released = true
		case <-r.Context().Done():
		}
		tp.mu.Lock()
		tp.inside--
		tp.returned++
		if released {
			tp.answered[r.Header.Get(webhook.HeaderDeliveryID)] = true
		}
		tp.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(tp.release) }) })
	tp.releaseNow = func() { once.Do(func() { close(tp.release) }) }
	return tp, srv.URL + "/hook"
}

func (tp *tarpit) state() (inside, most, returned, answered int) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.inside, tp.most, tp.returned, len(tp.answered)
}

// TestTarpitVendorDoesNotDelayAnother is issue 25's fair delivery, on the
// local pipeline (the embedded store and queue, the background loops the
// local server runs): vendor A has 20 subscriptions to a loopback tarpit
// that holds every request until the test lets go, and keeps writing;
// vendor B has one fast receiver. All of B's deliveries arrive while every
// one of A's requests is still held (before, A's deliveries took all 16
// slots of the delivery loop and B's waited for A's timeouts), A never
// holds more than webhook.VendorSlots requests at once, and once the
// tarpit lets go every one of A's deliveries arrives, each attempt number
// recorded once.
func TestTarpitVendorDoesNotDelayAnother(t *testing.T) {
	e := webhookEnv(t, apitest.SQLite, true)
	ctx := context.Background()
	tp, tarpitURL := newTarpit(t)
	var aSubs []string
	for range 20 {
		aSubs = append(aSubs, mustSubscribe(t, e, tarpitURL, "product.created").Data.ID)
	}

	vb, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(ctx, "Fast Goods", "fast-goods")
	if err != nil {
		t.Fatal(err)
	}
	tokB := e.NewToken(vb.ID, auth.AllScopes()...)
	var bMu sync.Mutex
	bGot := map[string]bool{}
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bMu.Lock()
		bGot[r.Header.Get(webhook.HeaderEventID)] = true
		bMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(fast.Close)
	if r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + vb.ID + "/webhook-subscriptions", Token: tokB,
		Headers: map[string]string{"Idempotency-Key": "fair-sub-b"},
		Body:    map[string]any{"url": fast.URL + "/hook", "event_types": []string{"product.created"}}}); r.Status != http.StatusCreated {
		t.Fatalf("subscribe B: %d %s", r.Status, r.Body)
	}
	writeB := func(i int) {
		t.Helper()
		r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + vb.ID + "/products", Token: tokB,
			Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("fair-b-%d", i)}, Body: simpleProduct(fmt.Sprintf("fair-b-%d", i))})
		if r.Status != http.StatusCreated {
			t.Fatalf("B's write: %d %s", r.Status, r.Body)
		}
	}

	bgCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.App.RunBackground(bgCtx, 20*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done })

	// A's first writes: 40 deliveries to the tarpit. Wait until A holds
	// all it may.
	mustCreate(t, e, "fair-a-0", simpleProduct("fair-a-0"))
	mustCreate(t, e, "fair-a-1", simpleProduct("fair-a-1"))
	// A bounded wait (a generous one: nothing here depends on speed, only
	// on order), so that a regression fails instead of hanging.
	deadline := time.Now().Add(time.Minute)
	for {
		inside, _, _, _ := tp.state()
		if inside >= webhook.VendorSlots {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tarpit holds %d requests, want %d", inside, webhook.VendorSlots)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// B writes three times, A keeps writing meanwhile.
	for i := range 3 {
		writeB(i)
		mustCreate(t, e, fmt.Sprintf("fair-a-%d", i+2), simpleProduct(fmt.Sprintf("fair-a-%d", i+2)))
	}
	for {
		bMu.Lock()
		n := len(bGot)
		bMu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			_, most, returned, _ := tp.state()
			t.Fatalf("B received %d of its 3 deliveries; the tarpit held up to %d requests, %d returned", n, most, returned)
		}
		time.Sleep(10 * time.Millisecond)
	}
	inside, most, returned, _ := tp.state()
	if returned != 0 {
		t.Fatalf("B's deliveries arrived only after %d of A's requests returned (a timeout): A's tarpit delayed them", returned)
	}
	if most > webhook.VendorSlots || inside > webhook.VendorSlots {
		t.Fatalf("A held %d requests at once (%d now), want at most %d", most, inside, webhook.VendorSlots)
	}

	// The tarpit lets go: every one of A's 100 deliveries (5 events to 20
	// subscriptions) arrives in the end, deferred ones included. Once the
	// attempts in flight have finished, the background loops stop and the
	// pipeline is drained in turn while the clock moves past the
	// deferrals' delays (moving it by the queue's visibility while a
	// message is in flight would show that message again).
	tp.releaseNow()
	for {
		if inside, _, _, _ := tp.state(); inside == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the tarpit's requests did not end after the release")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	for i := 0; ; i++ {
		_, most, _, answered := tp.state()
		if most > webhook.VendorSlots {
			t.Fatalf("A held %d requests at once", most)
		}
		if answered == 100 {
			break
		}
		if i == 200 {
			t.Fatalf("after the release the tarpit answered %d of A's 100 deliveries", answered)
		}
		e.Clock.Advance(webhook.MaxDeferDelay)
		whDrain(t, e)
	}
	// Each attempt number once per delivery, and each delivery succeeded.
	for _, id := range aSubs {
		seen := map[string]bool{}
		succeeded := map[string]bool{}
		for _, a := range whAttempts(t, e, id) {
			k := fmt.Sprintf("%s#%d", a.DeliveryID, a.Attempt)
			if seen[k] {
				t.Fatalf("attempt %d of delivery %s recorded twice", a.Attempt, a.DeliveryID)
			}
			seen[k] = true
			if a.Outcome == webhook.OutcomeSucceeded {
				succeeded[a.DeliveryID] = true
			}
		}
		if len(succeeded) != 5 {
			t.Fatalf("subscription %s: %d deliveries succeeded, want 5", id, len(succeeded))
		}
	}
}
