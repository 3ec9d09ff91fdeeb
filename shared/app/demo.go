package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/vendor"
)

// demoMarker records that a store was given its demo vendor, so only the
// very first start of an empty store creates one.
var demoMarker = store.Key{PK: "META", SK: "DEMO"}

// Demo is what the first start of an empty store creates.
type Demo struct {
	Vendor vendor.Vendor
	Token  auth.Issued
}

// EnsureDemo creates a demo vendor and a token with every scope the first
// time it runs against a store; later it returns ok false. Concurrent first
// starts create one demo between them.
func (a *App) EnsureDemo(ctx context.Context) (d Demo, ok bool, err error) {
	data, _ := json.Marshal(map[string]time.Time{"claimed_at": a.Clock.Now()})
	err = a.Store.Transact(ctx, store.Put(store.Item{PK: demoMarker.PK, SK: demoMarker.SK, Version: 1, Data: data}, store.IfAbsent()))
	if store.IsCondition(err) {
		return Demo{}, false, nil
	}
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: claim demo: %w", err)
	}
	v, err := vendor.Service{Store: a.Store, Clock: a.Clock}.Create(ctx, "Demo Vendor", "demo-vendor")
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: demo vendor: %w", err)
	}
	tok, err := auth.Service{Store: a.Store, Clock: a.Clock}.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: demo token: %w", err)
	}
	return Demo{Vendor: v, Token: tok}, true, nil
}
