package catalog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// updateBody is the full replacement body of p (a variableBody product)
// with each existing variation given the status in statuses.
func updateBody(p catalog.Product, slug string, statuses []string) string {
	vars := []map[string]any{}
	for i, v := range p.Variations {
		vars = append(vars, map[string]any{"id": v.ID, "status": statuses[i], "options": v.Options, "price": v.Price})
	}
	b, _ := json.Marshal(map[string]any{
		"kind": "variable", "name": "Shirt", "slug": slug, "description": "A shirt.", "price": 2000,
		"category": "clothes", "subcategory": "shirts", "image_urls": []string{"https://img.example/shirt.webp"},
		"options": map[string][]string{"size": {"S", "M", "L"}}, "features": []string{}, "related_product_ids": []string{},
		"weight_kg": 0.2, "variations": vars, "expected_revision": p.Revision,
	})
	return string(b)
}

func (f fixture) update(t *testing.T, id, body string) (catalog.Product, error) {
	t.Helper()
	in, err := catalog.ParseUpdate([]byte(body))
	if err != nil {
		t.Fatalf("parse update: %v", err)
	}
	return f.svc.Update(context.Background(), vendorID, id, in)
}

func (f fixture) setBuckets(t *testing.T, id string, seq int, onHand, reserved int64) {
	t.Helper()
	k := datamodel.ProductKey(vendorID, id)
	err := f.Store.Transact(context.Background(), store.Add(k, map[string]int64{
		datamodel.OnHandAttr(seq): onHand, datamodel.ReservedAttr(seq): reserved, datamodel.AvailableAttr(seq): onHand - reserved,
	}, 0, store.Cond{Exists: true}))
	if err != nil {
		t.Fatal(err)
	}
}

// TestVariationRetirement: retiring a variation requires zero on_hand and
// no active holds; otherwise 409.
func TestVariationRetirement(t *testing.T) {
	for _, c := range []struct {
		name             string
		onHand, reserved int64
		ok               bool
	}{
		{"zero stock", 0, 0, true},
		{"stock on hand", 3, 0, false},
		{"held stock", 2, 2, false},
		// Not reachable through adjustments (the floor keeps on_hand >=
		// reserved), but it isolates the "no active holds" half of the rule.
		{"a hold without stock", 0, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, nil)
			p := f.create(t, variableBody("shirt"))
			f.setBuckets(t, p.ID, p.Variations[0].Seq, c.onHand, c.reserved)
			got, err := f.update(t, p.ID, updateBody(p, "shirt", []string{catalog.VariationRetired, catalog.VariationActive}))
			stored, _ := f.load(t, p.ID)
			if !c.ok {
				dt.WantCode(t, err, errs.CodeVariationNotRetirable)
				if stored.Revision != p.Revision || stored.Variations[0].Status != catalog.VariationActive {
					t.Fatalf("a refused retirement changed the product: rev %d status %s", stored.Revision, stored.Variations[0].Status)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Revision != p.Revision+1 || stored.Variations[0].Status != catalog.VariationRetired {
				t.Fatalf("rev %d status %s, want %d retired", got.Revision, stored.Variations[0].Status, p.Revision+1)
			}
			if stored.Variations[0].ID != p.Variations[0].ID || stored.Variations[1].Status != catalog.VariationActive {
				t.Fatalf("retirement moved ids or touched the other variation: %+v", stored.Variations)
			}
		})
	}
}

// TestVariationRulesOfUpdate: kind and existing variation ids are
// immutable; an existing variation cannot be dropped; an archived product
// cannot be edited; a stale revision is a conflict.
func TestVariationRulesOfUpdate(t *testing.T) {
	f := newFixture(t, nil)
	p := f.create(t, variableBody("shirt"))

	// Dropping the second variation.
	var body map[string]any
	json.Unmarshal([]byte(updateBody(p, "shirt", []string{"active", "active"})), &body)
	body["variations"] = body["variations"].([]any)[:1]
	b, _ := json.Marshal(body)
	_, err := f.update(t, p.ID, string(b))
	dt.WantCode(t, err, errs.CodeInvalidRequest)

	// An id that is not one of this product's variations.
	json.Unmarshal([]byte(updateBody(p, "shirt", []string{"active", "active"})), &body)
	body["variations"].([]any)[0].(map[string]any)["id"] = "var_not_mine"
	b, _ = json.Marshal(body)
	_, err = f.update(t, p.ID, string(b))
	dt.WantCode(t, err, errs.CodeInvalidRequest)

	// Changing kind.
	simple := `{"kind":"simple","name":"Shirt","slug":"shirt","description":"A shirt.","price":2000,"category":"clothes","subcategory":"shirts","image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":0.2,"expected_revision":1}`
	_, err = f.update(t, p.ID, simple)
	dt.WantCode(t, err, errs.CodeInvalidRequest)

	// Stale revision.
	json.Unmarshal([]byte(updateBody(p, "shirt", []string{"active", "active"})), &body)
	body["expected_revision"] = p.Revision + 5
	body["name"] = "Renamed"
	b, _ = json.Marshal(body)
	_, err = f.update(t, p.ID, string(b))
	dt.WantCode(t, err, errs.CodeRevisionConflict)

	if got, _ := f.load(t, p.ID); got.Revision != p.Revision || len(got.Variations) != 2 {
		t.Fatalf("refused updates changed the product: rev %d, %d variations", got.Revision, len(got.Variations))
	}

	// A new variation gets a fresh id and zeroed inventory; the others keep theirs.
	json.Unmarshal([]byte(updateBody(p, "shirt", []string{"active", "active"})), &body)
	body["variations"] = append(body["variations"].([]any), map[string]any{"options": map[string]string{"size": "L"}, "price": 2200})
	b, _ = json.Marshal(body)
	got, err := f.update(t, p.ID, string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Variations) != 3 || got.Variations[0].ID != p.Variations[0].ID || got.Variations[1].ID != p.Variations[1].ID {
		t.Fatalf("variations after adding one: %+v", got.Variations)
	}
	nv := got.Variations[2]
	if nv.ID == "" || nv.ID == p.Variations[0].ID || nv.ID == p.Variations[1].ID || nv.Status != catalog.VariationActive {
		t.Fatalf("new variation %+v", nv)
	}
	_, it := f.load(t, p.ID)
	if v, ok := it.Nums[datamodel.OnHandAttr(nv.Seq)]; !ok || v != 0 {
		t.Fatalf("new variation's on_hand bucket %d present %v, want 0", v, ok)
	}
	if it.Nums[datamodel.ItemVersionAttr(nv.Seq)] < 1 {
		t.Fatalf("new variation's inventory version %d", it.Nums[datamodel.ItemVersionAttr(nv.Seq)])
	}

	// Archived products are not edited.
	p2, err := f.svc.Transition(context.Background(), vendorID, p.ID, catalog.Archive, catalog.Transition{ExpectedRevision: got.Revision})
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal([]byte(updateBody(got, "shirt", []string{"active", "active", "active"})), &body)
	body["expected_revision"] = p2.Revision
	b, _ = json.Marshal(body)
	_, err = f.update(t, p.ID, string(b))
	dt.WantCode(t, err, errs.CodeProductState)
}

// TestIdenticalUpdateIsNoChange: replacing a product with what it already
// holds leaves its revision alone.
func TestIdenticalUpdateIsNoChange(t *testing.T) {
	f := newFixture(t, nil)
	p := f.create(t, variableBody("shirt"))
	got, err := f.update(t, p.ID, updateBody(p, "shirt", []string{"active", "active"}))
	if err != nil {
		t.Fatal(err)
	}
	if stored, _ := f.load(t, p.ID); got.Revision != p.Revision || stored.Revision != p.Revision {
		t.Fatalf("identical replacement moved revision to %d/%d", got.Revision, stored.Revision)
	}
}

// TestSlugIsUniquePerVendor: a second product with a taken slug is a 409,
// and renaming frees the old slug.
func TestSlugIsUniquePerVendor(t *testing.T) {
	f := newFixture(t, nil)
	p := f.create(t, variableBody("shirt"))
	in, _ := catalog.ParseCreate([]byte(variableBody("shirt")))
	prep, err := f.svc.PrepareCreate(context.Background(), vendorID, in)
	ops, conflict := prep.Ops, prep.Explain
	if err != nil {
		t.Fatal(err)
	}
	err = f.Store.Transact(context.Background(), ops...)
	ce, ok := store.AsCondition(err)
	if !ok {
		t.Fatalf("second create with the same slug: %v", err)
	}
	dt.WantCode(t, conflict(ce), errs.CodeSlugTaken)

	if _, err := f.update(t, p.ID, updateBody(p, "shirt-two", []string{"active", "active"})); err != nil {
		t.Fatal(err)
	}
	f.create(t, variableBody("shirt")) // the old slug is free again
}
