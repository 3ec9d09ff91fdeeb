package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/syncjob"
)

type syncItem struct {
	Resource struct {
		Type, ID string
	}
	VariationID   *string                    `json:"variation_id"`
	Status        string                     `json:"status"`
	ChannelValue  map[string]json.RawMessage `json:"channel_value"`
	ServiceValue  map[string]json.RawMessage `json:"service_value"`
	ConflictID    *string                    `json:"conflict_id"`
	StockEffectID *string                    `json:"stock_effect_id"`
	Code, Detail  *string
}

type syncBody struct {
	Data struct {
		ID           string
		VendorID     string `json:"vendor_id"`
		ConnectionID string `json:"connection_id"`
		Kind, Status string
		Counts       map[string]int
		Items        []syncItem
		StartedBy    struct{ Type, ID string } `json:"started_by"`
		CreatedAt    string                    `json:"created_at"`
		StartedAt    *string                   `json:"started_at"`
		CompletedAt  *string                   `json:"completed_at"`
	}
}

var sourceRoles = map[string]string{"catalog": "source", "base_price": "source", "inventory": "source",
	"order_ingress": "enabled", "external_order_fulfillment": "moku"}

// syncFixture: one variable product of three variations with stock 10, 5
// and 10, the last with 6 units held by an order of the destination; a
// connection mastering catalog, base price and stock, and a destination.
type syncFixture struct {
	e            *apitest.Env
	kind         apitest.StoreKind
	master, dest string
	product      string
	variations   []string
	items        []string
}

func newSyncFixture(t *testing.T, kind apitest.StoreKind) syncFixture {
	t.Helper()
	e := catalogEnv(t, kind)
	p := mustCreate(t, e, "sync-product-1", variableProduct("sync-stock", 3))
	f := syncFixture{e: e, kind: kind, product: p.Data.ID}
	for _, v := range p.Data.Variations {
		f.variations = append(f.variations, v.ID)
	}
	var inv struct{ Data []struct{ ID string } }
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items?limit=10").JSON(t, &inv)
	for i, it := range inv.Data {
		f.items = append(f.items, it.ID)
		if r := adjust(e, it.ID, fmt.Sprintf("sync-adjust-%d", i), map[string]any{"target_on_hand": []int{10, 5, 10}[i], "expected_version": 1}); r.Status != 200 {
			t.Fatalf("stock: %d %s", r.Status, r.Body)
		}
	}
	f.master = mustConnection(t, e, "sync-conn-master", connectionBody("marketplace_a", sourceRoles)).Data.ID
	f.dest = mustConnection(t, e, "sync-conn-dest", connectionBody("marketplace_b", destinationRoles)).Data.ID
	mustXO(t, importXO(e, "sync-xo-1", f.dest, "SYNC-1", xoLine("a", f.items[2], 6)), 201, "reserved")
	return f
}

func syncSubmit(e *apitest.Env, token, key string, body any) *apitest.Resp {
	return submitJob(e, "sync-jobs", token, key, body)
}

func mustSync(t *testing.T, r *apitest.Resp) syncBody {
	t.Helper()
	return accepted[syncBody](t, r)
}

func stockItems(pairs ...any) []map[string]any {
	var out []map[string]any
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, map[string]any{"inventory_item_id": pairs[i], "on_hand": pairs[i+1]})
	}
	return out
}

func getSync(t *testing.T, e *apitest.Env, id string) syncBody {
	t.Helper()
	return getJob[syncBody](t, e, "sync-jobs", id)
}

// syncMessage is the message the pipeline rule makes for job id.
func syncMessage(t *testing.T, e *apitest.Env, id string) queue.Message {
	t.Helper()
	return jobMessage(t, syncjob.Rule, queue.SyncJobs, datamodel.SyncJobKey(e.Vendor.ID, id))
}

// syncWork lets job id run: the embedded pipeline on the embedded store,
// the app's worker with the rule's message on DynamoDB.
func syncWork(t *testing.T, f syncFixture, id string) {
	t.Helper()
	if f.kind == apitest.SQLite {
		if err := f.e.App.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := handleWith(t, f.e, queue.SyncJobs, syncMessage(t, f.e, id)); err != nil {
		t.Fatal(err)
	}
}

func syncStatuses(b syncBody) []string {
	var out []string
	for _, it := range b.Data.Items {
		out = append(out, it.Status)
	}
	return out
}

func wantSyncCounts(t *testing.T, b syncBody, want map[string]int) {
	t.Helper()
	full := map[string]int{"total": len(b.Data.Items), "in_sync": 0, "updated": 0, "channel_stale": 0, "conflicts": 0, "failed": 0, "pending": 0, "not_attempted": 0}
	for k, v := range want {
		full[k] = v
	}
	if len(b.Data.Counts) != len(full) {
		t.Fatalf("counts %v, want exactly %v", b.Data.Counts, full)
	}
	for k, v := range full {
		if b.Data.Counts[k] != v {
			t.Fatalf("counts %v, want %v", b.Data.Counts, full)
		}
	}
}

func rawEq(t *testing.T, m map[string]json.RawMessage, want string) {
	t.Helper()
	got, _ := json.Marshal(m)
	if string(got) != want {
		t.Fatalf("value %s, want %s", got, want)
	}
}

func openConflicts(t *testing.T, e *apitest.Env, connID string) int64 {
	t.Helper()
	it, err := e.Store.Get(context.Background(), datamodel.ConnectionKey(e.Vendor.ID, connID))
	if err != nil {
		t.Fatal(err)
	}
	return it.Nums[datamodel.OpenConflictsAttr]
}

func syncEvents(t *testing.T, e *apitest.Env) []event.Event {
	t.Helper()
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.EventPrefix, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for _, it := range items {
		ev, err := event.Decode(it)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == event.SyncJobCompleted {
			out = append(out, ev)
		}
	}
	return out
}

// TestSyncJobInventory: on the connection that masters stock, a higher
// count moves on_hand with a sync_job effect, an equal one is in sync and
// one below the reserved units opens a stock_mismatch conflict, which then
// blocks the connection's role change; a second report of the same
// mismatch links the same conflict. On a destination, a count other than
// the available units is channel_stale, and nothing moves.
func TestSyncJobInventory(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		body := map[string]any{"connection_id": f.master, "kind": "inventory", "items": stockItems(f.items[0], 12, f.items[1], 5, f.items[2], 3)}
		r := syncSubmit(e, e.Token, "sync-inv-0001", body)
		ack := mustSync(t, r)
		d := ack.Data
		if !strings.HasPrefix(d.ID, "syn_") || d.VendorID != e.Vendor.ID || d.ConnectionID != f.master || d.Kind != "inventory" || d.Status != "queued" ||
			d.StartedBy.Type != "token" || !strings.HasPrefix(d.StartedBy.ID, "tok_") || d.StartedAt != nil || d.CompletedAt != nil {
			t.Fatalf("acknowledgement: %s", r.Body)
		}
		wantSyncCounts(t, ack, map[string]int{"pending": 3})
		for _, k := range []string{`"service_value":null`, `"conflict_id":null`, `"stock_effect_id":null`, `"variation_id":null`, `"channel_value":{"on_hand":12}`} {
			if !bytes.Contains(r.Body, []byte(k)) {
				t.Fatalf("acknowledgement lacks %s: %s", k, r.Body)
			}
		}

		syncWork(t, f, d.ID)
		got := getSync(t, e, d.ID)
		if got.Data.Status != "completed" || got.Data.CompletedAt == nil || !slices.Equal(syncStatuses(got), []string{"updated", "in_sync", "conflict"}) {
			t.Fatalf("after work: %s %v", got.Data.Status, syncStatuses(got))
		}
		wantSyncCounts(t, got, map[string]int{"updated": 1, "in_sync": 1, "conflicts": 1})
		up, same, low := got.Data.Items[0], got.Data.Items[1], got.Data.Items[2]
		rawEq(t, up.ServiceValue, `{"available":10,"on_hand":10,"reserved":0}`)
		rawEq(t, same.ServiceValue, `{"available":5,"on_hand":5,"reserved":0}`)
		rawEq(t, low.ServiceValue, `{"available":4,"on_hand":10,"reserved":6}`)
		if up.StockEffectID == nil || same.StockEffectID != nil || low.StockEffectID != nil || up.ConflictID != nil || low.ConflictID == nil {
			t.Fatalf("items: %+v", got.Data.Items)
		}
		if oh, _ := itemState(t, e, f.items[0]); oh != 12 {
			t.Fatalf("on_hand %d, want 12", oh)
		}
		if oh, _ := itemState(t, e, f.items[2]); oh != 10 {
			t.Fatalf("the conflict moved stock: on_hand %d", oh)
		}
		list := effects(t, e, f.items[0])
		last := list[len(list)-1]
		if last.ID != *up.StockEffectID || last.Cause.Type != "sync_job" || last.Cause.Action != "reconciled" || last.Cause.ID == nil || *last.Cause.ID != d.ID ||
			last.Cause.RecordKey == nil || *last.Cause.RecordKey != f.items[0] || last.OnHandDelta != 2 || last.RequestID != nil {
			t.Fatalf("effect: %+v", last)
		}
		if n := len(effects(t, e, f.items[1])); n != 1 {
			t.Fatalf("the in-sync item has %d effects, want only its adjustment", n)
		}

		// The conflict, as the conflict service reads it.
		c, err := conflict.Service{Store: e.Store, Clock: e.Clock}.Get(context.Background(), e.Vendor.ID, *low.ConflictID)
		if err != nil {
			t.Fatal(err)
		}
		if c.Type != conflict.TypeStockMismatch || c.Status != conflict.StatusOpen || c.ConnectionID == nil || *c.ConnectionID != f.master ||
			c.Resource != (conflict.Resource{Type: "inventory_item", ID: f.items[2]}) || c.Source != (conflict.Source{Type: "sync_job", ID: d.ID}) ||
			string(c.ServiceValue) != `{"on_hand":10,"reserved":6,"available":4}` || string(c.ChannelValue) != `{"on_hand":3}` {
			t.Fatalf("conflict: %+v", c)
		}
		if n := openConflicts(t, e, f.master); n != 1 {
			t.Fatalf("open conflicts on the connection: %d", n)
		}
		roles := map[string]any{"expected_version": 1, "roles": destinationRoles}
		e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + f.master + "/roles", Token: e.Token, Body: roles}).WantProblem(t, 409, "CONNECTION_BUSY")

		// The same mismatch again links the open conflict.
		again := mustSync(t, syncSubmit(e, e.Token, "sync-inv-0002", map[string]any{"connection_id": f.master, "kind": "inventory",
			"items": stockItems(f.items[2], 3, f.items[0], 12)}))
		syncWork(t, f, again.Data.ID)
		got2 := getSync(t, e, again.Data.ID)
		if !slices.Equal(syncStatuses(got2), []string{"conflict", "in_sync"}) || *got2.Data.Items[0].ConflictID != *low.ConflictID {
			t.Fatalf("second job: %v %+v", syncStatuses(got2), got2.Data.Items[0])
		}
		if n := openConflicts(t, e, f.master); n != 1 {
			t.Fatalf("open conflicts after the second job: %d", n)
		}

		// A destination: compared with what it should show, available.
		before := len(effects(t, e, f.items[1]))
		dj := mustSync(t, syncSubmit(e, e.Token, "sync-inv-0003", map[string]any{"connection_id": f.dest, "kind": "inventory",
			"items": stockItems(f.items[0], 12, f.items[1], 4, f.items[2], 4)}))
		syncWork(t, f, dj.Data.ID)
		gotD := getSync(t, e, dj.Data.ID)
		if !slices.Equal(syncStatuses(gotD), []string{"in_sync", "channel_stale", "in_sync"}) {
			t.Fatalf("destination: %v", syncStatuses(gotD))
		}
		wantSyncCounts(t, gotD, map[string]int{"in_sync": 2, "channel_stale": 1})
		stale := gotD.Data.Items[1]
		rawEq(t, stale.ServiceValue, `{"available":5}`)
		if stale.StockEffectID != nil || stale.ConflictID != nil || stale.Detail == nil {
			t.Fatalf("stale item: %+v", stale)
		}
		if oh, _ := itemState(t, e, f.items[1]); oh != 5 || len(effects(t, e, f.items[1])) != before {
			t.Fatalf("a destination's report moved stock")
		}

		// One completion event per job, with the counts.
		evs := syncEvents(t, e)
		if len(evs) != 3 {
			t.Fatalf("%d sync_job.completed events, want 3", len(evs))
		}
		var data struct {
			ConnectionID string `json:"connection_id"`
			Kind, Status string
			Counts       map[string]int
		}
		raw, _ := json.Marshal(evs[0].Data)
		json.Unmarshal(raw, &data)
		if evs[0].Resource.ID != d.ID || data.ConnectionID != f.master || data.Kind != "inventory" || data.Status != "completed" || data.Counts["updated"] != 1 || data.Counts["conflicts"] != 1 {
			t.Fatalf("event: %+v %s", evs[0].Resource, evs[0].Data)
		}
	})
}

// TestSyncJobPriceAndCatalog: the master's differing price or title is a
// conflict (the service's product is not rewritten); a destination's is
// channel_stale with the service's value.
func TestSyncJobPriceAndCatalog(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		price := func(conn, key string, items ...map[string]any) syncBody {
			b := mustSync(t, syncSubmit(e, e.Token, key, map[string]any{"connection_id": conn, "kind": "price", "items": items}))
			syncWork(t, f, b.Data.ID)
			return getSync(t, e, b.Data.ID)
		}
		m := price(f.master, "sync-price-0001",
			map[string]any{"product_id": f.product, "variation_id": nil, "price": 4500},
			map[string]any{"product_id": f.product, "variation_id": f.variations[0], "price": 3999},
			map[string]any{"product_id": f.product, "variation_id": f.variations[1], "price": 4501},
			map[string]any{"product_id": "prd_missing", "price": 1})
		if !slices.Equal(syncStatuses(m), []string{"in_sync", "conflict", "in_sync", "failed"}) || m.Data.Status != "completed" {
			t.Fatalf("master prices: %s %v", m.Data.Status, syncStatuses(m))
		}
		wantSyncCounts(t, m, map[string]int{"in_sync": 2, "conflicts": 1, "failed": 1})
		if it := m.Data.Items[1]; *it.VariationID != f.variations[0] || it.ConflictID == nil {
			t.Fatalf("variation item: %+v", it)
		} else {
			rawEq(t, it.ServiceValue, `{"price":4500}`)
			c, err := conflict.Service{Store: e.Store, Clock: e.Clock}.Get(context.Background(), e.Vendor.ID, *it.ConflictID)
			if err != nil || c.Type != conflict.TypePriceMismatch || c.Resource.ID != f.product {
				t.Fatalf("price conflict: %+v %v", c, err)
			}
		}
		if it := m.Data.Items[3]; *it.Code != "NOT_FOUND" || it.ServiceValue != nil {
			t.Fatalf("missing product: %+v", it)
		}
		d := price(f.dest, "sync-price-0002", map[string]any{"product_id": f.product, "variation_id": f.variations[2], "price": 1})
		if !slices.Equal(syncStatuses(d), []string{"channel_stale"}) {
			t.Fatalf("destination price: %v", syncStatuses(d))
		}
		rawEq(t, d.Data.Items[0].ServiceValue, `{"price":4502}`)

		cat := func(conn, key string, items ...map[string]any) syncBody {
			b := mustSync(t, syncSubmit(e, e.Token, key, map[string]any{"connection_id": conn, "kind": "catalog", "items": items}))
			syncWork(t, f, b.Data.ID)
			return getSync(t, e, b.Data.ID)
		}
		mc := cat(f.master, "sync-cat-0001", map[string]any{"product_id": f.product, "name": "Washed linen shirt", "catalog_status": "active"})
		if !slices.Equal(syncStatuses(mc), []string{"conflict"}) {
			t.Fatalf("master catalog: %v", syncStatuses(mc))
		}
		rawEq(t, mc.Data.Items[0].ServiceValue, `{"catalog_status":"active","name":"Linen shirt"}`)
		c, err := conflict.Service{Store: e.Store, Clock: e.Clock}.Get(context.Background(), e.Vendor.ID, *mc.Data.Items[0].ConflictID)
		if err != nil || c.Type != conflict.TypeCatalogMismatch || string(c.ChannelValue) != `{"name":"Washed linen shirt","catalog_status":"active"}` {
			t.Fatalf("catalog conflict: %+v %v", c, err)
		}
		dc := cat(f.dest, "sync-cat-0002", map[string]any{"product_id": f.product, "name": "Linen shirt", "catalog_status": "archived"})
		if !slices.Equal(syncStatuses(dc), []string{"channel_stale"}) {
			t.Fatalf("destination catalog: %v", syncStatuses(dc))
		}
		if n := openConflicts(t, e, f.master); n != 2 {
			t.Fatalf("open conflicts: %d, want the price and the catalog one", n)
		}
		var p productBody
		e.Get("/vendors/"+e.Vendor.ID+"/products/"+f.product).JSON(t, &p)
		if p.Data.Revision != 1 {
			t.Fatalf("a sync job rewrote the product: revision %d", p.Data.Revision)
		}
	})
}

// TestSyncJobValidation: structural errors are 400 naming the field and
// store nothing; the connection decides 404 and 409; scopes are 403; a
// replay answers the first job.
func TestSyncJobValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		conn := mustConnection(t, e, "sync-val-conn", connectionBody("marketplace_a", destinationRoles)).Data.ID
		inv := func(items ...any) map[string]any {
			return map[string]any{"connection_id": conn, "kind": "inventory", "items": append([]any{}, items...)}
		}
		ok := map[string]any{"inventory_item_id": "inv_a_000", "on_hand": 1}
		many := make([]any, 101)
		for i := range many {
			many[i] = map[string]any{"inventory_item_id": fmt.Sprintf("inv_a_%03d", i), "on_hand": 1}
		}
		cases := []struct {
			name   string
			body   any
			detail string
		}{
			{"no items", inv(), "items: must have at least 1 item"},
			{"101 items", inv(many...), "items: must have at most 100 items"},
			{"no connection", map[string]any{"kind": "inventory", "items": []any{ok}}, "connection_id: is required"},
			{"no kind", map[string]any{"connection_id": conn, "items": []any{ok}}, "kind: is required"},
			{"other kind", map[string]any{"connection_id": conn, "kind": "orders", "items": []any{ok}}, "kind: must be one of inventory, price, catalog"},
			{"unknown field", map[string]any{"connection_id": conn, "kind": "inventory", "items": []any{ok}, "dry_run": true}, "dry_run: unknown property"},
			{"on_hand too big", inv(ok, map[string]any{"inventory_item_id": "inv_a_001", "on_hand": 1000000001}), "items[1].on_hand: must be from 0 to 1000000000"},
			{"on_hand missing", inv(map[string]any{"inventory_item_id": "inv_a_001"}), "items[0].on_hand: is required"},
			{"repeated item", inv(ok, ok), "items[1].inventory_item_id: repeats the resource of items[0]"},
			{"item field of another kind", inv(map[string]any{"inventory_item_id": "inv_a_001", "on_hand": 1, "price": 3}), "items[0].price: unknown property"},
			{"price missing", map[string]any{"connection_id": conn, "kind": "price", "items": []any{map[string]any{"product_id": "prd_a"}}}, "items[0].price: is required"},
			{"repeated variation", map[string]any{"connection_id": conn, "kind": "price", "items": []any{
				map[string]any{"product_id": "prd_a", "variation_id": "var_1", "price": 1}, map[string]any{"product_id": "prd_a", "variation_id": "var_1", "price": 2}}},
				"items[1].variation_id: repeats the resource of items[0]"},
			{"catalog status", map[string]any{"connection_id": conn, "kind": "catalog", "items": []any{map[string]any{"product_id": "prd_a", "name": "x", "catalog_status": "draft"}}},
				"items[0].catalog_status: must be one of active, archived"},
			{"name two lines", map[string]any{"connection_id": conn, "kind": "catalog", "items": []any{map[string]any{"product_id": "prd_a", "name": "a\nb", "catalog_status": "active"}}},
				"items[0].name: must be a single line"},
		}
		for i, c := range cases {
			pr := syncSubmit(e, e.Token, fmt.Sprintf("sync-val-%04d", i), c.body).WantProblem(t, 400, "INVALID_REQUEST")
			if !strings.HasPrefix(pr.Detail, c.detail) {
				t.Errorf("%s: detail %q, want %q", c.name, pr.Detail, c.detail)
			}
		}
		var list struct{ Data []any }
		e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs").JSON(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("rejected jobs were stored: %v", list.Data)
		}

		// The connection: unknown, a disabled role, disconnected.
		syncSubmit(e, e.Token, "sync-val-conn-1", map[string]any{"connection_id": "conn_nope", "kind": "inventory", "items": []any{ok}}).WantProblem(t, 404, "NOT_FOUND")
		noStock := map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "disabled", "order_ingress": "disabled", "external_order_fulfillment": "moku"}
		off := mustConnection(t, e, "sync-val-conn-off", connectionBody("marketplace_c", noStock)).Data.ID
		syncSubmit(e, e.Token, "sync-val-conn-2", map[string]any{"connection_id": off, "kind": "inventory", "items": []any{ok}}).WantProblem(t, 409, "SYNC_ROLE_DISABLED")
		if r := syncSubmit(e, e.Token, "sync-val-conn-3", map[string]any{"connection_id": off, "kind": "price", "items": []any{map[string]any{"product_id": "prd_a", "price": 1}}}); r.Status != 202 {
			t.Fatalf("price on a connection whose stock role is disabled: %d %s", r.Status, r.Body)
		}
		if r := post(e, "/connections/"+off+"/disconnect", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		syncSubmit(e, e.Token, "sync-val-conn-4", map[string]any{"connection_id": off, "kind": "price", "items": []any{map[string]any{"product_id": "prd_a", "price": 1}}}).WantProblem(t, 409, "CONNECTION_STATE_CONFLICT")

		// Scopes.
		body := inv(ok)
		syncSubmit(e, e.NewToken(e.Vendor.ID, auth.JobsWrite), "sync-val-scope-1", body).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		syncSubmit(e, e.NewToken(e.Vendor.ID, auth.ConnectionsWrite), "sync-val-scope-2", body).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		first := syncSubmit(e, e.Token, "sync-val-replay", body)
		job := mustSync(t, first)
		readOnly := e.NewToken(e.Vendor.ID, auth.JobsRead)
		if r := e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/sync-jobs/" + job.Data.ID, Token: readOnly}); r.Status != 200 {
			t.Fatalf("GET with jobs.read: %d", r.Status)
		}
		e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/sync-jobs/" + job.Data.ID, Token: e.NewToken(e.Vendor.ID, auth.ConnectionsRead)}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/sync-jobs", Token: e.NewToken(e.Vendor.ID, auth.InventoryRead)}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs/syn_nope").WantProblem(t, 404, "NOT_FOUND")

		// Replays.
		again := syncSubmit(e, e.Token, "sync-val-replay", body)
		if again.Status != 202 || !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", again.Status, again.Body)
		}
		syncSubmit(e, e.Token, "sync-val-replay", inv(map[string]any{"inventory_item_id": "inv_a_000", "on_hand": 2})).WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")
		syncSubmit(e, e.Token, "short", body).WantProblem(t, 400, "IDEMPOTENCY_KEY_INVALID")

		// The list: filters and pages.
		all := func(query string) []string {
			var ids []string
			path := "/vendors/" + e.Vendor.ID + "/sync-jobs?limit=1" + query
			for {
				var page struct {
					Data []struct{ ID, Kind string }
					Page struct {
						NextCursor *string `json:"next_cursor"`
					}
				}
				r := e.Get(path)
				if r.Status != 200 {
					t.Fatalf("list %s: %d %s", query, r.Status, r.Body)
				}
				r.JSON(t, &page)
				for _, d := range page.Data {
					ids = append(ids, d.Kind)
				}
				if page.Page.NextCursor == nil {
					return ids
				}
				path = "/vendors/" + e.Vendor.ID + "/sync-jobs?limit=1" + query + "&page_after=" + *page.Page.NextCursor
			}
		}
		if got := all(""); !slices.Equal(got, []string{"price", "inventory"}) {
			t.Fatalf("all jobs: %v", got)
		}
		if got := all("&kind=inventory&status=queued&connection_id=" + conn); !slices.Equal(got, []string{"inventory"}) {
			t.Fatalf("filtered: %v", got)
		}
		if got := all("&connection_id=" + off); !slices.Equal(got, []string{"price"}) {
			t.Fatalf("by connection: %v", got)
		}
		e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs?kind=orders").WantProblem(t, 400, "INVALID_PARAMETER")
		e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs?status=done").WantProblem(t, 400, "INVALID_PARAMETER")
		// The largest job: 100 catalog items with 120-character names fit
		// the body limit and are accepted.
		full := make([]any, 100)
		for i := range full {
			full[i] = map[string]any{"product_id": fmt.Sprintf("prd_%03d", i), "name": strings.Repeat("n", 120), "catalog_status": "active"}
		}
		if r := syncSubmit(e, e.Token, "sync-val-full", map[string]any{"connection_id": conn, "kind": "catalog", "items": full}); r.Status != 202 {
			t.Fatalf("100 items of 120-character names: %d %.300s", r.Status, r.Body)
		}
		long := map[string]any{"connection_id": conn, "kind": "catalog", "items": []any{map[string]any{"product_id": "prd_a", "name": strings.Repeat("n", 121), "catalog_status": "active"}}}
		syncSubmit(e, e.Token, "sync-val-long", long).WantProblem(t, 400, "INVALID_REQUEST")
	})
}

// TestSyncJobPlugin: a store plugin starts and reads its own connection's
// jobs with its discovery credential, only once its pairing is active; a
// revoked pairing stops a job it started.
func TestSyncJobPlugin(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		f := syncFixture{e: e, kind: kind}
		p := mustCreate(t, e, "sync-plugin-product", simpleProduct("sync-plugin"))
		token, pairingID, connID := acceptedPlugin(t, e, "sync-plugin-pairing", "store_catalog_source")
		plugin := func(key string, body any) *apitest.Resp {
			return e.Do(apitest.Req{Method: http.MethodPost, Path: "/store-pairings/current/sync-jobs", Token: token, Body: body,
				Headers: map[string]string{"Idempotency-Key": key}})
		}
		body := map[string]any{"kind": "catalog", "items": []any{map[string]any{"product_id": p.Data.ID, "name": "Linen shirt", "catalog_status": "active"}}}
		plugin("sync-plugin-0001", body).WantProblem(t, 403, "PAIRING_NOT_ACTIVE")
		if err := review(t, e, pairingID); err != nil {
			t.Fatal(err)
		}
		plugin("sync-plugin-0001", map[string]any{"connection_id": connID, "kind": "catalog", "items": body["items"]}).WantProblem(t, 400, "INVALID_REQUEST")
		first := plugin("sync-plugin-0001", body)
		job := mustSync(t, first)
		if job.Data.ConnectionID != connID || job.Data.StartedBy.Type != "store_pairing" || job.Data.StartedBy.ID != pairingID {
			t.Fatalf("plugin job: %s", first.Body)
		}
		if again := plugin("sync-plugin-0001", body); !bytes.Equal(again.Body, first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("plugin replay: %d %s", again.Status, again.Body)
		}
		syncWork(t, f, job.Data.ID)
		read := func(id string) *apitest.Resp {
			return e.Do(apitest.Req{Path: "/store-pairings/current/sync-jobs/" + id, Token: token})
		}
		var got syncBody
		read(job.Data.ID).JSON(t, &got)
		if got.Data.Status != "completed" || !slices.Equal(syncStatuses(got), []string{"in_sync"}) {
			t.Fatalf("plugin job after work: %s %v", got.Data.Status, syncStatuses(got))
		}
		// Another connection's job is not the plugin's to read; a token
		// cannot use the plugin's routes.
		other := mustConnection(t, e, "sync-plugin-other", connectionBody("marketplace_a", destinationRoles)).Data.ID
		theirs := mustSync(t, syncSubmit(e, e.Token, "sync-plugin-theirs", map[string]any{"connection_id": other, "kind": "catalog", "items": body["items"]}))
		read(theirs.Data.ID).WantProblem(t, 404, "NOT_FOUND")
		e.Do(apitest.Req{Path: "/store-pairings/current/sync-jobs/" + job.Data.ID, Token: e.Token}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Do(apitest.Req{Path: "/vendors/" + e.Vendor.ID + "/sync-jobs/" + job.Data.ID, Token: token}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")

		// A job whose pairing is revoked before it runs stops.
		stopped := mustSync(t, plugin("sync-plugin-0002", body))
		if r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/store-pairings/" + pairingID + "/revoke", Token: e.Token}); r.Status != 200 {
			t.Fatalf("revoke: %d %s", r.Status, r.Body)
		}
		syncWork(t, f, stopped.Data.ID)
		gotS := getSync(t, e, stopped.Data.ID)
		if gotS.Data.Status != "failed" || !slices.Equal(syncStatuses(gotS), []string{"not_attempted"}) {
			t.Fatalf("revoked: %s %v", gotS.Data.Status, syncStatuses(gotS))
		}
		if it := gotS.Data.Items[0]; *it.Code != "SYNC_JOB_STOPPED" || !strings.Contains(*it.Detail, "PAIRING_NOT_ACTIVE") {
			t.Fatalf("stopped item: %+v", it)
		}
		wantSyncCounts(t, gotS, map[string]int{"not_attempted": 1})
		read(job.Data.ID).WantProblem(t, 401, "UNAUTHENTICATED")
	})
}

// TestSyncJobStops: a disconnected connection or a revoked token stops the
// job before the next item. A paused connection syncs, and a role disabled
// meanwhile fails the items instead of stopping the job.
func TestSyncJobStops(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		f := syncFixture{e: e, kind: kind}
		conn := mustConnection(t, e, "sync-stop-conn", connectionBody("marketplace_a", destinationRoles)).Data.ID
		svc := auth.Service{Store: e.Store, Clock: e.Clock}
		tok, err := svc.Issue(context.Background(), e.Vendor.ID, []auth.Scope{auth.JobsWrite, auth.ConnectionsWrite, auth.InventoryWrite}, 0)
		if err != nil {
			t.Fatal(err)
		}
		items := stockItems("inv_a_000", 1, "inv_a_001", 1)
		j1 := mustSync(t, syncSubmit(e, tok.Token, "sync-stop-0001", map[string]any{"connection_id": conn, "kind": "inventory", "items": items}))
		if _, err := svc.Revoke(context.Background(), tok.ID); err != nil {
			t.Fatal(err)
		}
		syncWork(t, f, j1.Data.ID)
		got := getSync(t, e, j1.Data.ID)
		if got.Data.Status != "failed" || !slices.Equal(syncStatuses(got), []string{"not_attempted", "not_attempted"}) ||
			!strings.Contains(*got.Data.Items[0].Detail, "UNAUTHENTICATED") {
			t.Fatalf("revoked token: %s %v", got.Data.Status, syncStatuses(got))
		}

		j2 := mustSync(t, syncSubmit(e, e.Token, "sync-stop-0002", map[string]any{"connection_id": conn, "kind": "inventory", "items": items}))
		if r := post(e, "/connections/"+conn+"/disconnect", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		syncWork(t, f, j2.Data.ID)
		got = getSync(t, e, j2.Data.ID)
		if got.Data.Status != "failed" || !strings.Contains(*got.Data.Items[1].Detail, "CONNECTION_STATE_CONFLICT") || *got.Data.Items[1].Code != "SYNC_JOB_STOPPED" {
			t.Fatalf("disconnected: %s %+v", got.Data.Status, got.Data.Items)
		}

		// A paused connection still syncs; a role disabled after the
		// submission fails the items it covers.
		paused := mustConnection(t, e, "sync-stop-conn-2", connectionBody("marketplace_b", destinationRoles)).Data.ID
		j3 := mustSync(t, syncSubmit(e, e.Token, "sync-stop-0003", map[string]any{"connection_id": paused, "kind": "inventory", "items": items}))
		if r := post(e, "/connections/"+paused+"/pause", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("pause: %d %s", r.Status, r.Body)
		}
		noStock := map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "disabled", "order_ingress": "enabled", "external_order_fulfillment": "moku"}
		if r := e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + paused + "/roles", Token: e.Token, Body: map[string]any{"expected_version": 2, "roles": noStock}}); r.Status != 200 {
			t.Fatalf("roles: %d %s", r.Status, r.Body)
		}
		j4 := mustSync(t, syncSubmit(e, e.Token, "sync-stop-0004", map[string]any{"connection_id": paused, "kind": "catalog",
			"items": []any{map[string]any{"product_id": "prd_a", "name": "Shirt", "catalog_status": "active"}}}))
		syncWork(t, f, j3.Data.ID)
		syncWork(t, f, j4.Data.ID)
		got = getSync(t, e, j3.Data.ID)
		if got.Data.Status != "completed" || !slices.Equal(syncStatuses(got), []string{"failed", "failed"}) || *got.Data.Items[0].Code != "SYNC_ROLE_DISABLED" {
			t.Fatalf("role disabled meanwhile: %s %+v", got.Data.Status, got.Data.Items)
		}
		if got = getSync(t, e, j4.Data.ID); got.Data.Status != "completed" || *got.Data.Items[0].Code != "NOT_FOUND" {
			t.Fatalf("paused connection: %s %+v", got.Data.Status, got.Data.Items)
		}
		syncSubmit(e, e.Token, "sync-stop-0005", map[string]any{"connection_id": paused, "kind": "inventory", "items": items}).WantProblem(t, 409, "SYNC_ROLE_DISABLED")
		if n := len(syncEvents(t, e)); n != 4 {
			t.Fatalf("%d completion events, want 4", n)
		}
	})
}

// TestSyncJobCrashResumes kills the worker while it writes the second
// update and runs a healthy one after it: no effect is repeated and the
// job completes.
func TestSyncJobCrashResumes(t *testing.T) {
	for _, mode := range []string{"before", "after"} {
		t.Run(mode, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
				f := newSyncFixture(t, kind)
				e := f.e
				b := mustSync(t, syncSubmit(e, e.Token, "sync-crash-1", map[string]any{"connection_id": f.master, "kind": "inventory",
					"items": stockItems(f.items[0], 11, f.items[1], 12, f.items[2], 13)}))
				crashing := syncWorker(e, &crashStore{Store: e.App.Store, failAt: 2, mode: mode}, nil)
				if err := crashing.Handle(context.Background(), syncMessage(t, e, b.Data.ID)); err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
					t.Fatalf("crashing worker: %v", err)
				}
				mid := getSync(t, e, b.Data.ID)
				want := []string{"updated", "pending", "pending"}
				if mode == "after" {
					want[1] = "updated"
				}
				if mid.Data.Status != "running" || !slices.Equal(syncStatuses(mid), want) {
					t.Fatalf("after the crash: %s %v, want %v", mid.Data.Status, syncStatuses(mid), want)
				}
				if err := handleWith(t, e, queue.SyncJobs, syncMessage(t, e, b.Data.ID)); err != nil {
					t.Fatalf("resumed worker: %v", err)
				}
				got := getSync(t, e, b.Data.ID)
				if got.Data.Status != "completed" || !slices.Equal(syncStatuses(got), []string{"updated", "updated", "updated"}) {
					t.Fatalf("resumed: %s %v", got.Data.Status, syncStatuses(got))
				}
				for i, id := range f.items {
					list := effects(t, e, id)
					syncs := 0
					for _, ef := range list {
						if ef.Cause.Type == "sync_job" {
							syncs++
						}
					}
					if oh, _ := itemState(t, e, id); oh != int64(11+i) || syncs != 1 {
						t.Fatalf("item %d: on_hand %d with %d sync effects, want %d and 1", i, oh, syncs, 11+i)
					}
				}
				if n := len(syncEvents(t, e)); n != 1 {
					t.Fatalf("%d completion events, want 1", n)
				}
			})
		})
	}
}

// readRacingStore lets a competing change land right after the worker read
// an item's state (its one four-key read), once.
type readRacingStore struct {
	store.Store
	race func()
	once sync.Once
}

func (s *readRacingStore) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	items, err := s.Store.GetMany(ctx, keys)
	if len(keys) == 4 {
		s.once.Do(s.race)
	}
	return items, err
}

// TestSyncJobDecidesAgainOnRace: a stock movement that lands between an
// item's decision and its write (or between its read and the adjustment's
// own checks) does not decide the item on stale stock nor cost an attempt:
// the item is decided again at once, and the effect starts from the new
// stock.
func TestSyncJobDecidesAgainOnRace(t *testing.T) {
	wraps := map[string]func(st store.Store, race func()) store.Store{
		"at write": func(st store.Store, race func()) store.Store { return &racingStore{Store: st, race: race} },
		"at read":  func(st store.Store, race func()) store.Store { return &readRacingStore{Store: st, race: race} },
	}
	for name, wrap := range wraps {
		t.Run(name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
				f := newSyncFixture(t, kind)
				e := f.e
				b := mustSync(t, syncSubmit(e, e.Token, "sync-race-1", map[string]any{"connection_id": f.master, "kind": "inventory",
					"items": stockItems(f.items[0], 12)}))
				race := func() {
					r := adjust(e, f.items[0], "sync-race-adjust", map[string]any{"target_on_hand": 20, "expected_version": 2, "authority_connection_id": f.master})
					if r.Status != 200 {
						t.Errorf("competing adjustment: %d %s", r.Status, r.Body)
					}
				}
				sent := &sender{}
				w := syncWorker(e, wrap(e.App.Store, race), sent)
				if err := w.Handle(context.Background(), syncMessage(t, e, b.Data.ID)); err != nil {
					t.Fatalf("worker: %v", err)
				}
				if len(sent.sent) != 0 {
					t.Fatalf("the race cost an attempt: %+v", sent.sent)
				}
				got := getSync(t, e, b.Data.ID)
				if !slices.Equal(syncStatuses(got), []string{"updated"}) || got.Data.Status != "completed" {
					t.Fatalf("%s %v", got.Data.Status, syncStatuses(got))
				}
				rawEq(t, got.Data.Items[0].ServiceValue, `{"available":20,"on_hand":20,"reserved":0}`)
				list := effects(t, e, f.items[0])
				last := list[len(list)-1]
				if last.Cause.Type != "sync_job" || last.Before.OnHand != 20 || last.After.OnHand != 12 || last.Version != 4 || *got.Data.Items[0].StockEffectID != last.ID {
					t.Fatalf("effect: %+v", last)
				}
			})
		})
	}
}

// TestSyncJobAttemptsRunOut: an item the store cannot take gets
// syncjob.MaxAttempts tries, each continued in a fresh, later message;
// then the job stops there.
func TestSyncJobAttemptsRunOut(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		b := mustSync(t, syncSubmit(e, e.Token, "sync-attempts-1", map[string]any{"connection_id": f.master, "kind": "inventory",
			"items": stockItems(f.items[1], 5, f.items[0], 12, f.items[2], 7)}))
		productID, seq, _ := catalog.ParseInventoryItemID(f.items[0])
		sent := &sender{}
		w := syncWorker(e, failingStore{Store: e.App.Store, productKey: datamodel.ProductKey(e.Vendor.ID, productID).SK, attr: datamodel.OnHandAttr(seq)}, sent)
		msg := syncMessage(t, e, b.Data.ID)
		var last time.Duration
		for i := 1; i <= syncjob.MaxAttempts; i++ {
			if err := w.Handle(context.Background(), msg); err != nil {
				t.Fatalf("attempt %d: %v", i, err)
			}
			if len(sent.sent) != 1 || sent.sent[0].queue != queue.SyncJobs || !bytes.Equal(sent.sent[0].body, msg.Body) || sent.sent[0].delay <= last {
				t.Fatalf("attempt %d: sent %+v after %v, want one later continuation", i, sent.sent, last)
			}
			last, sent.sent = sent.sent[0].delay, nil
		}
		if err := w.Handle(context.Background(), msg); err != nil {
			t.Fatalf("giving up: %v", err)
		}
		got := getSync(t, e, b.Data.ID)
		if got.Data.Status != "failed" || !slices.Equal(syncStatuses(got), []string{"in_sync", "not_attempted", "not_attempted"}) {
			t.Fatalf("ran out: %s %v", got.Data.Status, syncStatuses(got))
		}
		if it := got.Data.Items[1]; *it.Code != "SYNC_JOB_STOPPED" || !strings.Contains(*it.Detail, "SERVICE_UNAVAILABLE") {
			t.Fatalf("item: %+v", it)
		}
		if oh, _ := itemState(t, e, f.items[0]); oh != 10 {
			t.Fatalf("the failing item moved: %d", oh)
		}
	})
}

// TestSyncJobBatchesAgreeingVerdicts: verdicts that write nothing but
// themselves are written 25 at a time, each one still exact.
func TestSyncJobBatchesAgreeingVerdicts(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "sync-batch-product", variableProduct("sync-batch", 30))
		conn := mustConnection(t, e, "sync-batch-conn", connectionBody("marketplace_b", destinationRoles)).Data.ID
		var pairs []any
		for k := 1; k <= 30; k++ {
			count := 0
			if k == 27 {
				count = 4
			}
			pairs = append(pairs, catalog.InventoryItemID(p.Data.ID, k), count)
		}
		job := mustSync(t, syncSubmit(e, e.Token, "sync-batch-0001", map[string]any{"connection_id": conn, "kind": "inventory", "items": stockItems(pairs...)}))
		syncWork(t, syncFixture{e: e, kind: kind}, job.Data.ID)
		got := getSync(t, e, job.Data.ID)
		wantSyncCounts(t, got, map[string]int{"in_sync": 29, "channel_stale": 1})
		if st := got.Data.Items[26]; st.Status != "channel_stale" {
			t.Fatalf("item 27: %+v", st)
		}
		rawEq(t, got.Data.Items[26].ServiceValue, `{"available":0}`)
		// Created at version 1, then one write per batch: 25 and 5.
		it, err := e.Store.Get(context.Background(), datamodel.SyncJobKey(e.Vendor.ID, job.Data.ID))
		if err != nil || it.Version != 3 {
			t.Fatalf("job written at version %d (%v), want 3: two batched writes", it.Version, err)
		}
	})
}

// TestSyncJobClosesSettledConflicts: once the master agrees with the
// service (a count it may apply, a title the connector wrote), a later job
// resolves the conflict it had opened, in the verdict's transaction; a
// price conflict (about the whole product) stays open.
func TestSyncJobClosesSettledConflicts(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		run := func(key, kind string, items ...map[string]any) syncBody {
			b := mustSync(t, syncSubmit(e, e.Token, key, map[string]any{"connection_id": f.master, "kind": kind, "items": items}))
			syncWork(t, f, b.Data.ID)
			return getSync(t, e, b.Data.ID)
		}
		low := run("sync-settle-0001", "inventory", stockItems(f.items[2], 3)...)
		cat := run("sync-settle-0002", "catalog", map[string]any{"product_id": f.product, "name": "Washed linen shirt", "catalog_status": "active"})
		price := run("sync-settle-0003", "price", map[string]any{"product_id": f.product, "variation_id": f.variations[0], "price": 3999})
		if n := openConflicts(t, e, f.master); n != 3 {
			t.Fatalf("open conflicts %d, want 3", n)
		}

		// The store counted again: 8 covers the 6 reserved, so it applies
		// and the stock conflict is settled.
		up := run("sync-settle-0004", "inventory", stockItems(f.items[2], 8)...)
		if it := up.Data.Items[0]; it.Status != "updated" || it.Detail == nil || !strings.Contains(*it.Detail, "resolves conflict "+*low.Data.Items[0].ConflictID) {
			t.Fatalf("settling count: %+v", it)
		}
		if oh, _ := itemState(t, e, f.items[2]); oh != 8 {
			t.Fatalf("on_hand %d, want 8", oh)
		}
		// The connector wrote the title: in sync now, and settled too.
		run("sync-settle-0005", "catalog", map[string]any{"product_id": f.product, "name": "Linen shirt", "catalog_status": "active"})
		// One variation agreeing says nothing of the product's other prices.
		run("sync-settle-0006", "price", map[string]any{"product_id": f.product, "variation_id": f.variations[0], "price": 4500})

		cs := conflict.Service{Store: e.Store, Clock: e.Clock}
		for id, want := range map[string]string{*low.Data.Items[0].ConflictID: "resolved", *cat.Data.Items[0].ConflictID: "resolved", *price.Data.Items[0].ConflictID: "open"} {
			c, err := cs.Get(context.Background(), e.Vendor.ID, id)
			if err != nil || c.Status != want {
				t.Fatalf("conflict %s: %+v %v, want %s", id, c, err, want)
			}
			if want == "resolved" && (c.Resolution == nil || c.Resolution.By.Type != "system" || c.Version != 2) {
				t.Fatalf("resolution of %s: %+v", id, c.Resolution)
			}
		}
		if n := openConflicts(t, e, f.master); n != 1 {
			t.Fatalf("open conflicts %d, want the price one", n)
		}
	})
}

// TestConcurrentSyncJobsOpenOneConflict: jobs reporting the same mismatch,
// worked at the same time, open exactly one conflict, which every item
// names, and count it once on the connection.
func TestConcurrentSyncJobsOpenOneConflict(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		const n = 4
		jobs := make([]string, n)
		for i := range jobs {
			jobs[i] = mustSync(t, syncSubmit(e, e.Token, fmt.Sprintf("sync-race-conflict-%d", i),
				map[string]any{"connection_id": f.master, "kind": "inventory", "items": stockItems(f.items[2], 2+i)})).Data.ID
		}
		w, err := e.App.Work(nil, queue.SyncJobs)
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]queue.Message, n)
		for i, id := range jobs {
			msgs[i] = syncMessage(t, e, id)
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range msgs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.Handle(context.Background(), msgs[i])
			}()
		}
		wg.Wait()
		ids := map[string]bool{}
		for i, id := range jobs {
			if errs[i] != nil {
				t.Fatalf("job %d: %v", i, errs[i])
			}
			got := getSync(t, e, id)
			if it := got.Data.Items[0]; it.Status != "conflict" || it.ConflictID == nil {
				t.Fatalf("job %d: %+v", i, it)
			} else {
				ids[*it.ConflictID] = true
			}
		}
		if len(ids) != 1 {
			t.Fatalf("%d conflicts opened, want 1: %v", len(ids), ids)
		}
		if c := openConflicts(t, e, f.master); c != 1 {
			t.Fatalf("the connection counts %d open conflicts, want 1", c)
		}
	})
}

// syncWorker is the sync worker over st, a test's store in front of the
// app's, with its services built over st as the root builds them; it
// sends continuations to q.
func syncWorker(e *apitest.Env, st store.Store, q queue.Sender) syncjob.Worker {
	return syncjob.NewWorker(app.NewServices(e.App, st).Sync, st, e.Clock, q, nil)
}
