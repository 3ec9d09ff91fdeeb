package client_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/client"
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

			vendors, err := c.ListVendors(ctx)
			if err != nil || len(vendors) != 1 || vendors[0].ID != v {
				t.Fatalf("vendors %+v, %v", vendors, err)
			}
			keyed := client.WithIdempotencyKey(ctx, "create-shirt-0001")
			p, res, err := c.CreateProduct(keyed, v, shirt("linen-shirt"))
			if err != nil || p.Status != "draft" || p.Revision != 1 || res.Status != http.StatusCreated || res.Replayed {
				t.Fatalf("create: %+v %+v %v", p, res, err)
			}
			again, res, err := c.CreateProduct(keyed, v, shirt("linen-shirt"))
			if err != nil || again.ID != p.ID || !res.Replayed {
				t.Fatalf("replay: %+v %+v %v", again, res, err)
			}
			if _, _, err := c.CreateProduct(keyed, v, shirt("other-shirt")); !client.IsCode(err, "IDEMPOTENCY_KEY_REUSED") {
				t.Fatalf("reused key: %v", err)
			}
			if p, err = c.TransitionProduct(ctx, v, p.ID, "publish", p.Revision); err != nil || p.Status != "published" {
				t.Fatalf("publish: %+v %v", p, err)
			}
			var item client.InventoryItem
			for it, err := range c.InventoryItems(ctx, v) {
				if err != nil {
					t.Fatal(err)
				}
				item = it
			}
			if item.ProductID != p.ID {
				t.Fatalf("item %+v", item)
			}
			item, _, err = c.AdjustInventoryItem(ctx, v, item.ID, 12, item.Version)
			if err != nil || item.OnHand != 12 || item.Available != 12 {
				t.Fatalf("adjust: %+v %v", item, err)
			}
			var roles client.ConnectionCreateRoles
			if err := roles.FromRolePreset(client.RolePresetServiceSource); err != nil {
				t.Fatal(err)
			}
			conn, err := c.CreateConnection(ctx, v, client.ConnectionCreate{Provider: "store_plugin", ExternalAccountID: "shop-4411", DisplayName: "Web store", Roles: roles})
			if err != nil || conn.Status != "active" {
				t.Fatalf("connection: %+v %v", conn, err)
			}
			r, err := c.CreateReservation(ctx, v, client.ReservationCreate{ConnectionID: conn.ID, InventoryItemID: item.ID, Quantity: 2, ExpiresInSeconds: new(int64(900))})
			if err != nil || r.Status != "active" {
				t.Fatalf("reserve: %+v %v", r, err)
			}
			if r, err = c.TransitionReservation(ctx, v, r.ID, "commit", r.Version); err != nil || r.Status != "committed" {
				t.Fatalf("commit: %+v %v", r, err)
			}
			item, err = c.GetInventoryItem(ctx, v, item.ID)
			if err != nil || item.OnHand != 10 || item.Reserved != 0 {
				t.Fatalf("after commit: %+v %v", item, err)
			}
			// Every event, across pages of two, once each (the fake clock
			// stands still, so their order within one instant is the ids').
			var types []string
			seen := map[string]bool{}
			for ev, err := range c.Events(ctx, v, "", 2) {
				if err != nil {
					t.Fatal(err)
				}
				if seen[ev.ID] {
					t.Fatalf("event %s twice", ev.ID)
				}
				seen[ev.ID] = true
				types = append(types, string(ev.Type))
			}
			want := []string{"reservation.committed", "reservation.created", "connection.created", "inventory_item.adjusted", "product.published", "product.created"}
			slices.Sort(types)
			slices.Sort(want)
			if !slices.Equal(types, want) {
				t.Fatalf("events %v, want %v", types, want)
			}
			var adj struct {
				Version   int64  `json:"version"`
				ProductID string `json:"product_id"`
			}
			for ev, err := range c.Events(ctx, v, "inventory_item.adjusted", 10) {
				if err != nil || ev.DecodeData(&adj) != nil || adj.ProductID != p.ID || adj.Version != 2 {
					t.Fatalf("adjusted event %+v %+v %v", ev, adj, err)
				}
			}
			if _, err := c.GetProduct(ctx, v, "prd_missing"); !client.IsCode(err, "NOT_FOUND") {
				t.Fatalf("missing product: %v", err)
			}
		})
	}
}

// TestRetriesHonourRetryAfter: a spent write window answers 429 with
// Retry-After; the client waits that long (here: moves the fake clock) and
// the same write, with the same Idempotency-Key, then succeeds.
func TestRetriesHonourRetryAfter(t *testing.T) {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.RateWrites = 1 }})
	ctx := context.Background()
	var waits []time.Duration
	c := client.New(e.URL, e.Token, client.WithSleep(func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		e.Clock.Advance(d)
		return nil
	}))
	if _, _, err := c.CreateProduct(ctx, e.Vendor.ID, shirt("first")); err != nil {
		t.Fatal(err)
	}
	start := e.Clock.Now()
	p, _, err := c.CreateProduct(ctx, e.Vendor.ID, shirt("second"))
	if err != nil || p.Slug != "second" {
		t.Fatalf("second write: %+v %v", p, err)
	}
	if len(waits) == 0 || waits[0] < time.Second || e.Clock.Now().Sub(start) > time.Minute+time.Second {
		t.Fatalf("waits %v", waits)
	}
	// Without retries the 429 comes back, with its Retry-After.
	none := client.New(e.URL, e.Token, client.WithRetries(0))
	_, _, err = none.CreateProduct(ctx, e.Vendor.ID, shirt("third"))
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Status != http.StatusTooManyRequests || pe.Code != "RATE_LIMITED" || pe.RetryAfter < time.Second {
		t.Fatalf("no retries: %v", err)
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
