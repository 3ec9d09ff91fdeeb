package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

func shirt(slug string) client.ProductCreate {
	return client.ProductCreate{Kind: "simple", Name: "Linen shirt", Slug: slug, Description: "Washed linen.", Price: 4500,
		Category: "apparel", Subcategory: "shirts", ImageURLs: []string{"https://cdn.example.com/shirt.jpg"},
		Options: map[string][]string{}, Features: []string{}, RelatedProductIDs: []string{}, WeightKg: 0.3}
}

// TestTour walks docs/tour.md's tour with the client; apitest checks every
// exchange against the OpenAPI document.
func TestTour(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			e := apitest.New(t, apitest.Options{Store: kind})
			ctx := context.Background()
			c := client.New(e.URL, e.Token)
			v := e.Vendor.ID

			vendors, _, err := c.ListVendors(ctx)
			if err != nil || len(vendors) != 1 || vendors[0].ID != v {
				t.Fatalf("vendors %+v, %v", vendors, err)
			}
			create := client.CreateProductRequest{VendorID: v, IdempotencyKey: "create-shirt-0001", Body: shirt("linen-shirt")}
			p, res, err := c.CreateProduct(ctx, create)
			if err != nil || p.Status != "draft" || p.Revision != 1 || res.Status != http.StatusCreated || res.Replayed || res.IdempotencyKey != "create-shirt-0001" {
				t.Fatalf("create: %+v %+v %v", p, res, err)
			}
			again, res, err := c.CreateProduct(ctx, create)
			if err != nil || again.ID != p.ID || !res.Replayed || res.Status != http.StatusCreated {
				t.Fatalf("replay: %+v %+v %v", again, res, err)
			}
			create.Body = shirt("other-shirt")
			if _, _, err := c.CreateProduct(ctx, create); !client.IsCode(err, client.ErrorCodeIdempotencyKeyReused) {
				t.Fatalf("reused key: %v", err)
			}
			// Without a key each call is its own write.
			_, first, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("keyless-1")})
			if err != nil || first.Replayed || first.IdempotencyKey == "" {
				t.Fatalf("keyless: %+v %v", first, err)
			}
			_, second, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("keyless-2")})
			if err != nil || second.Replayed || second.IdempotencyKey == first.IdempotencyKey {
				t.Fatalf("second keyless: %+v %v", second, err)
			}
			if p, _, err = c.PublishProduct(ctx, client.PublishProductRequest{VendorID: v, ProductID: p.ID, Body: client.ProductTransition{ExpectedRevision: p.Revision}}); err != nil || p.Status != "published" {
				t.Fatalf("publish: %+v %v", p, err)
			}
			var item client.InventoryItem
			for it, err := range c.AllInventoryItems(ctx, client.ListInventoryItemsRequest{VendorID: v}) {
				if err != nil {
					t.Fatal(err)
				}
				if it.ProductID == p.ID {
					item = it
				}
			}
			if item.ProductID != p.ID {
				t.Fatalf("item %+v", item)
			}
			item, _, err = c.AdjustInventoryItem(ctx, client.AdjustInventoryItemRequest{VendorID: v, InventoryItemID: item.ID,
				Body: client.Adjustment{TargetOnHand: 12, ExpectedVersion: item.Version}})
			if err != nil || item.OnHand != 12 || item.Available != 12 {
				t.Fatalf("adjust: %+v %v", item, err)
			}
			var roles client.ConnectionCreateRoles
			if err := roles.FromRolePreset(client.RolePresetServiceSource); err != nil {
				t.Fatal(err)
			}
			conn, _, err := c.CreateConnection(ctx, client.CreateConnectionRequest{VendorID: v,
				Body: client.ConnectionCreate{Provider: "store_plugin", ExternalAccountID: "shop-4411", DisplayName: "Web store", Roles: roles}})
			if err != nil || conn.Status != "active" {
				t.Fatalf("connection: %+v %v", conn, err)
			}
			r, _, err := c.CreateReservation(ctx, client.CreateReservationRequest{VendorID: v,
				Body: client.ReservationCreate{ConnectionID: conn.ID, InventoryItemID: item.ID, Quantity: 2, ExpiresInSeconds: new(int64(900))}})
			if err != nil || r.Status != "active" {
				t.Fatalf("reserve: %+v %v", r, err)
			}
			if r, _, err = c.CommitReservation(ctx, client.CommitReservationRequest{VendorID: v, ReservationID: r.ID, Body: client.VersionBody{ExpectedVersion: r.Version}}); err != nil || r.Status != "committed" {
				t.Fatalf("commit: %+v %v", r, err)
			}
			item, _, err = c.GetInventoryItem(ctx, client.GetInventoryItemRequest{VendorID: v, InventoryItemID: item.ID})
			if err != nil || item.OnHand != 10 || item.Reserved != 0 {
				t.Fatalf("after commit: %+v %v", item, err)
			}
			// Every event, across pages of two, once each (the fake clock
			// stands still, so their order within one instant is the ids').
			var types []string
			seen := map[string]bool{}
			for ev, err := range c.AllEvents(ctx, client.ListEventsRequest{VendorID: v, Limit: 2}) {
				if err != nil {
					t.Fatal(err)
				}
				if seen[ev.ID] {
					t.Fatalf("event %s twice", ev.ID)
				}
				seen[ev.ID] = true
				types = append(types, string(ev.Type))
			}
			want := []string{"reservation.committed", "reservation.created", "connection.created", "inventory_item.adjusted",
				"product.published", "product.created", "product.created", "product.created"}
			slices.Sort(types)
			slices.Sort(want)
			if !slices.Equal(types, want) {
				t.Fatalf("events %v, want %v", types, want)
			}
			// An event read by its type: the envelope's fields directly,
			// the data as the type's schema says.
			for ev, err := range c.AllEvents(ctx, client.ListEventsRequest{VendorID: v, Type: string(client.EventTypeInventoryItemAdjusted), Limit: 10}) {
				if err != nil {
					t.Fatal(err)
				}
				typed, err := ev.Value()
				adj, ok := typed.(client.InventoryItemAdjustedEvent)
				if err != nil || !ok || adj.Data.ProductID != p.ID || adj.Data.Version != 2 || ev.Resource.ID != item.ID {
					t.Fatalf("adjusted event %+v %+v %v", ev, typed, err)
				}
			}
			if _, _, err := c.GetProduct(ctx, client.GetProductRequest{VendorID: v, ProductID: "prd_missing"}); !client.IsCode(err, client.ErrorCodeNotFound) {
				t.Fatalf("missing product: %v", err)
			}
		})
	}
}

// TestWalkerAcrossPages: a walker yields every item once, in order, over
// as many pages as the limit makes, from the cursor the request gives;
// breaking out stops it asking for more.
func TestWalkerAcrossPages(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	ctx := context.Background()
	rec := &keyRecorder{}
	c := client.New(e.URL, e.Token, client.WithHTTPClient(&http.Client{Transport: rec}))
	v := e.Vendor.ID
	var made []string
	for i := range 7 {
		p, _, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt(fmt.Sprintf("walked-%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, p.ID)
	}
	walked := func(req client.ListProductsRequest, stopAfter int) (ids []string, pages int) {
		t.Helper()
		before := rec.count("GET")
		for p, err := range c.AllProducts(ctx, req) {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, p.ID)
			if len(ids) == stopAfter {
				break
			}
		}
		return ids, rec.count("GET") - before
	}
	// The list's order, read in one page.
	whole, _, err := c.ListProducts(ctx, client.ListProductsRequest{VendorID: v, Limit: 100})
	if err != nil || len(whole.Data) != len(made) || whole.Page.NextCursor != nil {
		t.Fatalf("one page: %+v %v", whole, err)
	}
	var inOrder []string
	for _, p := range whole.Data {
		inOrder = append(inOrder, p.ID)
	}
	if !slices.Equal(slices.Sorted(slices.Values(inOrder)), slices.Sorted(slices.Values(made))) {
		t.Fatalf("listed %v, made %v", inOrder, made)
	}
	made = inOrder
	ids, pages := walked(client.ListProductsRequest{VendorID: v, Limit: 2}, 0)
	if !slices.Equal(ids, made) || pages != 4 {
		t.Fatalf("walked %v in %d pages, want %v in 4", ids, pages, made)
	}
	if ids, pages = walked(client.ListProductsRequest{VendorID: v, Limit: 3}, 4); !slices.Equal(ids, made[:4]) || pages != 2 {
		t.Fatalf("stopped after 4: %v in %d pages", ids, pages)
	}
	first, _, err := c.ListProducts(ctx, client.ListProductsRequest{VendorID: v, Limit: 5})
	if err != nil || len(first.Data) != 5 || first.Page.NextCursor == nil {
		t.Fatalf("first page %+v %v", first, err)
	}
	if ids, _ = walked(client.ListProductsRequest{VendorID: v, Limit: 5, PageAfter: *first.Page.NextCursor}, 0); !slices.Equal(ids, made[5:]) {
		t.Fatalf("from the cursor: %v", ids)
	}
	// A failing page ends the walk with its error.
	var got error
	for _, err := range c.AllProducts(ctx, client.ListProductsRequest{VendorID: "ven_nobody"}) {
		got = err
	}
	if got == nil {
		t.Fatal("a walk of another vendor's list did not fail")
	}
}

// keyRecorder counts requests by method and keeps the Idempotency-Key
// and status of each.
type keyRecorder struct {
	mu   sync.Mutex
	seen []sent
}

type sent struct {
	method, path, key string
	status            int
}

func (r *keyRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, sent{req.Method, req.URL.Path, req.Header.Get("Idempotency-Key"), res.StatusCode})
	return res, nil
}

func (r *keyRecorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.seen {
		if s.method == method {
			n++
		}
	}
	return n
}

func (r *keyRecorder) all() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// TestRetriesHonourRetryAfter: a spent write window answers 429 with
// Retry-After; the client waits that long (here: moves the fake clock) and
// sends the same write, with the same Idempotency-Key, which then
// succeeds. A write without a key is not repeated.
func TestRetriesHonourRetryAfter(t *testing.T) {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.RateWrites = 1 }})
	ctx := context.Background()
	var waits []time.Duration
	rec := &keyRecorder{}
	c := client.New(e.URL, e.Token, client.WithHTTPClient(&http.Client{Transport: rec}), client.WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		e.Clock.Advance(d)
		return nil
	}))
	v := e.Vendor.ID
	first, _, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("first")})
	if err != nil {
		t.Fatal(err)
	}
	start := e.Clock.Now()
	p, res, err := c.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("second")})
	if err != nil || p.Slug != "second" || res.Attempts < 2 {
		t.Fatalf("second write: %+v %+v %v", p, res, err)
	}
	if len(waits) != res.Attempts-1 || waits[0] < time.Second || e.Clock.Now().Sub(start) > time.Minute+time.Second {
		t.Fatalf("waits %v for %d attempts", waits, res.Attempts)
	}
	sentKeys := rec.all()[1:]
	if len(sentKeys) != res.Attempts || sentKeys[0].status != http.StatusTooManyRequests {
		t.Fatalf("sent %+v", sentKeys)
	}
	for _, s := range sentKeys {
		if s.key != res.IdempotencyKey || s.key == "" {
			t.Fatalf("a retry carried key %q, the call %q", s.key, res.IdempotencyKey)
		}
	}
	// A write without an Idempotency-Key (publish) is not repeated: the
	// 429 comes back after one request.
	before := len(rec.all())
	_, res, err = c.PublishProduct(ctx, client.PublishProductRequest{VendorID: v, ProductID: first.ID, Body: client.ProductTransition{ExpectedRevision: first.Revision}})
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusTooManyRequests || res.Attempts != 1 || len(rec.all()) != before+1 {
		t.Fatalf("unkeyed write: %+v %v", res, err)
	}
	// Without retries the 429 comes back, with its Retry-After.
	none := client.New(e.URL, e.Token, client.WithRetries(0))
	_, _, err = none.CreateProduct(ctx, client.CreateProductRequest{VendorID: v, Body: shirt("third")})
	if !errors.As(err, &pe) || pe.Status != http.StatusTooManyRequests || pe.Code != client.ErrorCodeRateLimited || pe.RetryAfter < time.Second || pe.Op != "createProduct" {
		t.Fatalf("no retries: %v", err)
	}
}

// busy answers 503 with a Retry-After to its first n requests, then 200.
type busy struct {
	mu       sync.Mutex
	n        int
	after    string
	requests []*http.Request
}

func (b *busy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, r)
	if len(b.requests) <= b.n {
		w.Header().Set("Retry-After", b.after)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"type":"about:blank","title":"Unavailable","status":503,"code":"SERVICE_UNAVAILABLE","detail":"busy","request_id":"req_1"}`)
		return
	}
	fmt.Fprint(w, `{"data":{"id":"ven_1","name":"V","created_at":"2026-03-04T10:00:00Z"}}`)
}

// TestRetryBounds: a 503's Retry-After as an HTTP date is read against the
// client's clock; the retries stop at the bound; a wait longer than the
// cap, or a context ended while waiting, returns the 503.
func TestRetryBounds(t *testing.T) {
	ctx := context.Background()
	now := apitest.Start
	fake := clock.NewFake(now)
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		fake.Advance(d)
		return ctx.Err()
	}
	get := func(b *busy, opts ...client.Option) (*client.Response, error) {
		srv := httptest.NewServer(b)
		t.Cleanup(srv.Close)
		c := client.New(srv.URL, "tok", append([]client.Option{client.WithSleep(sleep), client.WithClock(fake)}, opts...)...)
		_, res, err := c.GetVendor(ctx, client.GetVendorRequest{VendorID: "ven_1"})
		return res, err
	}

	waits = nil
	b := &busy{n: 2, after: now.Add(7 * time.Second).Format(http.TimeFormat)}
	res, err := get(b)
	if err != nil || res.Attempts != 3 || len(waits) != 2 || waits[0] != 7*time.Second {
		t.Fatalf("HTTP-date Retry-After: %+v %v, waits %v", res, err, waits)
	}
	waits = nil
	b = &busy{n: 10, after: "2"}
	res, err = get(b, client.WithRetries(2))
	if !client.IsCode(err, "SERVICE_UNAVAILABLE") || res.Attempts != 3 || len(b.requests) != 3 || !slices.Equal(waits, []time.Duration{2 * time.Second, 2 * time.Second}) {
		t.Fatalf("bounded: %+v %v, waits %v", res, err, waits)
	}
	waits = nil
	b = &busy{n: 1, after: "120"}
	if res, err = get(b, client.WithMaxWait(time.Minute)); !client.IsCode(err, "SERVICE_UNAVAILABLE") || res.Attempts != 1 || len(waits) != 0 {
		t.Fatalf("over the cap: %+v %v", res, err)
	}
	waits = nil
	b = &busy{n: 1, after: "1"}
	cancelled, cancel := context.WithCancel(ctx)
	srv := httptest.NewServer(b)
	defer srv.Close()
	c := client.New(srv.URL, "tok", client.WithSleep(func(ctx context.Context, d time.Duration) error {
		cancel()
		return clock.Sleep(ctx, d)
	}))
	if _, _, err = c.GetVendor(cancelled, client.GetVendorRequest{VendorID: "ven_1"}); !errors.Is(err, context.Canceled) || !client.IsCode(err, "SERVICE_UNAVAILABLE") || len(b.requests) != 1 {
		t.Fatalf("cancelled while waiting: %v after %d requests", err, len(b.requests))
	}
	// A path parameter left empty is refused before anything is sent.
	if _, _, err = c.GetVendor(ctx, client.GetVendorRequest{}); err == nil || len(b.requests) != 1 {
		t.Fatalf("empty vendor_id: %v", err)
	}
}

func TestVerifyWebhook(t *testing.T) {
	const secret = "whsec_test_secret_for_the_client"
	body := []byte(`{"id":"evt_1","type":"product.created","created_at":"2026-03-04T10:00:30Z","vendor_id":"ven_1","resource":{"type":"product","id":"prd_1"},"data":{"revision":1,"inventory_item_ids":[]}}`)
	now := apitest.Start
	h := http.Header{}
	h.Set(signature.Header, signature.Sign(secret, now, body))
	h.Set("Moku-Event-Id", "evt_1")
	h.Set("Moku-Delivery-Id", "dlv_1")
	d, err := client.VerifyWebhook(h, body, secret, now.Add(time.Minute), 0)
	if err != nil || d.Event.Type != "product.created" || d.Event.Resource.ID != "prd_1" || d.DeliveryID != "dlv_1" {
		t.Fatalf("%+v %v", d, err)
	}
	tampered := append([]byte(nil), body...)
	tampered[10] = 'X'
	if _, err := client.VerifyWebhook(h, tampered, secret, now, 0); err == nil {
		t.Fatal("a tampered body verified")
	}
	if _, err := client.VerifyWebhook(h, body, "whsec_other", now, 0); err == nil {
		t.Fatal("another secret verified")
	}
	if _, err := client.VerifyWebhook(h, body, secret, now.Add(time.Hour), 0); err == nil {
		t.Fatal("a stale signature verified")
	}
	h.Set("Moku-Event-Id", "evt_2")
	if _, err := client.VerifyWebhook(h, body, secret, now, 0); err == nil {
		t.Fatal("a header naming another event verified")
	}
}

// FuzzVerifyWebhook: whatever a delivery's header and body hold, verifying
// never panics, and only a body signed with the secret verifies.
func FuzzVerifyWebhook(f *testing.F) {
	const secret = "whsec_fuzz"
	now := apitest.Start
	body := []byte(`{"id":"evt_1","type":"product.created","data":{}}`)
	f.Add(signature.Sign(secret, now, body), "evt_1", body)
	f.Add("t=1,v1=00", "", []byte("{"))
	f.Add("", "x", []byte(nil))
	f.Fuzz(func(t *testing.T, header, eventID string, body []byte) {
		h := http.Header{}
		h.Set(signature.Header, header)
		h.Set("Moku-Event-Id", eventID)
		d, err := client.VerifyWebhook(h, body, secret, now, 0)
		if err != nil {
			return
		}
		if signature.Verify(header, body, secret, now, 0) != nil || d.EventID != eventID {
			t.Fatalf("verified %q / %q without a valid signature", header, body)
		}
	})
}
