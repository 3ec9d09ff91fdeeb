package connection_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

const vendorID = "ven_1"

type fixture struct {
	svc   connection.Service
	store *sqlite.Store
	clock *clock.Fake
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c := clocktest.Fake(2026, 5, 3, 11, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return fixture{svc: connection.Service{Store: st, Clock: c}, store: st, clock: c}
}

// create stores a connection as the HTTP layer does.
func (f fixture) create(t *testing.T, provider string, roles connection.Roles) (connection.View, error) {
	t.Helper()
	ctx := context.Background()
	prep, err := f.svc.PrepareCreate(ctx, vendorID, connection.CreateInput{
		Provider: provider, ExternalAccountID: "acct-1", DisplayName: "Shop", Roles: roles})
	v, ops, conflict := prep.View, prep.Ops, prep.Explain
	if err != nil {
		return connection.View{}, err
	}
	if err := f.store.Transact(ctx, ops...); err != nil {
		if ce, ok := store.AsCondition(err); ok {
			return connection.View{}, conflict(ce)
		}
		return connection.View{}, err
	}
	return v, nil
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
	if err := f.store.Transact(context.Background(), store.Add(datamodel.ConnectionKey(vendorID, id), map[string]int64{attr: delta}, 0, store.Cond{Exists: true})); err != nil {
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
var noRoles = connection.Roles{Catalog: connection.Destination, BasePrice: connection.Destination,
	Inventory: connection.Destination, OrderIngress: connection.Enabled, ExternalOrderFulfillment: connection.Moku}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}
