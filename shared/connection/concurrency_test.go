package connection_test

import (
	"context"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
)

// TestConcurrentSourcesClaimOnce: connections created at once that all
// source the Catalog: one claims it, the others are refused, and the
// authority names the one that exists.
func TestConcurrentSourcesClaimOnce(t *testing.T) {
	f := newFixture(t)
	const n = 8
	var wg sync.WaitGroup
	views := make([]connection.View, n)
	results := make([]error, n)
	roles := preset(t, "store_catalog_source")
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			views[i], results[i] = f.create(t, connection.StorePlugin, roles)
		}()
	}
	wg.Wait()
	winner := ""
	for i, err := range results {
		switch {
		case err == nil:
			if winner != "" {
				t.Fatalf("two catalog sources: %s and %s", winner, views[i].ID)
			}
			winner = views[i].ID
		case !errs.Is(err, errs.CodeAuthorityConflict):
			t.Errorf("create %d: %v", i, err)
		}
	}
	if winner == "" {
		t.Fatal("no connection claimed the Catalog")
	}
	a, err := f.svc.Authority(context.Background(), vendorID)
	if err != nil || a.CatalogMaster.ConnectionID == nil || *a.CatalogMaster.ConnectionID != winner {
		t.Fatalf("authority %+v %v, want %s", a, err, winner)
	}
	page, _, _, err := f.svc.List(context.Background(), vendorID, "", 50)
	if err != nil || len(page) != 1 {
		t.Fatalf("%d connections stored, want 1 (%v)", len(page), err)
	}
}
