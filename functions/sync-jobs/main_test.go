package main

import (
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	lt "github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestServesItsGroup sends the group's sample event through the handler
// main builds, and checks that only this group is mounted.
func TestServesItsGroup(t *testing.T) {
	f := lt.SQLite(t)
	h, err := lambdaapi.New(t.Context(), config.Default(), []httpapi.Group{httpapi.SyncJobs}, app.WithStore(f.Store), app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatal(err)
	}
	vars := f.Vars()
	resp := lt.Invoke(t, h, lt.Event(t, "sync-jobs/list-sync-jobs.json", vars))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200: %s", resp.StatusCode, resp.Body)
	}
	other := lt.Invoke(t, h, lt.Event(t, "products/list-products.json", vars))
	lt.WantProblem(t, other, http.StatusNotFound)
}
