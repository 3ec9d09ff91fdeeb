package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// deletesSeen is the router's marker store, recording the keys it deletes.
type deletesSeen struct {
	store.Store
	mu      sync.Mutex
	deleted []store.Key
}

func (d *deletesSeen) Transact(ctx context.Context, ops ...store.Op) error {
	d.mu.Lock()
	for _, op := range ops {
		if op.Kind == store.OpDelete {
			d.deleted = append(d.deleted, op.Item.Key())
		}
	}
	d.mu.Unlock()
	return d.Store.Transact(ctx, ops...)
}

func (d *deletesSeen) take() []store.Key {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.deleted
	d.deleted = nil
	return out
}

// newestEvent is the vendor's newest event item, as stored.
func newestEvent(t *testing.T, e *apitest.Env) store.Item {
	t.Helper()
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.EventPrefix, Desc: true, Limit: 1})
	if err != nil || len(items) != 1 {
		t.Fatalf("newest event: %d, %v", len(items), err)
	}
	return items[0]
}

// eventTypeOf is the type of a stored event.
func eventTypeOf(t *testing.T, it store.Item) string {
	t.Helper()
	var ev struct{ Type string }
	if err := json.Unmarshal(it.Data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Type
}

// wantMarked checks that the event it was committed with its pending
// marker, or without one and flagged so.
func wantMarked(t *testing.T, e *apitest.Env, it store.Item, marked bool, why string) {
	t.Helper()
	_, err := e.Store.Get(context.Background(), datamodel.PendingKey(it.Key()))
	hasMarker := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	flagged := it.Nums[datamodel.EventUnmarkedAttr] == 1
	if hasMarker != marked || flagged == marked {
		t.Fatalf("%s: %s event %s has a marker: %v, flagged unmarked: %v; want marked: %v", why, eventTypeOf(t, it), it.SK, hasMarker, flagged, marked)
	}
}

// TestPendingMarkersOnlyWhereASubscriptionCouldReceive: on DynamoDB Local
// with the deployed transaction hook, a write's event gets its pending
// marker only when the vendor's subscription counts, read in the write's
// admission, count a subscription to its type or to every type; an event
// none could receive is flagged instead, the router still routes it (to a
// subscription made after the write), and deletes no marker for it. A
// count item without the completeness flag (an older build's) marks
// every event, and keeps lacking the flag.
func TestPendingMarkersOnlyWhereASubscriptionCouldReceive(t *testing.T) {
	if !slices.Contains(apitest.Stores(), apitest.DynamoDB) {
		t.Skip("DynamoDB Local is not among the stores")
	}
	seen := &deletesSeen{}
	e := apitest.New(t, apitest.Options{Store: apitest.DynamoDB, MarkPending: true, WebhookResolver: publicHosts,
		Config: func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, 1<<20 },
		AppOptions: []app.Option{app.WithPending(func(s store.Store) store.Store {
			seen.Store = s
			return seen
		})}})
	e.Clock.Tick(time.Millisecond)
	if r, _ := apitest.Create[struct{}](t, e, "/vendors/"+e.Vendor.ID+"/products", "marks-product", simpleProduct("marks")); r.Status != 201 {
		t.Fatalf("create product: %d %s", r.Status, r.Body)
	}
	wantMarked(t, e, newestEvent(t, e), false, "a product created by a vendor without subscriptions")
	item := firstItem(t, e)
	version := int64(1)
	adjusted := func(why string, marked bool) store.Item {
		t.Helper()
		r := adjust(e, item, fmt.Sprintf("marks-adjust-%d", version), map[string]any{"target_on_hand": version, "expected_version": version})
		if r.Status != 200 {
			t.Fatalf("adjust: %d %s", r.Status, r.Body)
		}
		version++
		ev := newestEvent(t, e)
		if typ := eventTypeOf(t, ev); typ != "inventory_item.adjusted" {
			t.Fatalf("newest event %s", typ)
		}
		wantMarked(t, e, ev, marked, why)
		return ev
	}
	early := adjusted("no subscription", false)

	sub := mustSubscribe(t, e, "https://hooks.example.com/marks", "inventory_item.adjusted")
	wantMarked(t, e, newestEvent(t, e), true, "the event of the transaction that adds the first subscription")
	late := adjusted("a subscription to the type", true)

	// The router routes the flagged event to the subscription made after
	// its write, and deletes no marker for it; the marked one's marker it
	// deletes.
	q := &whOutbox{}
	r := e.App.Router(q)
	seen.take()
	for _, ev := range []store.Item{early, late} {
		if n, err := r.Route(context.Background(), []store.Change{{Kind: store.Inserted, Key: ev.Key(), New: &ev}}); n != 1 || err != nil {
			t.Fatalf("route %s: %d, %v", ev.SK, n, err)
		}
		var sent []string
		for _, m := range q.take() {
			var msg webhook.Message
			if m.Queue == queue.WebhookDeliveries && json.Unmarshal(m.Body, &msg) == nil {
				sent = append(sent, msg.SubscriptionID+" "+msg.EventID)
			}
		}
		if want := sub.Data.ID + " " + ev.SK[len(datamodel.EventPrefix):]; !slices.Equal(sent, []string{want}) {
			t.Fatalf("routed %s: deliveries %v, want %s", ev.SK, sent, want)
		}
	}
	if got := seen.take(); !slices.Equal(got, []store.Key{datamodel.PendingKey(late.Key())}) {
		t.Fatalf("the router deleted %v, want only the marked event's marker", got)
	}
	if _, err := e.Store.Get(context.Background(), datamodel.PendingKey(late.Key())); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the routed event's marker: %v", err)
	}

	patch := func(types ...string) {
		t.Helper()
		var cur subscriptionBody
		e.Get(subsPath(e)+"/"+sub.Data.ID).JSON(t, &cur)
		if r := patchSubscription(e, sub.Data.ID, map[string]any{"event_types": types, "expected_version": cur.Data.Version}); r.Status != 200 {
			t.Fatalf("patch %v: %d %s", types, r.Status, r.Body)
		}
		wantMarked(t, e, newestEvent(t, e), true, "the event of the transaction that changes a subscription's types")
	}
	patch("product.updated")
	adjusted("a subscription to another type only", false)
	patch("*")
	adjusted("a subscription to every type", true)
	if r := e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + sub.Data.ID, Token: e.Token}); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	adjusted("the last subscription deleted", false)

	// A count item an older build wrote (no per-type counts, no flag).
	ck := datamodel.SubscriptionCountKey(e.Vendor.ID)
	if err := e.Store.Transact(context.Background(), store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: 1, Nums: map[string]int64{datamodel.SubscriptionCountAttr: 0}}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	adjusted("counts of an older build", true)
	mustSubscribe(t, e, "https://hooks.example.com/other", "product.updated")
	if it, err := e.Store.Get(context.Background(), ck); err != nil || it.Nums[datamodel.SubscriptionTypedAttr] != 0 {
		t.Fatalf("an older build's count item after a create: %v, %v", it.Nums, err)
	}
	adjusted("counts of an older build, a subscription to another type", true)
}

// subscriptionCounts checks the vendor's count item against its
// subscriptions as stored: their number, and per event type those whose
// types include it (any status).
func subscriptionCounts(t *testing.T, e *apitest.Env, why string) {
	t.Helper()
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.SubscriptionPrefix, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{datamodel.SubscriptionTypedAttr: 1, datamodel.SubscriptionCountAttr: int64(len(items))}
	for _, it := range items {
		s, err := webhook.Decode(it)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range s.EventTypes {
			want[datamodel.SubscriptionTypeAttr(typ)]++
		}
	}
	it, err := e.Store.Get(context.Background(), datamodel.SubscriptionCountKey(e.Vendor.ID))
	if err != nil {
		t.Fatal(err)
	}
	got := maps.Clone(it.Nums)
	maps.DeleteFunc(got, func(k string, v int64) bool { return v == 0 && k != datamodel.SubscriptionCountAttr })
	if !maps.Equal(got, want) {
		t.Fatalf("%s: counts %v, want %v", why, got, want)
	}
}

// TestSubscriptionCountsFollowEveryChange: the per-type counts beside the
// subscription count follow racing creates, type changes and deletes
// (a type change racing a delete of the same subscription included).
func TestSubscriptionCountsFollowEveryChange(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		typesOf := [][]string{{"*"}, {"product.created"}, {"inventory_item.adjusted", "product.created"}, {"reservation.created"}}
		const n = 12
		rs := apitest.Race(n, func(i int) *apitest.Resp {
			return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: subsPath(e), Token: e.Token,
				Body:    map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i), "event_types": typesOf[i%len(typesOf)]},
				Headers: map[string]string{"Idempotency-Key": fmt.Sprintf("counts-%02d", i)}})
		})
		if s := apitest.Statuses(rs); s[201]+s[409] != n || s[201] == 0 {
			t.Fatalf("statuses %v, want 201 and 409 only", s)
		}
		subscriptionCounts(t, e, "after racing creates")

		var subs []subscriptionBody
		for _, r := range rs {
			if r.Status == 201 {
				var s subscriptionBody
				r.JSON(t, &s)
				subs = append(subs, s)
			}
		}
		// Each subscription's types change while it is deleted.
		rs = apitest.Race(2*len(subs), func(i int) *apitest.Resp {
			s := subs[i/2]
			if i%2 == 0 {
				return e.DoRetrying(apitest.Req{Method: http.MethodPatch, Path: subsPath(e) + "/" + s.Data.ID, Token: e.Token,
					Body: map[string]any{"event_types": typesOf[(i/2+1)%len(typesOf)], "expected_version": s.Data.Version}})
			}
			if i%4 == 3 {
				return e.DoRetrying(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + s.Data.ID, Token: e.Token})
			}
			return &apitest.Resp{Status: 204}
		})
		for _, r := range rs {
			if r.Status != 200 && r.Status != 204 && r.Status != 404 && r.Status != 409 {
				t.Fatalf("type change or delete: %d %s", r.Status, r.Body)
			}
		}
		subscriptionCounts(t, e, "after type changes racing deletes")
		for _, s := range subs {
			e.Do(apitest.Req{Method: http.MethodDelete, Path: subsPath(e) + "/" + s.Data.ID, Token: e.Token})
		}
		subscriptionCounts(t, e, "after every delete")
	})
}
