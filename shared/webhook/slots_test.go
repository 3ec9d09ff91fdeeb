package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// storesEnv chooses the stores this package's tests run on, as it does
// for the HTTP suites (apitest.StoresEnv, docs/decisions.md "The test
// loop"): unset, the embedded store and DynamoDB Local, but the heavy
// simulations whose store operations a cheaper test already runs there
// on the embedded store alone (onDynamoDB); "all", every test on both;
// "sqlite", the embedded store only (`make test`'s second clock pass).
const storesEnv = "SELLERAPI_TEST_STORES"

// storesMode reads storesEnv. Another value panics: a typo must not
// quietly turn the DynamoDB runs off.
func storesMode() string {
	switch v := os.Getenv(storesEnv); v {
	case "", "all", "sqlite":
		return v
	default:
		panic(fmt.Sprintf("webhook tests: %s=%q: want all, sqlite or unset", storesEnv, v))
	}
}

// onDynamoDB reports whether a heavy simulation runs on DynamoDB Local
// too: only when storesEnv is "all".
func onDynamoDB() bool { return storesMode() == "all" }

// slotStores are the stores a test runs on: the embedded one, and
// DynamoDB Local unless storesEnv is "sqlite".
func slotStores() map[string]func(t *testing.T, c *clock.Fake) store.Store {
	stores := map[string]func(t *testing.T, c *clock.Fake) store.Store{
		"sqlite": func(t *testing.T, c *clock.Fake) store.Store {
			s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	}
	if storesMode() != "sqlite" {
		stores["dynamodb"] = func(t *testing.T, c *clock.Fake) store.Store {
			client, table := ddbtest.NewTable(t)
			return dynamodb.New(client, table, dynamodb.WithClock(c.Now))
		}
	}
	return stores
}

// race has takers goroutines try, all at once, to take a slot of vendor
// through slots (round robin, as the environments of a worker would), every
// third one for a retry; the winners hold their slot until every taker has
// tried. It returns the winners' releases and how many retries won.
func race(t *testing.T, slots []Slots, vendor string, takers int) (releases []func(context.Context) error, retries int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range takers {
		wg.Go(func() {
			<-start
			retry := i%3 == 0
			release, ok, err := acquire(context.Background(), slots[i%len(slots)], vendor, "msg", retry)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				mu.Lock()
				releases = append(releases, release)
				if retry {
					retries++
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return releases, retries
}

// TestStoreSlotsBoundAVendorAcrossProcesses: three environments of the
// webhook worker (three StoreSlots over one store) race 30 attempts of one
// vendor at once, and 30 of another: each vendor gets exactly VendorSlots,
// retries at most RetrySlots of them, and the other vendor's share is its
// own. A slot given back is taken again; a slot whose holder died comes
// free when its lease runs out, and the dead holder's late give-back does
// not free the slot its next holder has. On both stores.
func TestStoreSlotsBoundAVendorAcrossProcesses(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st := open(t, clk)
			envs := []Slots{StoreSlots{Store: st, Clock: clk}, StoreSlots{Store: st, Clock: clk}, StoreSlots{Store: st, Clock: clk}}

			var a, b []func(context.Context) error
			var aRetries, bRetries int
			var wg sync.WaitGroup
			wg.Go(func() { a, aRetries = race(t, envs, "ven_a", 30) })
			wg.Go(func() { b, bRetries = race(t, envs, "ven_b", 30) })
			wg.Wait()
			if len(a) != VendorSlots || len(b) != VendorSlots || aRetries > RetrySlots || bRetries > RetrySlots {
				t.Fatalf("vendor a holds %d slots (%d retries), vendor b %d (%d), want %d each, at most %d retries",
					len(a), aRetries, len(b), bRetries, VendorSlots, RetrySlots)
			}
			if _, ok, err := acquire(ctx, envs[0], "ven_a", "late", false); err != nil || ok {
				t.Fatalf("a fifth attempt of a vendor holding its share: ok %v, %v", ok, err)
			}

			// Given back, taken again.
			if err := a[0](ctx); err != nil {
				t.Fatal(err)
			}
			again, ok, err := acquire(ctx, envs[1], "ven_a", "next", false)
			if err != nil || !ok {
				t.Fatalf("a slot given back is not taken again: ok %v, %v", ok, err)
			}
			if _, ok, _ := acquire(ctx, envs[2], "ven_a", "late", false); ok {
				t.Fatal("a vendor holds more than its share after a give-back")
			}

			// Every holder dies: nothing comes free until the leases run out.
			clk.Advance(SlotLease / 2)
			if _, ok, _ := acquire(ctx, envs[0], "ven_a", "late", false); ok {
				t.Fatal("a held slot came free before its lease ran out")
			}
			clk.Advance(SlotLease)
			var fresh []func(context.Context) error
			for range VendorSlots {
				r, ok, err := acquire(ctx, envs[0], "ven_a", "after-lease", false)
				if err != nil || !ok {
					t.Fatalf("after the leases ran out: ok %v, %v", ok, err)
				}
				fresh = append(fresh, r)
			}
			// The dead holders' late give-backs free nothing of the new ones.
			for _, r := range append(a[1:], again) {
				if err := r(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok, _ := acquire(ctx, envs[1], "ven_a", "late", false); ok {
				t.Fatal("a stale give-back freed a slot another holder has")
			}
			for _, r := range fresh {
				if err := r(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok, err := acquire(ctx, envs[2], "ven_a", "last", true); err != nil || !ok {
				t.Fatalf("all given back, a retry gets no slot: ok %v, %v", ok, err)
			}
		})
	}
}

// TestMemorySlots: the local pool's count keeps each vendor to
// VendorSlots, retries to RetrySlots, with real goroutines; a give-back
// counts once.
func TestMemorySlots(t *testing.T) {
	s := NewMemorySlots(clocktest.Fake(2026, 3, 4, 10, 0, 0))
	a, aRetries := race(t, []Slots{s}, "ven_a", 30)
	b, _ := race(t, []Slots{s}, "ven_b", 30)
	if len(a) != VendorSlots || len(b) != VendorSlots || aRetries > RetrySlots {
		t.Fatalf("vendor a holds %d (%d retries), b %d", len(a), aRetries, len(b))
	}
	ctx := context.Background()
	a[0](ctx)
	a[0](ctx) // twice: counted once
	if _, ok, _ := acquire(ctx, s, "ven_a", "x", false); !ok {
		t.Fatal("a slot given back is not taken again")
	}
	if _, ok, _ := acquire(ctx, s, "ven_a", "y", false); ok {
		t.Fatal("a double give-back freed two slots")
	}
	// Only retries held: fresh deliveries still have the rest.
	r := NewMemorySlots(clocktest.Fake(2026, 3, 4, 10, 0, 0))
	for range RetrySlots {
		if _, ok, _ := acquire(ctx, r, "ven_c", "retry", true); !ok {
			t.Fatal("a retry got no slot")
		}
	}
	if _, ok, _ := acquire(ctx, r, "ven_c", "retry", true); ok {
		t.Fatal("retries hold more than RetrySlots")
	}
	for range VendorSlots - RetrySlots {
		if _, ok, _ := acquire(ctx, r, "ven_c", "fresh", false); !ok {
			t.Fatal("retries took a fresh delivery's slot")
		}
	}
}

// TestDeliveryDeferredWhileTheVendorHoldsItsShare: with every slot of a
// vendor held elsewhere, a delivery makes no request and no record: it is
// sent again with the same attempt number after a deferral delay, and
// makes its attempt once a slot is free. A message received again that
// owns its attempt's claim (it claimed it before its worker died) makes
// the attempt without a slot, since a deferred copy would carry another
// message id and be taken for a duplicate. On both stores.
func TestDeliveryDeferredWhileTheVendorHoldsItsShare(t *testing.T) {
	for name, open := range slotStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			clk := clocktest.Fake(2026, 3, 4, 10, 0, 0)
			st := open(t, clk)
			p := newPreparing(t, st, clk)
			slots, out, d, posts, vendorID := p.slots, p.out, p.d, p.posts, preparingVendor
			routed := []pipeline.Outgoing{{Queue: queue.WebhookDeliveries, Body: p.routed}}
			var held []func(context.Context) error
			for range VendorSlots {
				r, ok, err := acquire(ctx, slots, vendorID, "elsewhere", false)
				if err != nil || !ok {
					t.Fatalf("hold: %v %v", ok, err)
				}
				held = append(held, r)
			}

			if err := d.Handle(ctx, queue.Message{ID: "m1", Body: routed[0].Body, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			claimed, _ := st.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: "WHCLAIM#", Limit: 10})
			if posts.Load() != 0 || len(out.sent) != 1 || len(claimed) != 0 {
				t.Fatalf("deferred: %d requests, %d messages sent, %d claims", posts.Load(), len(out.sent), len(claimed))
			}
			deferred := out.sent[0]
			if deferred.Attempt != 1 || deferred.Deferrals != 1 || deferred.DeliveryID == "" {
				t.Fatalf("deferred message %+v, want attempt 1 deferred once", deferred)
			}

			// A slot comes free: the deferred message makes attempt 1.
			if err := held[0](ctx); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(deferred)
			if err := d.Handle(ctx, queue.Message{ID: "m2", Body: b, Receives: 1}); err != nil {
				t.Fatal(err)
			}
			attempts, _ := st.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: "WHATT#", Limit: 10})
			if posts.Load() != 1 || len(attempts) != 1 || len(out.sent) != 1 {
				t.Fatalf("after a slot came free: %d requests, %d attempts, %d messages", posts.Load(), len(attempts), len(out.sent))
			}
			if free, ok, _ := acquire(ctx, slots, vendorID, "check", false); !ok {
				t.Fatal("the delivery kept its slot")
			} else {
				free(ctx)
			}

			// A message that claimed its attempt and was received again
			// while the vendor's share is held goes on without a slot.
			r, ok, err := acquire(ctx, slots, vendorID, "elsewhere", false)
			if err != nil || !ok {
				t.Fatal(err)
			}
			held[0] = r
			ev2 := event.New(clk.Now(), vendorID, event.ProductCreated, "product", "prd_2", nil)
			op2, _ := event.Op(ev2)
			if err := st.Transact(ctx, op2); err != nil {
				t.Fatal(err)
			}
			routed, _ = d.Rule(ctx, store.Change{Kind: store.Inserted, Key: op2.Item.Key(), New: &op2.Item})
			var m Message
			json.Unmarshal(routed[0].Body, &m)
			if _, _, err := d.claim(ctx, m, "m3", newAttemptID(clk.Now())); err != nil {
				t.Fatal(err)
			}
			if err := d.Handle(ctx, queue.Message{ID: "m3", Body: routed[0].Body, Receives: 2}); err != nil {
				t.Fatal(err)
			}
			if posts.Load() != 2 || len(out.sent) != 1 {
				t.Fatalf("the claim's owner, received again: %d requests, %d messages", posts.Load(), len(out.sent))
			}
			// Another message of that attempt received again is deferred.
			if err := d.Handle(ctx, queue.Message{ID: "m4", Body: routed[0].Body, Receives: 2}); err != nil {
				t.Fatal(err)
			}
			if posts.Load() != 2 || len(out.sent) != 2 || out.sent[1].Deferrals != 1 {
				t.Fatalf("a duplicate received again: %d requests, %d messages", posts.Load(), len(out.sent))
			}
		})
	}
}

// TestDeferDelay: a deferral waits at least FirstDeferDelay and at most
// MaxDeferDelay; the first is jittered (no synchronized return); behind
// prompt holders the window is FirstDeferDelay·4^(n-1), behind slow ones
// it is (left + RequestTimeout)·4^n.
func TestDeferDelay(t *testing.T) {
	prompt, slow := Expect{}, Expect{Slow: true, Left: 5 * time.Second}
	cases := []struct {
		n        int
		e        Expect
		jitter   float64
		min, max time.Duration
	}{
		{1, prompt, 0, FirstDeferDelay, FirstDeferDelay},
		{1, prompt, 0.5, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{1, prompt, 0.999, 1990 * time.Millisecond, 2 * time.Second},
		{3, prompt, 0.999, 16 * time.Second, 17 * time.Second},
		{30, prompt, 0.999, MaxDeferDelay - time.Second, MaxDeferDelay},
		{1, slow, 0, FirstDeferDelay, FirstDeferDelay},
		{1, slow, 0.5, 35 * time.Second, 35 * time.Second},
		{1, slow, 0.999, 68 * time.Second, 69 * time.Second},
		{2, slow, 0.999, 272 * time.Second, 273 * time.Second},
		{3, slow, 0.999, MaxDeferDelay - time.Second, MaxDeferDelay},
		{1, Expect{Slow: true, Left: -time.Second}, 0.5, 25 * time.Second, 25 * time.Second},
	}
	for _, c := range cases {
		if d := DeferDelay(c.n, c.e, c.jitter); d < c.min || d > c.max {
			t.Errorf("deferral %d behind %+v, jitter %v: waits %s, want %s to %s", c.n, c.e, c.jitter, d, c.min, c.max)
		}
	}
}

// acquire looks at the vendor's slots and takes one, as a delivery does.
func acquire(ctx context.Context, s Slots, vendorID, owner string, retry bool) (func(context.Context) error, bool, error) {
	look, err := s.Look(ctx, vendorID)
	if err != nil {
		return nil, false, err
	}
	return s.Take(ctx, look, Holder{Owner: owner, Retry: retry})
}
