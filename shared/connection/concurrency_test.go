package connection_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
)

// TestConcurrentSourcesClaimOnce: connections created at once that all
// source the Catalog: one claims it, the others are refused, and the
// authority names the one that exists.
func TestConcurrentSourcesClaimOnce(t *testing.T) {
	f := newFixture(t)
	const n = 8
	views := make([]connection.View, n)
	roles := preset(t, "store_catalog_source")
	results := dt.Race(n, func(i int) (err error) {
		views[i], err = f.create(t, connection.StorePlugin, roles)
		return err
	})
	won := dt.Succeeded(t, results, errs.CodeAuthorityConflict)
	if len(won) != 1 {
		t.Fatalf("creates %v claimed the Catalog, want exactly one", won)
	}
	winner := views[won[0]].ID
	a, err := f.svc.Authority(context.Background(), vendorID)
	if err != nil || a.CatalogMaster.ConnectionID == nil || *a.CatalogMaster.ConnectionID != winner {
		t.Fatalf("authority %+v %v, want %s", a, err, winner)
	}
	page, err := f.svc.List(context.Background(), vendorID, "", 50)
	if err != nil || len(page.Items) != 1 {
		t.Fatalf("%d connections stored, want 1 (%v)", len(page.Items), err)
	}
}
