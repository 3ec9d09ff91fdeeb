package connection_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/store"
)

const vendorID = dt.VendorID

type fixture struct {
	dt.Env
	svc connection.Service
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	e := dt.New(t, 2026, 5, 3, 11, 0, 0)
	return fixture{Env: e, svc: connection.Service{Store: e.Store, Clock: e.Clock}}
}

// create stores a connection as the HTTP layer does.
func (f fixture) create(t *testing.T, provider string, roles connection.Roles) (connection.View, error) {
	t.Helper()
	p, err := f.svc.PrepareCreate(context.Background(), vendorID, connection.CreateInput{
		Provider: provider, ExternalAccountID: "acct-1", DisplayName: "Shop", Roles: roles})
	return dt.Run(f.Env, p, err)
}

func (f fixture) mustCreate(t *testing.T, provider string, roles connection.Roles) connection.View {
	t.Helper()
	v, err := f.create(t, provider, roles)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return v
}

func (f fixture) load(t *testing.T, id string) connection.Connection {
	t.Helper()
	c, _, _, err := f.svc.Get(context.Background(), vendorID, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// count moves one of a connection's counters, as the work it counts does.
func (f fixture) count(t *testing.T, id, attr string, delta int64) {
	t.Helper()
	if err := f.Store.Transact(context.Background(), store.Add(datamodel.ConnectionKey(vendorID, id), map[string]int64{attr: delta}, 0, store.Cond{Exists: true})); err != nil {
		t.Fatal(err)
	}
}

func preset(t *testing.T, name string) connection.Roles {
	t.Helper()
	r, ok := connection.Preset(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	return r
}

// noRoles sources nothing.
var noRoles = dt.Destination()
