package connection_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// TestPresets is the SPEC's role preset table for the store-plugin channel.
func TestPresets(t *testing.T) {
	for _, row := range []struct {
		name                           string
		catalogAndBasePrice, inventory string
	}{
		{"service_source", connection.Destination, connection.Destination},
		{"store_catalog_source", connection.Source, connection.Destination},
		{"store_source", connection.Source, connection.Source},
	} {
		r := preset(t, row.name)
		if r.Catalog != row.catalogAndBasePrice || r.BasePrice != row.catalogAndBasePrice || r.Inventory != row.inventory || r.OrderIngress != connection.Enabled {
			t.Errorf("%s = %+v, want catalog and base price %s, inventory %s, ingress enabled", row.name, r, row.catalogAndBasePrice, row.inventory)
		}
		if f := r.ExternalOrderFulfillment; f != connection.Moku && f != connection.Channel {
			t.Errorf("%s: fulfillment %q is not one of the allowed values", row.name, f)
		}
	}
	if names := connection.PresetNames(); len(names) != 3 {
		t.Errorf("PresetNames = %v", names)
	}
	if _, ok := connection.Preset("everything_source"); ok {
		t.Error("an unknown preset resolved")
	}
	if n := len(connection.Providers()); n != 6 {
		t.Errorf("%d providers, want six", n)
	}
}

// TestSourceRolesClaimAuthority: a source role claims Authority, a
// destination role never does; a domain has one source.
func TestSourceRolesClaimAuthority(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a, err := f.svc.Authority(ctx, vendorID)
	if err != nil {
		t.Fatal(err)
	}
	if a.CatalogMaster.Type != connection.Moku || a.CatalogMaster.ConnectionID != nil || len(a.InventoryPools) != 1 || a.InventoryPools[0].StockPoolID != "default" {
		t.Fatalf("authority of a vendor without connections: %+v", a)
	}

	f.mustCreate(t, connection.StorePlugin, preset(t, "service_source"))
	if a, _ = f.svc.Authority(ctx, vendorID); a.CatalogMaster.ConnectionID != nil || a.BasePriceMaster.ConnectionID != nil || a.InventoryPools[0].Master.ConnectionID != nil {
		t.Fatalf("destination roles claimed authority: %+v", a)
	}

	c := f.mustCreate(t, connection.StorePlugin, preset(t, "store_catalog_source"))
	a, _ = f.svc.Authority(ctx, vendorID)
	if a.CatalogMaster.Type != "connection" || *a.CatalogMaster.ConnectionID != c.ID || *a.BasePriceMaster.ConnectionID != c.ID {
		t.Fatalf("catalog and base price after a store_catalog_source connection: %+v", a)
	}
	if a.InventoryPools[0].Master.ConnectionID != nil {
		t.Fatalf("inventory destination claimed the pool: %+v", a.InventoryPools[0])
	}
	m, err := connection.Masters{Store: f.Store}.Masters(ctx, vendorID)
	if err != nil || m.Catalog == nil || *m.Catalog != c.ID || m.Inventory != nil {
		t.Fatalf("Masters = %+v %v", m, err)
	}

	// A second catalog source is refused and changes nothing.
	_, err = f.create(t, connection.StorePlugin, preset(t, "store_source"))
	dt.WantCode(t, err, errs.CodeAuthorityConflict)
	// The inventory alone is still free.
	inv := noRoles
	inv.Inventory = connection.Source
	d := f.mustCreate(t, "marketplace_a", inv)
	a, _ = f.svc.Authority(ctx, vendorID)
	if *a.CatalogMaster.ConnectionID != c.ID || *a.InventoryPools[0].Master.ConnectionID != d.ID {
		t.Fatalf("after an inventory source: %+v", a)
	}
}

// TestInventoryHandoverNeedsNoServiceReservations: handing inventory to a
// channel requires that no service-owned reservations exist.
func TestInventoryHandoverNeedsNoServiceReservations(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.mustCreate(t, connection.StorePlugin, preset(t, "service_source")) // creates no authority record
	// The service holds one reservation.
	if err := f.Store.Transact(ctx, store.Add(datamodel.AuthorityKey(vendorID), map[string]int64{datamodel.ServiceReservationsAttr: 1}, 0, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	_, err := f.create(t, connection.StorePlugin, preset(t, "store_source"))
	dt.WantCode(t, err, errs.CodeAuthorityConflict)
	// Catalog may still move: it holds no stock.
	if _, err := f.create(t, connection.StorePlugin, preset(t, "store_catalog_source")); err != nil {
		t.Fatalf("catalog handover with service reservations: %v", err)
	}
	if err := f.Store.Transact(ctx, store.Add(datamodel.AuthorityKey(vendorID), map[string]int64{datamodel.ServiceReservationsAttr: -1}, 0, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	inv := noRoles
	inv.Inventory = connection.Source
	if _, err := f.create(t, "marketplace_b", inv); err != nil {
		t.Fatalf("inventory handover without reservations: %v", err)
	}
}

// TestReplaceRoles: allowed only when the four counters are zero; moves
// the connection's claims; refuses a second source; a preset only for the
// store plugin.
func TestReplaceRoles(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	c := f.mustCreate(t, connection.StorePlugin, preset(t, "store_source"))
	other := f.mustCreate(t, "marketplace_a", noRoles)

	replace := func(id string, version int64, r connection.Roles) (connection.View, error) {
		return f.svc.ReplaceRoles(ctx, vendorID, id, connection.RolesInput{ExpectedVersion: version, Roles: r})
	}
	// Another connection cannot take what c sources.
	src := noRoles
	src.Inventory = connection.Source
	_, err := replace(other.ID, other.Version, src)
	dt.WantCode(t, err, errs.CodeAuthorityConflict)

	for _, attr := range []string{datamodel.ActiveListingsAttr, datamodel.ActiveReservationsAttr, datamodel.UnresolvedOrdersAttr, datamodel.ChannelFulfillmentsAttr} {
		t.Run("busy "+attr, func(t *testing.T) {
			f.count(t, c.ID, attr, 1)
			_, err := replace(c.ID, c.Version, preset(t, "service_source"))
			dt.WantCode(t, err, errs.CodeConnectionBusy)
			f.count(t, c.ID, attr, -1)
		})
	}
	_, err = replace(c.ID, c.Version+1, preset(t, "service_source"))
	dt.WantCode(t, err, errs.CodeConnectionVersion)

	v, err := replace(c.ID, c.Version, preset(t, "store_catalog_source"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != c.Version+1 || v.Roles != preset(t, "store_catalog_source") {
		t.Fatalf("after replacing: %+v", v)
	}
	a, _ := f.svc.Authority(ctx, vendorID)
	if a.InventoryPools[0].Master.ConnectionID != nil || *a.CatalogMaster.ConnectionID != c.ID {
		t.Fatalf("claims after giving inventory back: %+v", a)
	}
	// Now the other connection may source inventory.
	if _, err := replace(other.ID, other.Version, src); err != nil {
		t.Fatalf("taking the freed inventory: %v", err)
	}
	// Unchanged roles are a no-op.
	same, err := replace(c.ID, v.Version, v.Roles)
	if err != nil || same.Version != v.Version {
		t.Fatalf("unchanged roles: version %d err %v", same.Version, err)
	}

	in, err := connection.ParseRoles([]byte(`{"expected_version":1,"roles":"store_source"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ReplaceRoles(ctx, vendorID, other.ID, in)
	dt.WantCode(t, err, errs.CodeInvalidRequest)
}
