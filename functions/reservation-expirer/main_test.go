package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestExpiresDueHolds runs the handler as the schedule does, before and
// after a hold ends, on the embedded store and on DynamoDB Local.
func TestExpiresDueHolds(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		fake := clocktest.Fake(2026, 1, 1, 0, 0, 0)
		s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(fake.Now))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		expiresDueHolds(t, s, fake)
	})
	t.Run("dynamodb", func(t *testing.T) {
		fake := clocktest.Fake(2026, 1, 1, 0, 0, 0)
		client, table := ddbtest.NewTable(t)
		expiresDueHolds(t, dynamodb.New(client, table, dynamodb.WithClock(fake.Now)), fake)
	})
}

func expiresDueHolds(t *testing.T, s store.Store, fake *clock.Fake) {
	ctx := context.Background()
	tx := func(ops []store.Op, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	v, err := account.Service{Store: s, Clock: fake}.Create(ctx, "Acme", "acme")
	if err != nil {
		t.Fatal(err)
	}
	product, err := catalog.Service{Store: s, Clock: fake, Authority: catalog.ServiceOwned{}}.PrepareCreate(ctx, v.ID, catalog.Input{
		Kind: catalog.KindSimple, Name: "Mug", Slug: "mug", Options: map[string][]string{}})
	p := product.View
	tx(product.Ops, err)
	tx([]store.Op{store.Add(datamodel.ProductKey(v.ID, p.ID), map[string]int64{datamodel.OnHandAttr(0): 5, datamodel.AvailableAttr(0): 5}, 0, store.Cond{})}, nil)
	conn, err := connection.Service{Store: s, Clock: fake}.PrepareCreate(ctx, v.ID, connection.CreateInput{
		Provider: "marketplace_a", ExternalAccountID: "a", DisplayName: "A", Roles: serviceSource()})
	tx(conn.Ops, err)
	hold, err := reservation.Service{Store: s, Clock: fake}.PrepareCreate(ctx, v.ID, reservation.CreateInput{
		ConnectionID: conn.View.ID, InventoryItemID: catalog.InventoryItemID(p.ID, 0), Quantity: 2, Hold: time.Minute})
	tx(hold.Ops, err)

	h, err := newHandler(ctx, config.Default(), app.WithStore(s), app.WithClock(fake))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := h(ctx); err != nil || res.Expired != 0 {
		t.Fatalf("before the hold ends: %+v %v", res, err)
	}
	// An entry that cannot be expired, due first in the vendor's shard, is
	// counted and skipped: it does not stop the run.
	broken := store.Item{PK: datamodel.ExpiryPartition(v.ID), SK: fmt.Sprintf("%012d#%s#res_broken", fake.Now().Unix(), v.ID), Version: 1, Data: []byte("{")}
	tx([]store.Op{store.Put(broken, store.Cond{})}, nil)
	fake.Advance(time.Minute)
	if res, err := h(ctx); err != nil || res.Expired != 1 || res.Failed != 1 {
		t.Fatalf("after the hold ends: %+v %v", res, err)
	}
	it, err := s.Get(ctx, datamodel.ProductKey(v.ID, p.ID))
	if err != nil {
		t.Fatal(err)
	}
	if it.Nums[datamodel.ReservedAttr(0)] != 0 || it.Nums[datamodel.AvailableAttr(0)] != 5 {
		t.Fatalf("buckets after expiry: %v", it.Nums)
	}
}

func serviceSource() connection.Roles {
	r, _ := connection.Preset("service_source")
	return r
}
