package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// interleaving runs a hook, once, just before the first transaction that
// the trigger picks: a change that lands between a write's reads and its
// commit.
type interleaving struct {
	store.Store
	mu      sync.Mutex
	trigger func([]store.Op) bool
	hook    func()
}

func (s *interleaving) arm(trigger func([]store.Op) bool, hook func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trigger, s.hook = trigger, hook
}

func (s *interleaving) Transact(ctx context.Context, ops ...store.Op) error {
	s.mu.Lock()
	var hook func()
	if s.trigger != nil && s.trigger(ops) {
		hook, s.trigger, s.hook = s.hook, nil, nil
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return s.Store.Transact(ctx, ops...)
}

// touches picks a transaction that writes the key with a document or
// deltas (an adjustment's add, a product update).
func touches(k store.Key) func([]store.Op) bool {
	return func(ops []store.Op) bool {
		for _, op := range ops {
			if op.Item.Key() == k && op.Kind != store.OpCheck {
				return true
			}
		}
		return false
	}
}

// TestAuthorityFencesWrites reproduces finding 4 of issue 17: an
// adjustment or product update decided with the service as master used to
// commit after PUT /connections/{id}/roles had handed the domain to a
// channel in between. The write now carries a condition on the authority
// record: it is decided again and refused with AUTHORITY_MISMATCH, and
// nothing moves.
func TestAuthorityFencesWrites(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		var st *interleaving
		e := apitest.New(t, apitest.Options{Store: kind,
			WrapStore: func(s store.Store) store.Store { st = &interleaving{Store: s}; return st },
			Config:    func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, 1<<20 }})
		p := mustCreate(t, e, "fence-product", simpleProduct("fence"))
		item := catalog.InventoryItemID(p.Data.ID, 0)
		conn := mustConnection(t, e, "fence-conn", connectionBody("marketplace_a", destinationRoles))
		handOver := func(roles map[string]string, version int64) func() {
			return func() {
				r := e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + conn.Data.ID + "/roles", Token: e.Token,
					Body: map[string]any{"expected_version": version, "roles": roles}})
				if r.Status != http.StatusOK {
					t.Errorf("roles change in between: %d %s", r.Status, r.Body)
				}
			}
		}

		// The Stock Pool goes to the channel between the adjustment's reads and its commit.
		inventorySource := map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "source",
			"order_ingress": "enabled", "external_order_fulfillment": "moku"}
		st.arm(touches(datamodel.ProductKey(e.Vendor.ID, p.Data.ID)), handOver(inventorySource, conn.Data.Version))
		adjust(e, item, "fence-adjust-1", map[string]any{"target_on_hand": 7, "expected_version": 1}).WantProblem(t, http.StatusConflict, "AUTHORITY_MISMATCH")
		if oh, v := itemState(t, e, item); oh != 0 || v != 1 {
			t.Fatalf("on_hand %d version %d after a fenced adjustment", oh, v)
		}
		if _, _, i := masters(t, e); i != conn.Data.ID {
			t.Fatalf("inventory master %q", i)
		}

		// The catalog goes to the channel between the update's reads and its commit.
		update := simpleProduct("fence")
		update["name"], update["expected_revision"] = "Renamed while handed over", 1
		st.arm(touches(datamodel.ProductKey(e.Vendor.ID, p.Data.ID)), handOver(sourceRoles, conn.Data.Version+1))
		r := e.Do(apitest.Req{Method: http.MethodPatch, Path: "/vendors/" + e.Vendor.ID + "/products/" + p.Data.ID, Token: e.Token, Body: update})
		r.WantProblem(t, http.StatusConflict, "AUTHORITY_MISMATCH")
		var got struct {
			Data struct {
				Name     string
				Revision int64
			}
		}
		e.Get("/vendors/"+e.Vendor.ID+"/products/"+p.Data.ID).JSON(t, &got)
		if got.Data.Revision != 1 || got.Data.Name == "Renamed while handed over" {
			t.Fatalf("a fenced update committed: revision %d name %q", got.Data.Revision, got.Data.Name)
		}
		if c, _, _ := masters(t, e); c != conn.Data.ID {
			t.Fatalf("catalog master %q", c)
		}
		// With the channel's binding the same writes go through.
		if r := adjust(e, item, "fence-adjust-2", map[string]any{"target_on_hand": 7, "expected_version": 1, "authority_connection_id": conn.Data.ID}); r.Status != http.StatusOK {
			t.Fatalf("adjust with the binding: %d %s", r.Status, r.Body)
		}
		update["catalog_authority_connection_id"], update["base_price_authority_connection_id"] = conn.Data.ID, conn.Data.ID
		if r := e.Do(apitest.Req{Method: http.MethodPatch, Path: "/vendors/" + e.Vendor.ID + "/products/" + p.Data.ID, Token: e.Token, Body: update}); r.Status != http.StatusOK {
			t.Fatalf("update with the bindings: %d %s", r.Status, r.Body)
		}
	})
}
