package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// reach creates a complete simple product and moves it to status with the
// lifecycle itself.
func (f fixture) reach(t *testing.T, slug, status string) catalog.Product {
	t.Helper()
	p := f.create(t, completeSimple(slug))
	ctx := context.Background()
	var err error
	switch status {
	case catalog.StatusPublished:
		p, err = f.svc.Transition(ctx, vendorID, p.ID, catalog.Publish, catalog.Transition{ExpectedRevision: p.Revision})
	case catalog.StatusArchived:
		p, err = f.svc.Transition(ctx, vendorID, p.ID, catalog.Archive, catalog.Transition{ExpectedRevision: p.Revision})
	}
	if err != nil {
		t.Fatalf("reach %s: %v", status, err)
	}
	if p.Status != status {
		t.Fatalf("reach %s: got %s", status, p.Status)
	}
	return p
}

// TestCreateRow is the table's first row: (none) -> POST products -> draft,
// revision 1, zero buckets, server-generated variation ids, no timestamps.
func TestCreateRow(t *testing.T) {
	f := newFixture(t, nil)
	p := f.create(t, variableBody("shirt"))
	got, it := f.load(t, p.ID)
	if got.Status != catalog.StatusDraft || got.Revision != 1 {
		t.Fatalf("status %s revision %d, want draft 1", got.Status, got.Revision)
	}
	if got.PublishedAt != nil || got.ArchivedAt != nil {
		t.Fatalf("published_at %v archived_at %v, want null", got.PublishedAt, got.ArchivedAt)
	}
	if got.CatalogStatus() != catalog.CatalogActive {
		t.Fatalf("catalog_status %s, want active for a draft", got.CatalogStatus())
	}
	if len(got.Variations) != 2 {
		t.Fatalf("%d variations, want 2", len(got.Variations))
	}
	seen := map[string]bool{}
	for _, v := range got.Variations {
		if v.ID == "" || seen[v.ID] {
			t.Fatalf("variation id %q is empty or repeated", v.ID)
		}
		seen[v.ID] = true
		if v.Status != catalog.VariationActive {
			t.Fatalf("variation %s status %s, want active", v.ID, v.Status)
		}
		for _, attr := range []string{datamodel.OnHandAttr(v.Seq), datamodel.ReservedAttr(v.Seq), datamodel.AvailableAttr(v.Seq)} {
			n, ok := it.Nums[attr]
			if !ok || n != 0 {
				t.Fatalf("bucket %s = %d (present %v), want a zero bucket", attr, n, ok)
			}
		}
	}
}

// TestTransitionTable walks the SPEC's product status table row by row.
func TestTransitionTable(t *testing.T) {
	rows := []struct {
		from, action, to string
		noop             bool
	}{
		{catalog.StatusDraft, catalog.Publish, catalog.StatusPublished, false},
		{catalog.StatusPublished, catalog.Publish, catalog.StatusPublished, true},
		{catalog.StatusPublished, catalog.Unpublish, catalog.StatusDraft, false},
		{catalog.StatusDraft, catalog.Unpublish, catalog.StatusDraft, true},
		{catalog.StatusDraft, catalog.Archive, catalog.StatusArchived, false},
		{catalog.StatusPublished, catalog.Archive, catalog.StatusArchived, false},
		{catalog.StatusArchived, catalog.Archive, catalog.StatusArchived, true},
		{catalog.StatusArchived, catalog.Restore, catalog.StatusDraft, false},
		{catalog.StatusDraft, catalog.Restore, catalog.StatusDraft, true},
	}
	for _, r := range rows {
		t.Run(r.from+"_"+r.action, func(t *testing.T) {
			f := newFixture(t, nil)
			ctx := context.Background()
			p := f.reach(t, "mug", r.from)
			// Stock on the item: no transition may touch it.
			k := datamodel.ProductKey(vendorID, p.ID)
			if err := f.Store.Transact(ctx, store.Add(k, map[string]int64{datamodel.OnHandAttr(0): 7, datamodel.AvailableAttr(0): 7}, 0, store.Cond{Exists: true})); err != nil {
				t.Fatal(err)
			}
			_, before := f.load(t, p.ID)
			f.Clock.Advance(time.Minute)

			got, err := f.svc.Transition(ctx, vendorID, p.ID, r.action, catalog.Transition{ExpectedRevision: p.Revision})
			if err != nil {
				t.Fatalf("%s a %s product: %v", r.action, r.from, err)
			}
			stored, after := f.load(t, p.ID)
			if got.Status != r.to || stored.Status != r.to {
				t.Fatalf("status returned %s stored %s, want %s", got.Status, stored.Status, r.to)
			}
			wantRev := p.Revision + 1
			if r.noop {
				wantRev = p.Revision
			}
			if got.Revision != wantRev || stored.Revision != wantRev {
				t.Fatalf("revision returned %d stored %d, want %d", got.Revision, stored.Revision, wantRev)
			}
			if r.noop && !stored.UpdatedAt.Equal(p.UpdatedAt) {
				t.Fatalf("a no-op moved updated_at from %v to %v", p.UpdatedAt, stored.UpdatedAt)
			}
			if !r.noop && !stored.UpdatedAt.Equal(f.Clock.Now()) {
				t.Fatalf("updated_at %v, want the clock's %v", stored.UpdatedAt, f.Clock.Now())
			}
			for _, attr := range []string{datamodel.OnHandAttr(0), datamodel.ReservedAttr(0), datamodel.AvailableAttr(0), datamodel.ItemVersionAttr(0)} {
				if before.Nums[attr] != after.Nums[attr] {
					t.Fatalf("inventory %s changed from %d to %d", attr, before.Nums[attr], after.Nums[attr])
				}
			}
			switch r.to {
			case catalog.StatusPublished:
				if stored.PublishedAt == nil || stored.ArchivedAt != nil {
					t.Fatalf("published: published_at %v archived_at %v", stored.PublishedAt, stored.ArchivedAt)
				}
			case catalog.StatusDraft:
				if stored.PublishedAt != nil || stored.ArchivedAt != nil {
					t.Fatalf("draft: published_at %v archived_at %v, want both null (not published, not archived)", stored.PublishedAt, stored.ArchivedAt)
				}
			case catalog.StatusArchived:
				if stored.ArchivedAt == nil || stored.CatalogStatus() != catalog.CatalogArchived {
					t.Fatalf("archived: archived_at %v catalog_status %s", stored.ArchivedAt, stored.CatalogStatus())
				}
			}
		})
	}
}

// TestTransitionsOutsideTheTable: a (status, action) pair the table has no
// row for is a lifecycle conflict that changes nothing.
func TestTransitionsOutsideTheTable(t *testing.T) {
	for _, r := range []struct{ from, action string }{
		{catalog.StatusArchived, catalog.Publish},
		{catalog.StatusArchived, catalog.Unpublish},
		{catalog.StatusPublished, catalog.Restore},
	} {
		t.Run(r.from+"_"+r.action, func(t *testing.T) {
			f := newFixture(t, nil)
			p := f.reach(t, "mug", r.from)
			_, err := f.svc.Transition(context.Background(), vendorID, p.ID, r.action, catalog.Transition{ExpectedRevision: p.Revision})
			dt.WantCode(t, err, errs.CodeProductState)
			if got, _ := f.load(t, p.ID); got.Status != r.from || got.Revision != p.Revision {
				t.Fatalf("after a refused %s: status %s revision %d, want %s %d", r.action, got.Status, got.Revision, r.from, p.Revision)
			}
		})
	}
}

// TestTransitionStaleRevision: every row needs expected_revision to be the
// current revision, the no-op rows included.
func TestTransitionStaleRevision(t *testing.T) {
	for _, r := range []struct{ from, action string }{
		{catalog.StatusDraft, catalog.Publish},
		{catalog.StatusPublished, catalog.Publish}, // no-op row
		{catalog.StatusArchived, catalog.Restore},
		{catalog.StatusDraft, catalog.Unpublish}, // no-op row
	} {
		t.Run(r.from+"_"+r.action, func(t *testing.T) {
			f := newFixture(t, nil)
			p := f.reach(t, "mug", r.from)
			_, err := f.svc.Transition(context.Background(), vendorID, p.ID, r.action, catalog.Transition{ExpectedRevision: p.Revision - 1})
			dt.WantCode(t, err, errs.CodeRevisionConflict)
			if got, _ := f.load(t, p.ID); got.Status != r.from || got.Revision != p.Revision {
				t.Fatalf("after a stale %s: status %s revision %d", r.action, got.Status, got.Revision)
			}
		})
	}
}

// TestPublishNeedsCompleteDraft: "draft is complete" is the publish row's
// condition.
func TestPublishNeedsCompleteDraft(t *testing.T) {
	cases := map[string]string{
		"no description": `{"kind":"simple","name":"Mug","slug":"mug","description":"","price":1,"category":"kitchen","subcategory":"","image_urls":["https://img.example/a.webp"],"options":{},"features":[],"related_product_ids":[],"weight_kg":0}`,
		"no category":    `{"kind":"simple","name":"Mug","slug":"mug","description":"d","price":1,"category":"  ","subcategory":"","image_urls":["https://img.example/a.webp"],"options":{},"features":[],"related_product_ids":[],"weight_kg":0}`,
		"no image":       `{"kind":"simple","name":"Mug","slug":"mug","description":"d","price":1,"category":"kitchen","subcategory":"","image_urls":[],"options":{},"features":[],"related_product_ids":[],"weight_kg":0}`,
		"no variation":   `{"kind":"variable","name":"Mug","slug":"mug","description":"d","price":1,"category":"kitchen","subcategory":"","image_urls":["https://img.example/a.webp"],"options":{"size":["S"]},"features":[],"related_product_ids":[],"weight_kg":0}`,
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, nil)
			p := f.create(t, body)
			_, err := f.svc.Transition(context.Background(), vendorID, p.ID, catalog.Publish, catalog.Transition{ExpectedRevision: p.Revision})
			dt.WantCode(t, err, errs.CodeProductIncomplete)
			if got, _ := f.load(t, p.ID); got.Status != catalog.StatusDraft {
				t.Fatalf("status %s after a refused publish", got.Status)
			}
		})
	}
}

// TestPublishWithOnlyRetiredVariations: a variable product whose every
// variation is retired has nothing to sell and is not complete.
func TestPublishWithOnlyRetiredVariations(t *testing.T) {
	f := newFixture(t, nil)
	p := f.create(t, variableBody("shirt"))
	body := updateBody(p, "shirt", []string{catalog.VariationRetired, catalog.VariationRetired})
	in, err := catalog.ParseUpdate([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	p, err = f.svc.Update(context.Background(), vendorID, p.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Transition(context.Background(), vendorID, p.ID, catalog.Publish, catalog.Transition{ExpectedRevision: p.Revision})
	dt.WantCode(t, err, errs.CodeProductIncomplete)
}

// TestIdentityTransitionsNeedBothBindings: archive and restore require both
// current source-authority bindings; publish and unpublish are independent
// of Catalog and base-price authority.
func TestIdentityTransitionsNeedBothBindings(t *testing.T) {
	conn := "conn_store-1"
	masters := catalog.Masters{Catalog: &conn, BasePrice: &conn}
	both := catalog.Bindings{Catalog: new(conn), BasePrice: new(conn)}
	for _, c := range []struct {
		name     string
		action   string
		from     string
		bindings catalog.Bindings
		want     errs.Code // "" for success
	}{
		{"archive without bindings", catalog.Archive, catalog.StatusDraft, catalog.Bindings{}, errs.CodeAuthorityMismatch},
		{"archive with catalog only", catalog.Archive, catalog.StatusDraft, catalog.Bindings{Catalog: new(conn)}, errs.CodeAuthorityMismatch},
		{"archive with base price only", catalog.Archive, catalog.StatusDraft, catalog.Bindings{BasePrice: new(conn)}, errs.CodeAuthorityMismatch},
		{"archive with another connection", catalog.Archive, catalog.StatusDraft, catalog.Bindings{Catalog: new("conn_other"), BasePrice: new(conn)}, errs.CodeAuthorityMismatch},
		{"archive with both", catalog.Archive, catalog.StatusDraft, both, ""},
		{"restore without bindings", catalog.Restore, catalog.StatusArchived, catalog.Bindings{}, errs.CodeAuthorityMismatch},
		{"restore with both", catalog.Restore, catalog.StatusArchived, both, ""},
		{"publish without bindings", catalog.Publish, catalog.StatusDraft, catalog.Bindings{}, ""},
		{"publish with wrong bindings", catalog.Publish, catalog.StatusDraft, catalog.Bindings{Catalog: new("conn_other")}, ""},
		{"unpublish without bindings", catalog.Unpublish, catalog.StatusPublished, catalog.Bindings{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Reach the start state while the service owns everything, then
			// hand authority to the connection.
			a := &switchable{}
			f := newFixture(t, a)
			p := f.reachWith(t, c.from)
			a.m = masters
			got, err := f.svc.Transition(context.Background(), vendorID, p.ID, c.action, catalog.Transition{ExpectedRevision: p.Revision, Authority: c.bindings})
			if c.want == "" {
				if err != nil {
					t.Fatalf("got %v, want success", err)
				}
				if got.Revision != p.Revision+1 {
					t.Fatalf("revision %d, want %d", got.Revision, p.Revision+1)
				}
				return
			}
			dt.WantCode(t, err, c.want)
			if cur, _ := f.load(t, p.ID); cur.Status != c.from || cur.Revision != p.Revision {
				t.Fatalf("a refused %s changed the product: %s rev %d", c.action, cur.Status, cur.Revision)
			}
		})
	}
}

// switchable is an authority whose masters change during a test.
type switchable struct{ m catalog.Masters }

func (s *switchable) Masters(context.Context, string) (catalog.Masters, error) { return s.m, nil }

func (f fixture) reachWith(t *testing.T, status string) catalog.Product {
	return f.reach(t, "mug", status)
}

// TestCheckBindings: a binding matches only the current master, and null
// stands for the service.
func TestCheckBindings(t *testing.T) {
	a, b := "conn_a", "conn_b"
	for _, c := range []struct {
		name string
		m    catalog.Masters
		b    catalog.Bindings
		ok   bool
	}{
		{"service owns, nulls asserted", catalog.Masters{}, catalog.Bindings{}, true},
		{"service owns, connection asserted", catalog.Masters{}, catalog.Bindings{Catalog: &a}, false},
		{"connection owns, null asserted", catalog.Masters{Catalog: &a, BasePrice: &a}, catalog.Bindings{BasePrice: &a}, false},
		{"connection owns, same asserted", catalog.Masters{Catalog: &a, BasePrice: &b}, catalog.Bindings{Catalog: new(a), BasePrice: new(b)}, true},
		{"masters crossed", catalog.Masters{Catalog: &a, BasePrice: &b}, catalog.Bindings{Catalog: &b, BasePrice: &a}, false},
		{"inventory master is not asked", catalog.Masters{Inventory: &a}, catalog.Bindings{}, true},
	} {
		err := catalog.CheckBindings(c.m, c.b)
		if c.ok != (err == nil) {
			t.Errorf("%s: got %v", c.name, err)
		}
		if err != nil && !errs.Is(err, errs.CodeAuthorityMismatch) {
			t.Errorf("%s: got %v, want AUTHORITY_MISMATCH", c.name, err)
		}
	}
	if err := catalog.CheckInventoryBinding(catalog.Masters{Inventory: &a}, nil); !errs.Is(err, errs.CodeAuthorityMismatch) {
		t.Errorf("inventory mastered by a connection, null asserted: got %v", err)
	}
	if err := catalog.CheckInventoryBinding(catalog.Masters{Inventory: &a}, new(a)); err != nil {
		t.Errorf("inventory master asserted: %v", err)
	}
	if err := catalog.CheckInventoryBinding(catalog.Masters{Catalog: &a}, nil); err != nil {
		t.Errorf("service-owned stock pool, null asserted: %v", err)
	}
}
