package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/client"
)

// The latency from an adjustment's response to the webhook receiver
// getting the event, on the local server over the embedded store: what a
// developer sees between a change and its delivery (issue #16).

// deliveries records when each (inventory item, version) event reached
// the loopback receiver.
type deliveries struct {
	mu   sync.Mutex
	at   map[string]time.Time
	more chan struct{}
}

func eventKey(item string, version int64) string { return fmt.Sprintf("%s@%d", item, version) }

func (d *deliveries) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	var ev struct {
		Resource struct{ ID string } `json:"resource"`
		Data     struct {
			Version int64 `json:"version"`
		} `json:"data"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &ev); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d.mu.Lock()
	k := eventKey(ev.Resource.ID, ev.Data.Version)
	if _, seen := d.at[k]; !seen {
		d.at[k] = now
	}
	d.mu.Unlock()
	select {
	case d.more <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait returns when the event keyed k arrived, or false after timeout.
func (d *deliveries) wait(k string, timeout time.Duration) (time.Time, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		at, ok := d.at[k]
		d.mu.Unlock()
		if ok {
			return at, true
		}
		select {
		case <-d.more:
		case <-deadline.C:
			return time.Time{}, false
		}
	}
}

// latencyServer is a local server with a webhook subscription to
// inventory_item.adjusted at a loopback receiver, and items to adjust.
type latencyServer struct {
	c      *client.Client
	vendor string
	items  []client.InventoryItem
	got    *deliveries
}

func startLatencyServer(b *testing.B, items int) *latencyServer {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", b.TempDir(), "--allow-private-webhooks",
			"--rate-writes", "10000000", "--rate-reads", "10000000"}, &out, io.Discard)
	}()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("serve: %v", err)
		}
	})
	listening := regexp.MustCompile(`listening on (http://\S+/v1)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := listening.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	demo := regexp.MustCompile(`vendor id: (\S+)\s+token:\s+(\S+)`).FindStringSubmatch(out.String())
	if base == "" || demo == nil {
		b.Fatalf("server did not start: %q", out.String())
	}
	s := &latencyServer{c: client.New(base, demo[2], client.WithRetries(0)), vendor: demo[1],
		got: &deliveries{at: map[string]time.Time{}, more: make(chan struct{}, 1)}}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	recv := &http.Server{Handler: s.got, ReadHeaderTimeout: 5 * time.Second}
	go recv.Serve(ln)
	b.Cleanup(func() { recv.Close() })
	if _, _, err := s.c.CreateWebhookSubscription(ctx, client.CreateWebhookSubscriptionRequest{VendorID: s.vendor, Body: client.WebhookSubscriptionCreate{
		URL: new("http://" + ln.Addr().String() + "/hook"), EventTypes: []string{"inventory_item.adjusted"}}}); err != nil {
		b.Fatal(err)
	}
	for i := range items {
		p, _, err := s.c.CreateProduct(ctx, client.CreateProductRequest{VendorID: s.vendor, Body: client.ProductCreate{Kind: "simple", Name: fmt.Sprintf("Latency %d", i),
			Slug: fmt.Sprintf("latency-%d", i), Description: "Latency benchmark.", Price: 1000, Category: "demo", Subcategory: "bench",
			ImageURLs: []string{"https://cdn.example.com/x.jpg"}, Options: map[string][]string{}, Features: []string{}, RelatedProductIDs: []string{}, WeightKg: 0.1}})
		if err != nil {
			b.Fatal(err)
		}
		for it, err := range s.c.AllInventoryItems(ctx, client.ListInventoryItemsRequest{VendorID: s.vendor, Limit: 100}) {
			if err != nil {
				b.Fatal(err)
			}
			if it.ProductID == p.ID {
				s.items = append(s.items, it)
			}
		}
	}
	if len(s.items) != items {
		b.Fatalf("made %d inventory items, want %d", len(s.items), items)
	}
	return s
}

// adjust adjusts item i by one unit and returns when its response came
// and the key of its event.
func (s *latencyServer) adjust(ctx context.Context, i int) (time.Time, string, error) {
	it := s.items[i]
	next, _, err := s.c.AdjustInventoryItem(ctx, client.AdjustInventoryItemRequest{VendorID: s.vendor, InventoryItemID: it.ID,
		Body: client.Adjustment{TargetOnHand: it.OnHand + 1, ExpectedVersion: it.Version}})
	if err != nil {
		return time.Time{}, "", err
	}
	at := time.Now()
	s.items[i] = next
	return at, eventKey(next.ID, next.Version), nil
}

// report prints the percentiles of the latencies as the benchmark's
// metrics (ms), beside how many deliveries were measured.
func report(b *testing.B, lat []time.Duration) {
	b.Helper()
	if len(lat) == 0 {
		b.Fatal("no delivery measured")
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(len(lat)), "deliveries")
}

// BenchmarkEventLatency measures, on the local server, the time from an
// inventory adjustment's response to the loopback webhook receiver getting
// its event: sparse (one adjustment at a time, 0-1 s apart at random) and
// sustained (four clients adjusting as fast as they can for three
// seconds, the rate they reached reported as events/s). Each run measures
// a fixed number of events whatever b.N is; the metrics are the
// percentiles in milliseconds.
func BenchmarkEventLatency(b *testing.B) {
	b.Run("sparse", func(b *testing.B) {
		s := startLatencyServer(b, 1)
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(1, 2))
		var lat []time.Duration
		for range b.N {
			for range 40 {
				time.Sleep(time.Duration(rng.Int64N(int64(time.Second))))
				sent, k, err := s.adjust(ctx, 0)
				if err != nil {
					b.Fatal(err)
				}
				at, ok := s.got.wait(k, 10*time.Second)
				if !ok {
					b.Fatalf("event %s not delivered in 10 s", k)
				}
				lat = append(lat, at.Sub(sent))
			}
		}
		report(b, lat)
	})
	b.Run("sustained", func(b *testing.B) {
		const clients = 4
		s := startLatencyServer(b, clients)
		ctx := context.Background()
		var lat []time.Duration
		var loaded time.Duration
		for range b.N {
			var mu sync.Mutex
			sent := map[string]time.Time{}
			var wg sync.WaitGroup
			start := time.Now()
			stop := start.Add(3 * time.Second)
			for i := range clients {
				wg.Go(func() {
					for time.Now().Before(stop) {
						at, k, err := s.adjust(ctx, i)
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						sent[k] = at
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			loaded += time.Since(start)
			for k, at := range sent {
				got, ok := s.got.wait(k, 30*time.Second)
				if !ok {
					b.Fatalf("event %s not delivered in 30 s", k)
				}
				lat = append(lat, got.Sub(at))
			}
		}
		b.ReportMetric(float64(len(lat))/loaded.Seconds(), "events/s")
		report(b, lat)
	})
}
