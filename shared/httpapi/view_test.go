package httpapi

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
)

// baseStore is the process's store in these tests: it records the writes
// that reach it.
type baseStore struct {
	store.Store
	writes int
}

func (b *baseStore) Transact(context.Context, ...store.Op) error {
	b.writes++
	return nil
}

var storeType = reflect.TypeFor[store.Store]()

// stores calls f with the path and value of every store.Store field in v,
// the services a service holds and an authority that reads the store
// included.
func stores(path string, v reflect.Value, f func(path string, st store.Store)) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}
		if v.Type() == storeType {
			f(path, v.Interface().(store.Store))
			return
		}
		stores(path, v.Elem(), f)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				stores(path+"."+v.Type().Field(i).Name, v.Field(i), f)
			}
		}
	}
}

// setStores sets every store.Store field of the struct at v to st.
func setStores(v reflect.Value, st store.Store) {
	for i := range v.NumField() {
		fv := v.Field(i)
		switch {
		case !v.Type().Field(i).IsExported():
		case fv.Type() == storeType:
			fv.Set(reflect.ValueOf(st))
		case fv.Kind() == reflect.Struct:
			setStores(fv, st)
		}
	}
}

// TestServicesBoundToTheView: every service a handler calls is a copy of
// the root's bound to the request's view of the store, down to the
// services it holds and the authority it asks (a store left unbound
// would read past the read-ahead and write before the rate decision); and
// a write through that copy waits for the decision and, refused, never
// reaches the store.
func TestServicesBoundToTheView(t *testing.T) {
	base := &baseStore{}
	var svc Services
	setStores(reflect.ValueOf(&svc).Elem(), base)
	svc.Catalog.Authority = connection.Masters{Store: base}
	svc.Inventory.Authority = connection.Masters{Store: base}
	srv, err := New(Deps{Config: config.Default(), Store: base, CursorKey: make([]byte, 32), Services: svc})
	if err != nil {
		t.Fatal(err)
	}
	ctx, c := srv.newCall(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/vendors", nil), Route{})
	defer c.cancel()

	bound := map[string]any{
		"keeper": c.keeper(), "catalog": c.catalog(), "inventory": c.inventory(), "connections": c.connections(),
		"reservations": c.reservations(), "media": c.media(), "effects": c.effects(), "listings": c.listings(),
		"extorders": c.extorders(), "conflicts": c.conflicts(), "sellerorders": c.sellerorders(), "pairings": c.pairings(),
		"bulk": c.bulkOps(), "syncjobs": c.syncJobs(), "webhooks": c.webhooks(), "events": c.events(),
	}
	for name, s := range bound {
		n := 0
		stores(name, reflect.ValueOf(s), func(path string, st store.Store) {
			n++
			if st != c.store() {
				t.Errorf("%s is %T, not the request's view", path, st)
			}
		})
		if n == 0 {
			t.Errorf("%s holds no store", name)
		}
	}
	// The root's services are left as built.
	stores("root", reflect.ValueOf(srv.svc), func(path string, st store.Store) {
		if st != base {
			t.Errorf("%s was rebound: %T", path, st)
		}
	})

	refused := errors.New("rate window spent")
	c.view.gate = startGate(ctx, func(context.Context) (ratelimit.Status, error) { return ratelimit.Status{}, refused })
	if err := c.catalog().Store.Transact(ctx); !errors.Is(err, refused) {
		t.Fatalf("write through the view: %v, want the refusal", err)
	}
	if base.writes != 0 {
		t.Fatalf("a refused request's write reached the store %d times", base.writes)
	}
	c.view.gate = nil
	if err := c.catalog().Store.Transact(ctx); err != nil || base.writes != 1 {
		t.Fatalf("write without a gate: %v, %d writes", err, base.writes)
	}
}
