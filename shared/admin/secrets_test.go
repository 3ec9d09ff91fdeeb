package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// webhook-secrets.seal seals the secrets a store written before issue 29
// holds in the clear, keeping each subscription as the API shows it (its
// version too); store.check then opens them, and a second run has
// nothing left to seal.
func TestWebhookSecretsSeal(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	s.Secrets = envelope.New(envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key")))
	s.Webhooks.Secrets = s.Secrets
	h := handler{s}
	var v struct{ ID string }
	roundTrip(t, h.do(t, `{"action":"vendor.create","name":"Acme Goods","slug":"acme-goods"}`).Data, &v)

	now := s.Clock.Now()
	id := ids.Sortable("whsub", now)
	secret := webhook.NewSecret()
	doc, _ := json.Marshal(map[string]any{"id": id, "vendor_id": v.ID, "url": "https://hooks.example.com/a", "event_types": []string{"*"},
		"description": nil, "status": "enabled", "disabled_reason": nil, "disabled_at": nil, "version": 3,
		"created_at": now, "updated_at": now, "secret": secret})
	k := datamodel.SubscriptionKey(v.ID, id)
	if err := s.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 3, Data: doc}, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}

	var sealed admin.Sealed
	roundTrip(t, h.do(t, `{"action":"webhook-secrets.seal"}`).Data, &sealed)
	if sealed != (admin.Sealed{Vendors: 1, Sealed: 1}) {
		t.Fatalf("sealed %+v, want one secret of one vendor", sealed)
	}
	it, err := s.Store.Get(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(it.Data, []byte(secret)) || it.Version != 3 {
		t.Fatalf("after sealing, version %d: %s", it.Version, it.Data)
	}
	sub, err := webhook.Decode(it)
	if err != nil || sub.Version != 3 {
		t.Fatalf("decoded %+v, %v", sub, err)
	}
	if err := sub.Open(ctx, s.Secrets); err != nil || sub.Secret != secret {
		t.Fatalf("the sealed secret opens to %q, %v; want the one stored before", sub.Secret, err)
	}
	roundTrip(t, h.do(t, `{"action":"webhook-secrets.seal"}`).Data, &sealed)
	if sealed.Sealed != 0 {
		t.Fatalf("a second run sealed %d", sealed.Sealed)
	}

	var check admin.Check
	roundTrip(t, h.do(t, `{"action":"store.check"}`).Data, &check)
	if check.Vendors != 1 || check.Vendor == nil || check.Vendor.ID != v.ID || check.Subscriptions != 1 || check.SecretsOpened != 1 || check.CursorKeys != 0 {
		t.Fatalf("store.check: %+v", check)
	}
	if _, err := s.Store.Get(ctx, datamodel.CursorSigningKey()); err == nil {
		t.Fatal("store.check made cursor keys")
	}
}

// webhook-subscriptions.recount completes the per-type counts of a count
// item an older build wrote, from the vendor's subscriptions; a second
// run finds nothing to recount.
func TestWebhookSubscriptionsRecount(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	s.Webhooks.Secrets = envelope.New(envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key")))
	s.Webhooks.Policy = webhook.Policy{AllowLoopback: true}
	h := handler{s}
	var v struct{ ID string }
	roundTrip(t, h.do(t, `{"action":"vendor.create","name":"Acme Goods","slug":"acme-goods"}`).Data, &v)
	prep, err := s.Webhooks.PrepareCreate(ctx, v.ID, webhook.CreateInput{Destination: webhook.HTTPS("https://127.0.0.1/hook"), EventTypes: []string{"product.created"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store.Transact(ctx, prep.Ops...); err != nil {
		t.Fatal(err)
	}
	ck := datamodel.SubscriptionCountKey(v.ID)
	if err := s.Store.Transact(ctx, store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: 1, Nums: map[string]int64{datamodel.SubscriptionCountAttr: 1}}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	for run, want := range []admin.Recounted{{Vendors: 1, Recounted: 1}, {Vendors: 1}} {
		var got admin.Recounted
		roundTrip(t, h.do(t, `{"action":"webhook-subscriptions.recount"}`).Data, &got)
		if got != want {
			t.Fatalf("run %d: %+v, want %+v", run+1, got, want)
		}
	}
	it, err := s.Store.Get(ctx, ck)
	if err != nil || it.Nums[datamodel.SubscriptionTypedAttr] != 1 || it.Nums[datamodel.SubscriptionTypeAttr("product.created")] != 1 || it.Nums[datamodel.SubscriptionCountAttr] != 1 {
		t.Fatalf("recounted item %v, %v", it.Nums, err)
	}
}
