package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

func catalogEnv(t *testing.T, kind apitest.StoreKind) *apitest.Env {
	e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, 1<<20 }})
	// Records made one after another get ordered times, as in real life.
	e.Clock.Tick(time.Millisecond)
	return e
}

func simpleProduct(slug string) map[string]any {
	return map[string]any{
		"kind": "simple", "name": "Linen shirt", "slug": slug, "description": "A shirt of washed linen.",
		"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
		"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "options": map[string]any{},
		"features": []string{"washed linen"}, "related_product_ids": []string{}, "weight_kg": 0.3, "sku": "SHIRT-1",
	}
}

func variableProduct(slug string, n int) map[string]any {
	p := simpleProduct(slug)
	p["kind"], p["sku"] = "variable", nil
	sizes := make([]string, 0, n)
	vars := make([]map[string]any, 0, n)
	for i := 0; i < n; i++ {
		size := fmt.Sprintf("s%03d", i)
		sizes = append(sizes, size)
		vars = append(vars, map[string]any{"options": map[string]string{"size": size}, "price": 4500 + i, "sku": "V-" + size})
	}
	if n > 50 {
		// 50 values per option at most: spread the combinations over two options.
		sizes, vars = nil, nil
		var colors []string
		for i := 0; i < 50; i++ {
			sizes = append(sizes, fmt.Sprintf("s%03d", i))
		}
		for c := 0; c*50 < n; c++ {
			colors = append(colors, fmt.Sprintf("c%d", c))
		}
		for i := 0; i < n; i++ {
			vars = append(vars, map[string]any{"options": map[string]string{"size": sizes[i%50], "color": colors[i/50]}, "price": 4500 + i})
		}
		p["options"] = map[string][]string{"size": sizes, "color": colors}
	} else {
		p["options"] = map[string][]string{"size": sizes}
	}
	p["variations"] = vars
	return p
}

type productBody struct {
	Data struct {
		ID            string
		Status        string
		CatalogStatus string `json:"catalog_status"`
		Revision      int64
		Slug          string
		Discount      int64
		PublishedAt   *string `json:"published_at"`
		ArchivedAt    *string `json:"archived_at"`
		Variations    []struct {
			ID     string
			Status string
			Price  int64
		}
	}
}

func create(t *testing.T, e *apitest.Env, key string, body any) (*apitest.Resp, productBody) {
	t.Helper()
	return apitest.Create[productBody](t, e, "/vendors/"+e.Vendor.ID+"/products", key, body)
}

func mustCreate(t *testing.T, e *apitest.Env, key string, body any) productBody {
	t.Helper()
	return apitest.MustCreate[productBody](t, e, "/vendors/"+e.Vendor.ID+"/products", key, body)
}

func post(e *apitest.Env, path string, body any) *apitest.Resp {
	if strings.HasPrefix(path, "/connections/") {
		path = "/connections/" + strings.TrimPrefix(path, "/connections/")
		if !strings.HasSuffix(path, "/roles") {
			path = "/vendors/" + e.Vendor.ID + path
		}
		return e.Do(apitest.Req{Method: http.MethodPost, Path: path, Token: e.Token, Body: body})
	}
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + path, Token: e.Token, Body: body})
}

// eventTypes are the types of the vendor's events about resourceID, or
// of all its events when none is given, oldest first.
func eventTypes(t *testing.T, e *apitest.Env, resourceID ...string) []string {
	t.Helper()
	items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.EventPrefix, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, it := range items {
		ev, err := event.Decode(it)
		if err != nil {
			t.Fatal(err)
		}
		if len(resourceID) == 0 || ev.Resource.ID == resourceID[0] {
			out = append(out, ev.Type)
		}
	}
	return out
}

func TestProductCreateAndRead(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "create-key-1", simpleProduct("linen-shirt"))
		d := p.Data
		if d.Status != "draft" || d.CatalogStatus != "active" || d.Revision != 1 || d.PublishedAt != nil || d.ArchivedAt != nil || d.Discount != 25 {
			t.Fatalf("created product = %+v", d)
		}
		if !strings.HasPrefix(d.ID, "prd_") {
			t.Fatalf("id %q", d.ID)
		}
		r := e.Get("/vendors/" + e.Vendor.ID + "/products/" + d.ID)
		var got map[string]any
		r.JSON(t, &got)
		data := got["data"].(map[string]any)
		if r.Status != 200 || data["id"] != d.ID || data["vendor_id"] != e.Vendor.ID || len(data) != 29 {
			t.Fatalf("GET product: %d, %d fields: %s", r.Status, len(data), r.Body)
		}
		e.Get("/vendors/"+e.Vendor.ID+"/products/prd_missing").WantProblem(t, 404, "NOT_FOUND")
		e.Get("/vendors/"+e.Vendor.ID+"/products/"+strings.Repeat("p", 129)).WantProblem(t, 400, "INVALID_PARAMETER")

		// The simple product has one inventory item with zeroed buckets.
		r = e.Get("/vendors/" + e.Vendor.ID + "/inventory-items")
		var inv struct {
			Data []struct {
				ID, ProductID, Status string
				OnHand                int64 `json:"on_hand"`
				Version               int64
				VariationID           *string `json:"variation_id"`
				Location              string  `json:"location_id"`
				Pool                  string  `json:"stock_pool_id"`
			}
		}
		r.JSON(t, &inv)
		if len(inv.Data) != 1 || inv.Data[0].VariationID != nil || inv.Data[0].OnHand != 0 || inv.Data[0].Status != "out_of_stock" ||
			inv.Data[0].Location != "default" || inv.Data[0].Pool != "default" || inv.Data[0].Version != 1 {
			t.Fatalf("inventory after create: %s", r.Body)
		}

		// A variable product gets one item per variation, with server ids.
		v := mustCreate(t, e, "create-key-2", variableProduct("linen-shirt-sizes", 3))
		if len(v.Data.Variations) != 3 || !strings.HasPrefix(v.Data.Variations[0].ID, "var_") {
			t.Fatalf("variations = %+v", v.Data.Variations)
		}
		r = e.Get("/vendors/" + e.Vendor.ID + "/inventory-items")
		r.JSON(t, &inv)
		if len(inv.Data) != 4 || *inv.Data[1].VariationID != v.Data.Variations[0].ID {
			t.Fatalf("inventory after variable create: %s", r.Body)
		}
		if got := eventTypes(t, e); strings.Join(got, ",") != "product.created,product.created" {
			t.Fatalf("events %v", got)
		}
	})
}

func TestProductCreateIdempotency(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		first, _ := create(t, e, "idem-key-1", simpleProduct("shirt"))
		replay, _ := create(t, e, "idem-key-1", simpleProduct("shirt"))
		if first.Status != 201 || replay.Status != 201 || string(first.Body) != string(replay.Body) || replay.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s / %d %s", first.Status, first.Body, replay.Status, replay.Body)
		}
		other := simpleProduct("shirt")
		other["name"] = "Another"
		r, _ := create(t, e, "idem-key-1", other)
		r.WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")
		// The slug is unique per vendor.
		r, _ = create(t, e, "idem-key-2", simpleProduct("shirt"))
		p := r.WantProblem(t, 409, "PRODUCT_SLUG_TAKEN")
		if !strings.Contains(p.Detail, "slug") {
			t.Fatalf("detail %q", p.Detail)
		}
		// A missing key is refused before anything is written.
		r, _ = create(t, e, "", simpleProduct("shirt-2"))
		r.WantProblem(t, 400, "IDEMPOTENCY_KEY_REQUIRED")
		if got := eventTypes(t, e); len(got) != 1 {
			t.Fatalf("events %v, want the one product.created", got)
		}
	})
}

func TestProductCreateConcurrent(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		rs := apitest.Race(20, func(int) *apitest.Resp {
			r, _ := create(t, e, "same-create-key", simpleProduct("race"))
			return r
		})
		bodies := map[string]int{}
		for _, r := range rs {
			bodies[string(r.Body)]++
		}
		if statuses := apitest.Statuses(rs); statuses[201] != 20 || len(bodies) != 1 {
			t.Fatalf("same key: statuses %v, %d distinct bodies; want 20 identical 201s", statuses, len(bodies))
		}
		statuses := apitest.Statuses(apitest.Race(20, func(i int) *apitest.Resp {
			r, _ := create(t, e, "other-create-key", simpleProduct(fmt.Sprintf("race-%d", i)))
			return r
		}))
		if statuses[201] != 1 || statuses[409] != 19 {
			t.Fatalf("same key, different bodies: %v", statuses)
		}
		r := e.Get("/vendors/" + e.Vendor.ID + "/products")
		var list struct{ Data []any }
		r.JSON(t, &list)
		if len(list.Data) != 2 {
			t.Fatalf("%d products, want 2", len(list.Data))
		}
	})
}

// TestLifecycle walks the spec's product status table row by row.
func TestLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "life-key-1", simpleProduct("life"))
		id := p.Data.ID
		rev := int64(1)
		steps := []struct {
			action    string
			expected  int64 // relative: 0 = current revision, -1 = stale
			status    int
			code      string
			to        string
			revChange int64
		}{
			{"unpublish", 0, 200, "", "draft", 0},                    // draft: no-op
			{"restore", 0, 200, "", "draft", 0},                      // draft: no-op
			{"publish", -1, 409, "PRODUCT_REVISION_CONFLICT", "", 0}, // stale revision
			{"publish", 0, 200, "", "published", 1},                  // draft -> published
			{"publish", 0, 200, "", "published", 0},                  // published: no-op
			{"publish", -1, 409, "PRODUCT_REVISION_CONFLICT", "", 0}, // no-op row still needs the current revision
			{"restore", 0, 409, "PRODUCT_STATE_CONFLICT", "", 0},     // published cannot be restored
			{"unpublish", 0, 200, "", "draft", 1},                    // published -> draft
			{"publish", 0, 200, "", "published", 1},                  // again
			{"archive", 0, 200, "", "archived", 1},                   // published -> archived
			{"archive", 0, 200, "", "archived", 0},                   // archived: no-op
			{"publish", 0, 409, "PRODUCT_STATE_CONFLICT", "", 0},     // archived cannot be published
			{"unpublish", 0, 409, "PRODUCT_STATE_CONFLICT", "", 0},   // nor unpublished
			{"restore", -1, 409, "PRODUCT_REVISION_CONFLICT", "", 0}, // stale
			{"restore", 0, 200, "", "draft", 1},                      // archived -> draft, not published
			{"archive", 0, 200, "", "archived", 1},                   // draft -> archived
			{"restore", 0, 200, "", "draft", 1},                      // and back
		}
		for i, s := range steps {
			expected := rev
			if s.expected < 0 {
				expected = rev - 1
			}
			r := post(e, "/products/"+id+"/"+s.action, map[string]any{"expected_revision": expected})
			if s.code != "" {
				p := r.WantProblem(t, s.status, s.code)
				if s.code == "PRODUCT_REVISION_CONFLICT" && !strings.Contains(p.Detail, fmt.Sprint(rev)) {
					t.Fatalf("step %d: detail %q does not state revision %d", i, p.Detail, rev)
				}
				continue
			}
			var got productBody
			r.JSON(t, &got)
			if r.Status != s.status || got.Data.Status != s.to || got.Data.Revision != rev+s.revChange {
				t.Fatalf("step %d %s: %d %+v, want %s at revision %d", i, s.action, r.Status, got.Data, s.to, rev+s.revChange)
			}
			rev = got.Data.Revision
			switch s.to {
			case "published":
				if got.Data.PublishedAt == nil || got.Data.ArchivedAt != nil || got.Data.CatalogStatus != "active" {
					t.Fatalf("step %d: timestamps %+v", i, got.Data)
				}
			case "archived":
				if got.Data.ArchivedAt == nil || got.Data.PublishedAt != nil || got.Data.CatalogStatus != "archived" {
					t.Fatalf("step %d: timestamps %+v", i, got.Data)
				}
			case "draft":
				if got.Data.ArchivedAt != nil || got.Data.PublishedAt != nil || got.Data.CatalogStatus != "active" {
					t.Fatalf("step %d: timestamps %+v", i, got.Data)
				}
			}
		}
		want := "product.created,product.published,product.unpublished,product.published,product.archived,product.restored,product.archived,product.restored"
		if got := strings.Join(eventTypes(t, e), ","); got != want {
			t.Fatalf("events\n %s\nwant\n %s", got, want)
		}
		// Archive and restore need both current authority bindings; while the
		// service owns both they are null.
		r := post(e, "/products/"+id+"/archive", map[string]any{"expected_revision": rev, "catalog_authority_connection_id": "conn_store"})
		r.WantProblem(t, 409, "AUTHORITY_MISMATCH")
		r = post(e, "/products/"+id+"/archive", map[string]any{"expected_revision": rev, "catalog_authority_connection_id": nil, "base_price_authority_connection_id": nil})
		if r.Status != 200 {
			t.Fatalf("archive with null bindings: %d %s", r.Status, r.Body)
		}
		post(e, "/products/"+id+"/restore", map[string]any{"expected_revision": rev + 1, "base_price_authority_connection_id": "conn_x"}).WantProblem(t, 409, "AUTHORITY_MISMATCH")
		post(e, "/products/prd_nope/publish", map[string]any{"expected_revision": 1}).WantProblem(t, 404, "NOT_FOUND")
	})
}

func TestPublishNeedsCompleteDraft(t *testing.T) {
	e := catalogEnv(t, apitest.SQLite)
	body := simpleProduct("bare")
	body["description"], body["image_urls"] = "", []string{}
	p := mustCreate(t, e, "bare-key-1", body)
	r := post(e, "/products/"+p.Data.ID+"/publish", map[string]any{"expected_revision": 1})
	pr := r.WantProblem(t, 409, "PRODUCT_INCOMPLETE")
	if !strings.Contains(pr.Detail, "description") || !strings.Contains(pr.Detail, "image_urls") {
		t.Fatalf("detail %q", pr.Detail)
	}
	v := mustCreate(t, e, "bare-key-2", variableProduct("no-variants", 0))
	post(e, "/products/"+v.Data.ID+"/publish", map[string]any{"expected_revision": 1}).WantProblem(t, 409, "PRODUCT_INCOMPLETE")
}

func patch(e *apitest.Env, id string, body any) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPatch, Path: "/vendors/" + e.Vendor.ID + "/products/" + id, Token: e.Token, Body: body})
}

func TestPatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "patch-key-1", variableProduct("patchable", 2))
		id := p.Data.ID
		body := variableProduct("patchable-renamed", 0)
		body["options"] = map[string][]string{"size": {"s000", "s001", "s002"}}
		body["variations"] = []map[string]any{
			{"id": p.Data.Variations[0].ID, "status": "active", "options": map[string]string{"size": "s000"}, "price": 100},
			{"id": p.Data.Variations[1].ID, "status": "retired", "options": map[string]string{"size": "s001"}, "price": 200},
			{"options": map[string]string{"size": "s002"}, "price": 300},
		}
		body["expected_revision"] = 1
		r := patch(e, id, body)
		var got productBody
		r.JSON(t, &got)
		if r.Status != 200 || got.Data.Revision != 2 || got.Data.Slug != "patchable-renamed" || len(got.Data.Variations) != 3 ||
			got.Data.Variations[0].ID != p.Data.Variations[0].ID || got.Data.Variations[1].Status != "retired" || got.Data.Variations[2].Price != 300 {
			t.Fatalf("PATCH: %d %s", r.Status, r.Body)
		}
		// The new variation has its own zeroed inventory item; the retired one keeps its item.
		var inv struct {
			Data []struct {
				VariationID string `json:"variation_id"`
			}
		}
		e.Get("/vendors/"+e.Vendor.ID+"/inventory-items").JSON(t, &inv)
		if len(inv.Data) != 3 || inv.Data[2].VariationID != got.Data.Variations[2].ID {
			t.Fatalf("inventory after PATCH: %+v", inv.Data)
		}
		// The old slug is free again, the new one taken.
		mustCreate(t, e, "patch-key-2", simpleProduct("patchable"))
		r, _ = create(t, e, "patch-key-3", simpleProduct("patchable-renamed"))
		r.WantProblem(t, 409, "PRODUCT_SLUG_TAKEN")
		// An identical replacement changes nothing.
		body["variations"] = []map[string]any{
			{"id": p.Data.Variations[0].ID, "status": "active", "options": map[string]string{"size": "s000"}, "price": 100},
			{"id": p.Data.Variations[1].ID, "status": "retired", "options": map[string]string{"size": "s001"}, "price": 200},
			{"id": got.Data.Variations[2].ID, "status": "active", "options": map[string]string{"size": "s002"}, "price": 300},
		}
		body["expected_revision"] = 2
		r = patch(e, id, body)
		r.JSON(t, &got)
		if r.Status != 200 || got.Data.Revision != 2 {
			t.Fatalf("identical PATCH: %d revision %d", r.Status, got.Data.Revision)
		}
		// Stale revision.
		body["expected_revision"] = 1
		patch(e, id, body).WantProblem(t, 409, "PRODUCT_REVISION_CONFLICT")
		// The kind is immutable.
		simple := simpleProduct("patchable-renamed")
		simple["expected_revision"] = 2
		patch(e, id, simple).WantProblem(t, 400, "INVALID_REQUEST")
		// Archived products are not edited.
		post(e, "/products/"+id+"/archive", map[string]any{"expected_revision": 2})
		body["expected_revision"] = 3
		patch(e, id, body).WantProblem(t, 409, "PRODUCT_STATE_CONFLICT")
		patch(e, "prd_nope", body).WantProblem(t, 404, "NOT_FOUND")
	})
}

func TestPatchRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "race-key-1", simpleProduct("race"))
		statuses := apitest.Statuses(apitest.Race(20, func(i int) *apitest.Resp {
			body := simpleProduct("race")
			body["name"], body["expected_revision"] = fmt.Sprintf("Name %d", i), 1
			return patch(e, p.Data.ID, body)
		}))
		if statuses[200] != 1 || statuses[409] != 19 {
			t.Fatalf("PATCH race: %v, want one 200 and 19 409", statuses)
		}
		var got productBody
		e.Get("/vendors/"+e.Vendor.ID+"/products/"+p.Data.ID).JSON(t, &got)
		if got.Data.Revision != 2 {
			t.Fatalf("revision %d after the race, want 2", got.Data.Revision)
		}
	})
}

// TestHundredVariations creates a product with the most variations the
// contract allows and all of their inventory items in one atomic write.
func TestHundredVariations(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "hundred-key", variableProduct("hundred", catalog.MaxVariations))
		if len(p.Data.Variations) != 100 {
			t.Fatalf("%d variations", len(p.Data.Variations))
		}
		seen := map[string]bool{}
		path := "/vendors/" + e.Vendor.ID + "/inventory-items?limit=30"
		for pages := 0; pages < 10; pages++ {
			var page struct {
				Data []struct{ ID string }
				Page struct {
					NextCursor *string `json:"next_cursor"`
				}
			}
			r := e.Get(path)
			r.JSON(t, &page)
			for _, d := range page.Data {
				if seen[d.ID] {
					t.Fatalf("item %s twice", d.ID)
				}
				seen[d.ID] = true
			}
			if page.Page.NextCursor == nil {
				break
			}
			path = "/vendors/" + e.Vendor.ID + "/inventory-items?limit=30&page_after=" + *page.Page.NextCursor
		}
		if len(seen) != 100 {
			t.Fatalf("walked %d inventory items, want 100", len(seen))
		}
	})
}
