package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/syncjob"
)

// clients is how many concurrent keep-alive clients a benchmark runs,
// the load docs/performance.md's table is measured at.
const clients = 8

// measure sends b.N requests built by req from clients concurrent
// keep-alive clients (req gets the client's number and the request's) and
// reports requests/s, p50, p99 and, when roundTrips is given, store round
// trips per request.
func measure(b *testing.B, req func(client, i int) *http.Request, roundTrips *atomic.Int64) {
	measureStatus(b, req, roundTrips, http.StatusOK)
}

func measureStatus(b *testing.B, req func(client, i int) *http.Request, roundTrips *atomic.Int64, want int) {
	b.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	lats := make([][]time.Duration, clients)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N || failed.Load() != nil {
					return
				}
				t0 := time.Now()
				res, err := client.Do(req(w, i))
				if err != nil {
					failed.Store(err.Error())
					return
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != want {
					failed.Store(fmt.Sprintf("status %d, want %d: %s", res.StatusCode, want, body))
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if f := failed.Load(); f != nil {
		b.Fatal(f)
	}
	// The process's CPU per request (server and clients): unlike req/s it
	// hardly moves when other work shares the machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
	lat := slices.Concat(lats...)
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	if roundTrips != nil {
		b.ReportMetric(float64(roundTrips.Load())/float64(b.N), "roundtrips/op")
	}
}

// benchEnv starts an API on kind with unlimited rate windows and counts
// store round trips (all calls, and the sequential waits among them).
func benchEnv(b *testing.B, kind apitest.StoreKind, wrap ...func(store.Store) store.Store) (*apitest.Env, *benchCounts) {
	cs := &benchCounts{}
	e := apitest.New(b, benchOptions(kind, cs, wrap...))
	cs.logs = e.Logs
	return e, cs
}

// benchOptions are benchEnv's: the store of kind as deployed, unlimited
// rate windows, every request observed by cs.
func benchOptions(kind apitest.StoreKind, cs *benchCounts, wrap ...func(store.Store) store.Store) apitest.Options {
	o := apitest.Options{Store: kind,
		Config:          func(c *config.Config) { c.RateReads, c.RateWrites = 1<<30, 1<<30 },
		Observe:         cs.observe,
		WebhookResolver: publicHosts}
	if kind == apitest.DynamoDB {
		// As deployed: every routed insert committed with its pending
		// marker (app.MarkPending, the deployed store's hook), transactions
		// priced as AWS bills them, and the request line as a Lambda
		// function writes it, metrics embedded.
		o.WrapStore = func(s store.Store) store.Store { return markedPending{pricedTransactions{s}, &cs.unmarked} }
		o.Config = func(c *config.Config) {
			c.RateReads, c.RateWrites = 1<<30, 1<<30
			c.MetricsNamespace = "sellerapi/prod"
		}
		o.AppOptions = []app.Option{app.WithLogHandler(lambdaapi.WithRequestIDs)}
	}
	if len(wrap) > 0 {
		inner := o.WrapStore
		o.WrapStore = func(s store.Store) store.Store {
			if inner != nil {
				s = inner(s)
			}
			return wrap[0](s)
		}
	}
	return o
}

// benchCounts sums the store work of the measured requests, and the log
// bytes they wrote.
type benchCounts struct {
	calls, waits, read, write atomic.Int64
	// unmarked is what the pending markers the hook left out (events no
	// subscription could receive) would have cost, in thousandths of a
	// write unit (markedPending); only on DynamoDB.
	unmarked    atomic.Int64
	logs        *apitest.SyncBuffer
	logsAtReset int
}

func (c *benchCounts) observe(o httpapi.Observation) {
	c.calls.Add(o.RoundTrips)
	c.waits.Add(o.SequentialRoundTrips)
	c.read.Add(int64(o.ReadUnits * 1000))
	c.write.Add(int64(o.WriteUnits * 1000))
}

func (c *benchCounts) reset() {
	c.calls.Store(0)
	c.waits.Store(0)
	c.read.Store(0)
	c.write.Store(0)
	c.unmarked.Store(0)
	if c.logs != nil {
		c.logsAtReset = c.logs.Len()
	}
}

// report adds the per-request store metrics to a finished benchmark: the
// read and write units are what scripts/bill prices.
func (c *benchCounts) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(c.calls.Load())/n, "calls/op")
	b.ReportMetric(float64(c.waits.Load())/n, "waits/op")
	read, write := float64(c.read.Load())/1000/n, float64(c.write.Load())/1000/n
	b.ReportMetric(read+write, "capacity/op")
	b.ReportMetric(read, "rru/op")
	b.ReportMetric(write, "wru/op")
	// Only the DynamoDB rows mark (benchOptions); the bill reads this.
	b.ReportMetric(float64(c.unmarked.Load())/1000/n, "unmarked-wru/op")
	if c.logs != nil {
		b.ReportMetric(float64(c.logs.Len()-c.logsAtReset)/n, "log-B/op")
	}
}

func benchRequest(e *apitest.Env, method, path string, body []byte, key string) *http.Request {
	var r *http.Request
	if body != nil {
		r, _ = http.NewRequest(method, e.URL+path, bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r, _ = http.NewRequest(method, e.URL+path, nil)
	}
	r.Header.Set("Authorization", "Bearer "+e.Token)
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	return r
}

// benchOp is one measured operation: setup seeds an API and returns the
// request of client w's i-th call.
type benchOp struct {
	name   string
	status int
	setup  func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request
}

// benchOps are the key operations docs/performance.md's table lists.
var benchOps = []benchOp{
	{"get-vendor", http.StatusOK, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		return func(int, int) *http.Request { return benchRequest(e, http.MethodGet, "/vendors/"+e.Vendor.ID, nil, "") }
	}},
	{"get-product", http.StatusOK, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		p := seedProduct(b, e, "bench-get")
		return func(int, int) *http.Request {
			return benchRequest(e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/products/"+p, nil, "")
		}
	}},
	{"list-inventory", http.StatusOK, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		for i := 0; i < 10; i++ {
			seedVariable(b, e, fmt.Sprintf("bench-list-%d", i), 5)
		}
		return func(int, int) *http.Request {
			return benchRequest(e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/inventory-items", nil, "")
		}
	}},
	{"create-product", http.StatusCreated, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		return func(_, i int) *http.Request {
			body, _ := json.Marshal(simpleProduct(fmt.Sprintf("bench-%d", i)))
			return benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/products", body, fmt.Sprintf("bench-create-%d", i))
		}
	}},
	// Each client adjusts its own item, so the expected versions it sends
	// are its own to count.
	{"adjust-inventory", http.StatusOK, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		p := seedVariable(b, e, "bench-adjust", clients)
		versions := make([]int64, clients)
		return func(w, i int) *http.Request {
			versions[w]++
			v := versions[w]
			body, _ := json.Marshal(map[string]any{"target_on_hand": v % 1000, "expected_version": v})
			item := catalog.InventoryItemID(p, w+1)
			return benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-items/"+item+"/adjustments", body, fmt.Sprintf("bench-adjust-%d", i))
		}
	}},
	{"reserve", http.StatusCreated, func(b *testing.B, e *apitest.Env) func(w, i int) *http.Request {
		conn, p := seedStock(b, e)
		return func(w, i int) *http.Request {
			body, _ := json.Marshal(map[string]any{"connection_id": conn, "inventory_item_id": catalog.InventoryItemID(p, w+1), "quantity": 1})
			return benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-reservations", body, fmt.Sprintf("bench-reserve-%d", i))
		}
	}},
}

// seedStock makes a connection and a product of one well-stocked item per
// client, so that concurrent reservations do not contend on one item.
func seedStock(b *testing.B, e *apitest.Env) (conn, product string) {
	conn = seedConnection(b, e)
	product = seedVariable(b, e, "bench-reserve", clients)
	for w := 0; w < clients; w++ {
		body, _ := json.Marshal(map[string]any{"target_on_hand": 1_000_000_000, "expected_version": 1})
		res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-items/"+catalog.InventoryItemID(product, w+1)+"/adjustments", body, fmt.Sprintf("bench-stock-%d", w)))
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("stock: %v", err)
		}
		res.Body.Close()
	}
	return conn, product
}

// BenchmarkAPI measures each key operation at 8 concurrent clients beside
// its bare baseline in the same run: for a read, a bare net/http handler
// writing the bytes the API answered; for a write, a bare handler that
// runs the same single SQLite transaction (the rows the API wrote, through
// database/sql, no framework). scripts/bench prints the ratios.
func BenchmarkAPI(b *testing.B) {
	for _, op := range benchOps {
		b.Run(op.name+"/bare", func(b *testing.B) {
			bare := bareServer(b, op)
			measureStatus(b, bare, nil, op.status)
		})
		for _, kind := range apitest.Stores() {
			b.Run(op.name+"/"+string(kind), func(b *testing.B) {
				e, cs := benchEnv(b, kind)
				if kind == apitest.DynamoDB {
					benchSubscriber(b, e)
				}
				req := op.setup(b, e)
				cs.reset()
				measureStatus(b, req, nil, op.status)
				cs.report(b)
				reportRSS(b)
			})
		}
	}
}

// benchSubscriber gives the vendor what the bill's vendor has, webhook
// subscriptions, so that a write's admission reads its subscription
// counts as they are then (an item, billed as one), but one whose type
// none of the measured writes' events has: their pending markers are
// left out (pipeline.Pending.Mark), and the bill puts back the share of
// events it has delivered (markedPending). No receiver is reached: nothing
// routes events on this store.
func benchSubscriber(b *testing.B, e *apitest.Env) {
	b.Helper()
	sub, _ := json.Marshal(map[string]any{"url": "https://hooks.example.com/bench", "event_types": []string{"webhook_subscription.failing"}})
	res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/webhook-subscriptions", sub, "bench-subscriber"))
	if err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		b.Fatalf("subscribe: %d", res.StatusCode)
	}
}

// BenchmarkCommit measures committing reservations, each made before the
// timer starts.
func BenchmarkCommit(b *testing.B) {
	for _, kind := range apitest.Stores() {
		b.Run(string(kind), func(b *testing.B) {
			e, cs := benchEnv(b, kind)
			conn, p := seedStock(b, e)
			ids := make([]string, b.N)
			for i := range ids {
				body, _ := json.Marshal(map[string]any{"connection_id": conn, "inventory_item_id": catalog.InventoryItemID(p, i%clients+1), "quantity": 1})
				res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-reservations", body, fmt.Sprintf("bench-commit-reserve-%d", i)))
				if err != nil {
					b.Fatal(err)
				}
				var r struct{ Data struct{ ID string } }
				json.NewDecoder(res.Body).Decode(&r)
				res.Body.Close()
				ids[i] = r.Data.ID
			}
			cs.reset()
			measure(b, func(_, i int) *http.Request {
				body := []byte(`{"expected_version":1}`)
				return benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-reservations/"+ids[i]+"/commit", body, fmt.Sprintf("bench-commit-%d", i))
			}, nil)
			cs.report(b)
		})
	}
}

func seedConnection(b *testing.B, e *apitest.Env) string {
	b.Helper()
	body, _ := json.Marshal(connectionBody("marketplace_a", destinationRoles))
	res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/connections", body, "bench-connection"))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var c connBody
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != 201 {
		b.Fatalf("seed connection: %d %v", res.StatusCode, err)
	}
	return c.Data.ID
}

func seedProduct(b *testing.B, e *apitest.Env, slug string) string {
	b.Helper()
	body, _ := json.Marshal(simpleProduct(slug))
	return seed(b, e, body, slug)
}

func seedVariable(b *testing.B, e *apitest.Env, slug string, n int) string {
	b.Helper()
	body, _ := json.Marshal(variableProduct(slug, n))
	return seed(b, e, body, slug)
}

func seed(b *testing.B, e *apitest.Env, body []byte, key string) string {
	b.Helper()
	res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/products", body, "seed-"+key))
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	var p productBody
	if err := json.NewDecoder(res.Body).Decode(&p); err != nil || res.StatusCode != 201 {
		b.Fatalf("seed: %d %v", res.StatusCode, err)
	}
	return p.Data.ID
}

// BenchmarkWebhookDelivery measures the embedded pipeline end to end: each
// op is an inventory adjustment whose inventory_item.adjusted event travels
// through the change log, the router, the durable queue and the delivery
// worker to a local receiver. It reports delivered events per second and
// the time from the adjustment's response to the event's arrival.
func BenchmarkWebhookDelivery(b *testing.B) {
	e := apitest.New(b, apitest.Options{Config: func(c *config.Config) {
		c.RateReads, c.RateWrites = 1<<30, 1<<30
		c.AllowPrivateWebhooks = true
	}})
	var mu sync.Mutex
	sent := map[int64]time.Time{}
	lat := make([]time.Duration, 0, b.N)
	arrived := make(chan struct{}, b.N+16)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Data struct{ Version int64 } `json:"data"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		now := time.Now()
		mu.Lock()
		if t0, ok := sent[ev.Data.Version]; ok {
			lat = append(lat, now.Sub(t0))
			delete(sent, ev.Data.Version)
			arrived <- struct{}{}
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	sub, _ := json.Marshal(map[string]any{"url": recv.URL + "/hook", "event_types": []string{"inventory_item.adjusted"}})
	if res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/webhook-subscriptions", sub, "bench-subscription")); err != nil || res.StatusCode != 201 {
		b.Fatalf("subscribe: %v", err)
	}
	item := catalog.InventoryItemID(seedProduct(b, e, "bench-webhooks"), 0)

	// The local server's background loop, without its one-second pause.
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			e.App.Drain(ctx)
			time.Sleep(time.Millisecond)
		}
	}()
	defer func() { stop(); <-done }()

	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		version := int64(i + 1)
		body, _ := json.Marshal(map[string]any{"target_on_hand": i % 1000, "expected_version": version})
		mu.Lock()
		sent[version+1] = time.Now()
		mu.Unlock()
		res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/inventory-items/"+item+"/adjustments", body, fmt.Sprintf("bench-hook-%d", i)))
		if err != nil || res.StatusCode != 200 {
			b.Fatalf("adjust %d: %v", i, err)
		}
		res.Body.Close()
	}
	timeout := time.After(2 * time.Minute)
	for n := 0; n < b.N; n++ {
		select {
		case <-arrived:
		case <-timeout:
			b.Fatalf("%d of %d events delivered", n, b.N)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	mu.Lock()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	mu.Unlock()
}

// BenchmarkSyncJob measures the sync worker: each op is one inventory sync
// job of 100 items on the connection that masters the Stock Pool. In
// "changed" every item is a new count, so every item writes its verdict
// with a stock effect in its own transaction; in "in-sync" every count
// agrees, so verdicts are written in batches. It reports items decided per
// second.
func BenchmarkSyncJob(b *testing.B) {
	cases := []struct {
		name  string
		count func(i int) int
		want  func(c syncCounts) int
	}{
		{"changed", func(i int) int { return i + 1 }, func(c syncCounts) int { return c.Updated }},
		{"in-sync", func(int) int { return 0 }, func(c syncCounts) int { return c.InSync }},
	}
	for _, kind := range apitest.Stores() {
		for _, tc := range cases {
			b.Run("inventory-100-"+tc.name+"/"+string(kind), func(b *testing.B) { benchSyncJob(b, kind, tc.count, tc.want) })
		}
	}
}

type syncCounts struct {
	Updated int
	InSync  int `json:"in_sync"`
}

func benchSyncJob(b *testing.B, kind apitest.StoreKind, count func(int) int, want func(syncCounts) int) {
	e, _ := benchEnv(b, kind)
	// The product first: a source connection masters the catalog too.
	product := seedVariable(b, e, "bench-sync", 100)
	body, _ := json.Marshal(connectionBody("marketplace_a", sourceRoles))
	res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/connections", body, "bench-sync-connection"))
	if err != nil || res.StatusCode != 201 {
		b.Fatalf("connection: %v", err)
	}
	var conn connBody
	json.NewDecoder(res.Body).Decode(&conn)
	res.Body.Close()
	w, err := e.App.Work(nil, queue.SyncJobs)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		items := make([]map[string]any, 100)
		for k := range items {
			items[k] = map[string]any{"inventory_item_id": catalog.InventoryItemID(product, k+1), "on_hand": count(i)}
		}
		body, _ := json.Marshal(map[string]any{"connection_id": conn.Data.ID, "kind": "inventory", "items": items})
		res, err := http.DefaultClient.Do(benchRequest(e, http.MethodPost, "/vendors/"+e.Vendor.ID+"/sync-jobs", body, fmt.Sprintf("bench-sync-%d", i)))
		if err != nil || res.StatusCode != http.StatusAccepted {
			b.Fatalf("submit %d: %v", i, err)
		}
		var job struct{ Data struct{ ID string } }
		json.NewDecoder(res.Body).Decode(&job)
		res.Body.Close()
		if err := w.Handle(context.Background(), jobMessage(b, syncjob.Rule, queue.SyncJobs, datamodel.SyncJobKey(e.Vendor.ID, job.Data.ID))); err != nil {
			b.Fatalf("work %d: %v", i, err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	var last struct {
		Data struct{ Counts syncCounts }
	}
	res, err = http.DefaultClient.Do(benchRequest(e, http.MethodGet, "/vendors/"+e.Vendor.ID+"/sync-jobs?limit=1&status=completed", nil, ""))
	if err != nil {
		b.Fatal(err)
	}
	var page struct{ Data []json.RawMessage }
	json.NewDecoder(res.Body).Decode(&page)
	res.Body.Close()
	if len(page.Data) == 0 || json.Unmarshal([]byte(`{"data":`+string(page.Data[0])+`}`), &last) != nil || want(last.Data.Counts) != 100 {
		b.Fatalf("the first job did not decide its 100 items as expected: %s", page.Data)
	}
	b.ReportMetric(float64(100*b.N)/elapsed.Seconds(), "items/s")
}

// BenchmarkServe measures the server's own work per read, without the
// network or clients: each request goes straight to ServeHTTP with a
// recorder, one at a time, so ns/op and allocs/op hardly move with other
// load on the machine (the steadier reading when comparing two versions).
func BenchmarkServe(b *testing.B) {
	for _, op := range benchOps[:3] {
		b.Run(op.name, func(b *testing.B) {
			e, _ := benchEnv(b, apitest.SQLite)
			req := op.setup(b, e)
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := range b.N {
				w := httptest.NewRecorder()
				e.Server.ServeHTTP(w, req(0, i))
				if w.Code != op.status {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
