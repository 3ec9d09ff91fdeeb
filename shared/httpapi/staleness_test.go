package httpapi_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestEmbeddedReadsAreNeverStale is the bound docs/decisions.md promises
// for what the embedded server keeps between requests (decoded documents,
// items read while nothing was committed): none. A token revoked by the
// server itself or by another process on the same data directory (the
// CLI) is refused on its very next request, an expired one on the first
// request past its expiry by the injected clock, and a vendor changed by
// another process is answered changed on the next request.
func TestEmbeddedReadsAreNeverStale(t *testing.T) {
	var raw *sqlite.Store
	e := apitest.New(t, apitest.Options{Store: apitest.SQLite, WrapStore: func(s store.Store) store.Store {
		raw = s.(*sqlite.Store)
		return s
	}})
	other := openBeside(t, e, raw)
	ctx := context.Background()
	here := auth.Service{Store: e.Store, Clock: e.Clock}
	there := auth.Service{Store: other, Clock: e.Clock}
	vendor := "/vendors/" + e.Vendor.ID
	warm := func(token string) {
		t.Helper()
		for range 3 {
			if r := e.Do(apitest.Req{Path: vendor, Token: token}); r.Status != 200 {
				t.Fatalf("live token: %d %s", r.Status, r.Body)
			}
		}
	}

	for name, revoker := range map[string]auth.Service{"this process": here, "another process": there} {
		tok, err := here.Issue(ctx, e.Vendor.ID, auth.AllScopes(), 0)
		if err != nil {
			t.Fatal(err)
		}
		warm(tok.Token)
		if _, err := revoker.Revoke(ctx, tok.ID); err != nil {
			t.Fatal(err)
		}
		if r := e.Do(apitest.Req{Path: vendor, Token: tok.Token}); r.Status != 401 {
			t.Fatalf("revoked by %s: the next request answered %d", name, r.Status)
		}
	}

	expiring, err := here.Issue(ctx, e.Vendor.ID, auth.AllScopes(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	warm(expiring.Token)
	e.Clock.Advance(time.Hour)
	e.Do(apitest.Req{Path: vendor, Token: expiring.Token}).WantProblem(t, 401, "UNAUTHENTICATED")

	// Another process renames the vendor; the next read answers the name.
	warm(e.Token)
	it, err := other.Get(ctx, datamodel.VendorKey(e.Vendor.ID))
	if err != nil {
		t.Fatal(err)
	}
	v, err := account.Decode(it)
	if err != nil {
		t.Fatal(err)
	}
	v.Name = "Renamed Elsewhere"
	b, _ := json.Marshal(v)
	if err := other.Transact(ctx, store.Put(store.Item{PK: it.PK, SK: it.SK, Version: it.Version + 1, Data: b}, store.IfVersion(it.Version))); err != nil {
		t.Fatal(err)
	}
	var got struct{ Data account.View }
	r := e.Do(apitest.Req{Path: vendor, Token: e.Token})
	if r.JSON(t, &got); got.Data.Name != "Renamed Elsewhere" {
		t.Fatalf("after another process's rename: %s", r.Body)
	}
}

// openBeside opens a second store on the data directory of e's embedded
// store, as a second process would.
func openBeside(t *testing.T, e *apitest.Env, raw *sqlite.Store) *sqlite.Store {
	t.Helper()
	var seq int
	var name, file string
	if err := raw.DB().QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(filepath.Dir(file), sqlite.WithClock(e.Clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
