package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

type itemBody struct {
	Data struct {
		ID                           string
		OnHand                       int64 `json:"on_hand"`
		Reserved, Available, Version int64
		Status                       string
		ProductID                    string  `json:"product_id"`
		VariationID                  *string `json:"variation_id"`
		SKU                          *string
	}
}

func adjust(e *apitest.Env, itemID, key string, body any) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/inventory-items/" + itemID + "/adjustments",
		Token: e.Token, Body: body, Headers: map[string]string{"Idempotency-Key": key}})
}

func firstItem(t *testing.T, e *apitest.Env) string {
	t.Helper()
	var inv struct{ Data []struct{ ID string } }
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items").JSON(t, &inv)
	if len(inv.Data) == 0 {
		t.Fatal("no inventory items")
	}
	return inv.Data[0].ID
}

func TestAdjustments(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		mustCreate(t, e, "inv-key-1", simpleProduct("stocked"))
		id := firstItem(t, e)

		steps := []struct {
			target, version int64
			status          string
		}{
			{10, 1, "in_stock"}, {5, 2, "low_stock"}, {1, 3, "low_stock"}, {0, 4, "out_of_stock"}, {6, 5, "in_stock"},
		}
		var first *apitest.Resp
		for i, s := range steps {
			r := adjust(e, id, fmt.Sprintf("adjust-key-%d", i), map[string]any{"target_on_hand": s.target, "expected_version": s.version})
			var got itemBody
			r.JSON(t, &got)
			if r.Status != 200 || got.Data.OnHand != s.target || got.Data.Available != s.target || got.Data.Reserved != 0 ||
				got.Data.Version != s.version+1 || got.Data.Status != s.status {
				t.Fatalf("step %d: %d %s", i, r.Status, r.Body)
			}
			if i == 0 {
				first = r
			}
		}
		// A stale version is 409 and names the current one.
		p := adjust(e, id, "adjust-key-stale", map[string]any{"target_on_hand": 3, "expected_version": 2}).WantProblem(t, 409, "INVENTORY_VERSION_CONFLICT")
		if !strings.Contains(p.Detail, "version 6") {
			t.Fatalf("detail %q", p.Detail)
		}
		// An exact replay returns the original item as it was, even now.
		r := adjust(e, id, "adjust-key-0", map[string]any{"target_on_hand": 10, "expected_version": 1})
		if r.Status != 200 || string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s, want %s", r.Status, r.Body, first.Body)
		}
		adjust(e, id, "adjust-key-0", map[string]any{"target_on_hand": 11, "expected_version": 1}).WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")
		// Authority: the service holds the Stock Pool, so a connection id is refused.
		adjust(e, id, "adjust-key-auth", map[string]any{"target_on_hand": 3, "expected_version": 6, "authority_connection_id": "conn_1"}).WantProblem(t, 409, "AUTHORITY_MISMATCH")
		ok := adjust(e, id, "adjust-key-null", map[string]any{"target_on_hand": 3, "expected_version": 6, "authority_connection_id": nil})
		if ok.Status != 200 {
			t.Fatalf("null authority: %d %s", ok.Status, ok.Body)
		}
		// The current item is what GET shows.
		var got itemBody
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+id).JSON(t, &got)
		if got.Data.OnHand != 3 || got.Data.Version != 7 {
			t.Fatalf("GET after adjustments: %+v", got.Data)
		}
		adjust(e, "inv_nope_000", "adjust-key-404", map[string]any{"target_on_hand": 3, "expected_version": 1}).WantProblem(t, 404, "NOT_FOUND")
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+strings.Repeat("i", 1001)).WantProblem(t, 400, "INVALID_PARAMETER")
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/inv_"+strings.Repeat("i", 990)+"_000").WantProblem(t, 404, "NOT_FOUND")
		if adjusted := countEvents(t, e, "inventory_item.adjusted"); adjusted != 6 {
			t.Fatalf("%d inventory_item.adjusted events, want 6", adjusted)
		}
	})
}

// TestReservationFloor holds stock the way a reservation does and checks
// that adjustments never go below it.
func TestReservationFloor(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "floor-key-1", simpleProduct("floor"))
		id := firstItem(t, e)
		adjust(e, id, "floor-adjust-1", map[string]any{"target_on_hand": 10, "expected_version": 1})
		hold := store.Add(datamodel.ProductKey(e.Vendor.ID, p.Data.ID), map[string]int64{
			datamodel.ReservedAttr(0): 4, datamodel.AvailableAttr(0): -4, datamodel.ItemVersionAttr(0): 1}, 0, store.Cond{})
		if err := e.Store.Transact(context.Background(), hold); err != nil {
			t.Fatal(err)
		}
		pr := adjust(e, id, "floor-adjust-2", map[string]any{"target_on_hand": 3, "expected_version": 3}).WantProblem(t, 409, "INVENTORY_BELOW_RESERVED")
		if !strings.Contains(pr.Detail, "4") {
			t.Fatalf("detail %q", pr.Detail)
		}
		r := adjust(e, id, "floor-adjust-3", map[string]any{"target_on_hand": 4, "expected_version": 3})
		var got itemBody
		r.JSON(t, &got)
		if r.Status != 200 || got.Data.OnHand != 4 || got.Data.Reserved != 4 || got.Data.Available != 0 || got.Data.Status != "out_of_stock" {
			t.Fatalf("adjust to the floor: %d %s", r.Status, r.Body)
		}
	})
}

func TestAdjustmentRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		mustCreate(t, e, "race-inv-1", simpleProduct("race-stock"))
		id := firstItem(t, e)
		statuses := apitest.Statuses(apitest.Race(20, func(i int) *apitest.Resp {
			return adjust(e, id, fmt.Sprintf("race-adjust-%02d", i), map[string]any{"target_on_hand": 100 + i, "expected_version": 1})
		}))
		if statuses[200] != 1 || statuses[409] != 19 {
			t.Fatalf("statuses %v, want one 200 and 19 409", statuses)
		}
		var got itemBody
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+id).JSON(t, &got)
		if got.Data.Version != 2 || got.Data.OnHand < 100 || got.Data.Available != got.Data.OnHand {
			t.Fatalf("after the race: %+v", got.Data)
		}
	})
}

func TestRetireVariation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "retire-key-1", variableProduct("retire", 2))
		item := catalog.InventoryItemID(p.Data.ID, 1)
		adjust(e, item, "retire-adjust-1", map[string]any{"target_on_hand": 2, "expected_version": 1})
		body := variableProduct("retire", 0)
		body["options"] = map[string][]string{"size": {"s000", "s001"}}
		body["variations"] = []map[string]any{
			{"id": p.Data.Variations[0].ID, "status": "retired", "options": map[string]string{"size": "s000"}, "price": 1},
			{"id": p.Data.Variations[1].ID, "status": "active", "options": map[string]string{"size": "s001"}, "price": 1},
		}
		body["expected_revision"] = 1
		pr := patch(e, p.Data.ID, body).WantProblem(t, 409, "VARIATION_NOT_RETIRABLE")
		if !strings.Contains(pr.Detail, "on_hand 2") {
			t.Fatalf("detail %q", pr.Detail)
		}
		adjust(e, item, "retire-adjust-2", map[string]any{"target_on_hand": 0, "expected_version": 2})
		if r := patch(e, p.Data.ID, body); r.Status != 200 {
			t.Fatalf("retire at zero: %d %s", r.Status, r.Body)
		}
		adjust(e, item, "retire-adjust-3", map[string]any{"target_on_hand": 1, "expected_version": 3}).WantProblem(t, 409, "INVENTORY_ITEM_RETIRED")
	})
}

func TestInventoryFailsClosed(t *testing.T) {
	e := catalogEnv(t, apitest.SQLite)
	p := mustCreate(t, e, "closed-key-1", variableProduct("closed", 2))
	mustCreate(t, e, "closed-key-2", simpleProduct("fine"))
	// Lose one bucket of the first product, as a corrupted item would.
	k := datamodel.ProductKey(e.Vendor.ID, p.Data.ID)
	it, err := e.Store.Get(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	delete(it.Nums, datamodel.OnHandAttr(2))
	if err := e.Store.Transact(context.Background(), store.Put(it, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items").WantProblem(t, 503, "SERVICE_UNAVAILABLE")
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+catalog.InventoryItemID(p.Data.ID, 2)).WantProblem(t, 503, "SERVICE_UNAVAILABLE")
	if r := e.Get("/vendors/" + e.Vendor.ID + "/inventory-items/" + catalog.InventoryItemID(p.Data.ID, 1)); r.Status != 200 {
		t.Fatalf("intact item: %d", r.Status)
	}
}

func TestInventoryPagesWalkEveryItemOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		want := 0
		for i, n := range []int{3, 0, 1, 4, 0, 2} {
			body := variableProduct(fmt.Sprintf("walk-%d", i), n)
			if n == 1 {
				body = simpleProduct(fmt.Sprintf("walk-%d", i))
			}
			mustCreate(t, e, fmt.Sprintf("walk-key-%d", i), body)
			want += n
		}
		for _, limit := range []int{1, 2, 3, 5, 10, 100} {
			var got []string
			path := fmt.Sprintf("/vendors/%s/inventory-items?limit=%d", e.Vendor.ID, limit)
			for pages := 0; pages < 20; pages++ {
				var page struct {
					Data []struct{ ID string }
					Page struct {
						NextCursor *string `json:"next_cursor"`
					}
				}
				e.Get(path).JSON(t, &page)
				if len(page.Data) > limit || (page.Page.NextCursor != nil && len(page.Data) == 0) {
					t.Fatalf("limit %d: bad page of %d items", limit, len(page.Data))
				}
				for _, d := range page.Data {
					got = append(got, d.ID)
				}
				if page.Page.NextCursor == nil {
					break
				}
				path = fmt.Sprintf("/vendors/%s/inventory-items?limit=%d&page_after=%s", e.Vendor.ID, limit, *page.Page.NextCursor)
			}
			if len(got) != want {
				t.Fatalf("limit %d: walked %d items, want %d: %v", limit, len(got), want, got)
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("limit %d: out of order at %d: %v", limit, i, got)
				}
			}
		}
		// A products cursor is not an inventory cursor.
		var page struct {
			Page struct {
				NextCursor string `json:"next_cursor"`
			}
		}
		e.Get("/vendors/"+e.Vendor.ID+"/products?limit=1").JSON(t, &page)
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items?page_after="+page.Page.NextCursor).WantProblem(t, 400, "INVALID_CURSOR")
	})
}
