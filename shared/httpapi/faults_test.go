package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// faulty fails exactly one store call, the failAt-th the server makes
// (counting from 1), with an error or a timeout, without making it.
type faulty struct {
	store.Store
	calls   atomic.Int64
	failAt  atomic.Int64
	timeout atomic.Bool
	fired   atomic.Bool
}

var errInjected = errors.New("faults test: injected store failure")

func (f *faulty) fault() error {
	if f.calls.Add(1) != f.failAt.Load() {
		return nil
	}
	f.fired.Store(true)
	if f.timeout.Load() {
		return fmt.Errorf("faults test: injected timeout: %w", context.DeadlineExceeded)
	}
	return errInjected
}

func (f *faulty) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := f.fault(); err != nil {
		return store.Item{}, err
	}
	return f.Store.Get(ctx, k)
}

func (f *faulty) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	if err := f.fault(); err != nil {
		return nil, err
	}
	return f.Store.GetMany(ctx, keys)
}

func (f *faulty) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if err := f.fault(); err != nil {
		return nil, err
	}
	return f.Store.Query(ctx, q)
}

func (f *faulty) Transact(ctx context.Context, ops ...store.Op) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Transact(ctx, ops...)
}

func (f *faulty) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	if err := f.fault(); err != nil {
		return 0, err
	}
	return f.Store.Increment(ctx, k, attr, delta, below, expiresAt)
}

// faultRun is one pass of the scenario for one vendor.
type faultRun struct {
	t      *testing.T
	e      *apitest.Env
	vendor string
	token  string
	// statuses are the final status of every step, in order.
	statuses []int
	// retried counts steps that answered 503 first.
	retried int
}

// step sends a request; a 503 must carry Retry-After and the problem
// shape, and the same request is then sent again, as a client would after
// Retry-After, until it answers something else.
func (r *faultRun) step(method, path string, body any, key string) *apitest.Resp {
	r.t.Helper()
	req := apitest.Req{Method: method, Path: "/vendors/" + r.vendor + path, Token: r.token, Body: body}
	if key != "" {
		req.Headers = map[string]string{"Idempotency-Key": key}
	}
	for attempt := 0; ; attempt++ {
		res := r.e.Do(req)
		if res.Status != http.StatusServiceUnavailable {
			r.statuses = append(r.statuses, res.Status)
			return res
		}
		res.WantProblem(r.t, http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE")
		if res.Header.Get("Retry-After") == "" {
			r.t.Fatalf("%s %s: 503 without Retry-After", method, path)
		}
		r.retried++
		if attempt == 5 {
			r.t.Fatalf("%s %s: still 503 after %d attempts: %s", method, path, attempt+1, res.Body)
		}
	}
}

func (r *faultRun) id(res *apitest.Resp) string {
	var b struct{ Data struct{ ID string } }
	_ = json.Unmarshal(res.Body, &b)
	return b.Data.ID
}

// scenario touches every operation group with writes and reads, then
// calls settled (which disarms the fault) and returns a snapshot of the
// state it left: what must come out the same whatever store call failed
// along the way.
func (r *faultRun) scenario(settled func()) map[string]any {
	p := r.step(http.MethodPost, "/products", simpleProduct("fault-shirt"), "fault-product-1")
	pid := r.id(p)
	item := catalog.InventoryItemID(pid, 0)
	r.step(http.MethodGet, "", nil, "")
	r.step(http.MethodGet, "/products/"+pid, nil, "")
	up := simpleProduct("fault-shirt")
	up["name"], up["expected_revision"] = "Renamed shirt", 1
	r.step(http.MethodPatch, "/products/"+pid, up, "")
	r.step(http.MethodPost, "/products/"+pid+"/publish", map[string]any{"expected_revision": 2}, "")
	r.step(http.MethodPost, "/inventory-items/"+item+"/adjustments", map[string]any{"target_on_hand": 10, "expected_version": 1}, "fault-adjust-1")
	conn := r.id(r.step(http.MethodPost, "/connections", connectionBody("marketplace_a", destinationRoles), "fault-conn-1"))
	r.step(http.MethodGet, "/authority", nil, "")
	res1 := r.id(r.step(http.MethodPost, "/inventory-reservations", map[string]any{"connection_id": conn, "inventory_item_id": item, "quantity": 3}, "fault-res-1"))
	r.step(http.MethodPost, "/inventory-reservations/"+res1+"/release", map[string]any{"expected_version": 1}, "fault-release-1")
	res2 := r.id(r.step(http.MethodPost, "/inventory-reservations", map[string]any{"connection_id": conn, "inventory_item_id": item, "quantity": 2}, "fault-res-2"))
	r.step(http.MethodPost, "/inventory-reservations/"+res2+"/commit", map[string]any{"expected_version": 1}, "fault-commit-1")
	r.step(http.MethodPost, "/external-orders", map[string]any{"connection_id": conn, "external_order_id": "FAULT-1", "lines": []any{xoLine("a", item, 1)}}, "fault-xo-1")
	r.step(http.MethodPost, "/listings", map[string]any{"connection_id": conn, "product_id": pid}, "fault-listing-1")
	bulkID := r.id(r.step(http.MethodPost, "/bulk-operations", batch([]string{item}, 20), "fault-bulk-1"))
	r.step(http.MethodGet, "/bulk-operations/"+bulkID, nil, "")
	r.step(http.MethodPost, "/sync-jobs", map[string]any{"connection_id": conn, "kind": "inventory", "items": stockItems(item, 10)}, "fault-sync-1")
	r.step(http.MethodPost, "/webhook-subscriptions", map[string]any{"url": "https://hooks.example.com/fault", "event_types": []string{"*"}}, "fault-hook-1")
	r.step(http.MethodPost, "/store-pairings", map[string]any{}, "fault-pairing-1")
	for _, list := range []string{"/products", "/inventory-items", "/connections", "/inventory-reservations", "/listings", "/external-orders",
		"/seller-orders", "/events?type=inventory_item.adjusted", "/webhook-subscriptions", "/sync-jobs", "/conflicts",
		"/store-pairings", "/stock-effects?inventory_item_id=" + item} {
		r.step(http.MethodGet, list, nil, "")
	}

	// The state, read without faults.
	settled()
	snap := map[string]any{"statuses": r.statuses}
	get := func(path string) map[string]any {
		var b struct{ Data map[string]any }
		r.e.Do(apitest.Req{Path: "/vendors/" + r.vendor + path, Token: r.token}).JSON(r.t, &b)
		return b.Data
	}
	prod := get("/products/" + pid)
	inv := get("/inventory-items/" + item)
	cn := get("/connections/" + conn)
	snap["product"] = []any{prod["revision"], prod["status"], prod["name"]}
	snap["item"] = []any{inv["on_hand"], inv["reserved"], inv["available"], inv["version"]}
	snap["connection"] = []any{cn["version"], cn["active_reservation_count"], cn["unresolved_external_order_count"], cn["active_listing_count"]}
	counts := func(path, field string) []string {
		var b struct{ Data []map[string]any }
		r.e.Do(apitest.Req{Path: "/vendors/" + r.vendor + path, Token: r.token}).JSON(r.t, &b)
		var out []string
		for _, d := range b.Data {
			out = append(out, fmt.Sprint(d[field]))
		}
		sort.Strings(out)
		return out
	}
	snap["reservations"] = counts("/inventory-reservations", "status")
	snap["events"] = counts("/events?limit=100", "type")
	snap["effects"] = counts("/stock-effects?inventory_item_id="+item, "on_hand_delta")
	snap["orders"] = counts("/external-orders", "status")
	snap["listings"] = counts("/listings", "status")
	snap["bulk"] = get("/bulk-operations/" + bulkID)["status"]
	snap["sync"] = counts("/sync-jobs", "status")
	snap["hooks"] = counts("/webhook-subscriptions", "status")
	snap["pairings"] = counts("/store-pairings", "status")
	return snap
}

// TestFaultsOnEveryStoreCall runs the scenario once to count the store
// calls the server makes, then again for every call, failing that one
// call with an error and then with a timeout: every request answers its
// normal answer or 503 with Retry-After, a retried request then answers
// normally, and the state left is exactly the state of the run without
// faults (counters, buckets, effects, events: nothing half-written). On
// DynamoDB Local, every twelfth call is injected, to keep the run short.
func TestFaultsOnEveryStoreCall(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		var f *faulty
		e := apitest.New(t, apitest.Options{Store: kind, WebhookResolver: publicHosts,
			WrapStore: func(s store.Store) store.Store { f = &faulty{Store: s}; return f },
			Config:    func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, 1<<20 }})
		var mu sync.Mutex
		n := 0
		newRun := func() *faultRun {
			mu.Lock()
			n++
			mu.Unlock()
			v, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), fmt.Sprintf("Fault %d", n), fmt.Sprintf("fault-%d", n))
			if err != nil {
				t.Fatal(err)
			}
			return &faultRun{t: t, e: e, vendor: v.ID, token: e.NewToken(v.ID, auth.AllScopes()...)}
		}
		f.failAt.Store(-1)
		base := newRun()
		start := f.calls.Load()
		var points int64
		want := base.scenario(func() { points = f.calls.Load() - start })
		if base.retried != 0 {
			t.Fatalf("the run without faults answered 503 %d times", base.retried)
		}
		stride := int64(1)
		if kind == apitest.DynamoDB {
			stride = 12
		}
		if os.Getenv("FAULTS_STRIDE") != "" {
			fmt.Sscan(os.Getenv("FAULTS_STRIDE"), &stride)
		}
		exercised := 0
		for _, timeout := range []bool{false, true} {
			for k := int64(1); k <= points; k += stride {
				run := newRun()
				f.timeout.Store(timeout)
				f.fired.Store(false)
				f.failAt.Store(f.calls.Load() + k)
				got := run.scenario(func() { f.failAt.Store(-1) })
				if !f.fired.Load() {
					continue // the run made fewer calls than the first
				}
				exercised++
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("failing call %d (timeout %v) left another state:\n got %v\nwant %v", k, timeout, got, want)
				}
			}
		}
		t.Logf("%s: %d store calls in the scenario, %d injection points exercised (error and timeout)", kind, points, exercised)
		if exercised < int(points/stride) {
			t.Fatalf("only %d injection points fired of about %d", exercised, 2*points/stride)
		}
	})
}
