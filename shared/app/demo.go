package app

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// demoMarker records that a store was given its demo vendor, so that two
// first starts of one empty store create one demo between them.
var demoMarker = datamodel.DemoKey()

// Demo is what the first start of an empty store creates.
type Demo struct {
	Vendor account.Vendor
	Token  auth.Issued
}

// EnsureDemo creates a demo vendor and a token with every scope when the
// store holds no vendor at all; otherwise (a vendor created by hand, or a
// demo made before) it returns ok false. Concurrent first starts create one
// demo between them: the marker is claimed only on an empty store.
func (a *App) EnsureDemo(ctx context.Context) (d Demo, ok bool, err error) {
	if any, err := account.Any(ctx, a.Store); err != nil {
		return Demo{}, false, fmt.Errorf("app: demo: %w", err)
	} else if any {
		return Demo{}, false, nil
	}
	data, _ := json.Marshal(map[string]time.Time{"claimed_at": a.Clock.Now()})
	err = a.Store.Transact(ctx, store.Put(store.Item{PK: demoMarker.PK, SK: demoMarker.SK, Version: 1, Data: data}, store.IfAbsent()))
	if store.IsCondition(err) {
		return Demo{}, false, nil
	}
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: claim demo: %w", err)
	}
	v, err := a.Services.Vendors.Create(ctx, "Demo Vendor", "demo-vendor")
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: demo vendor: %w", err)
	}
	tok, err := a.Services.Tokens.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		return Demo{}, false, fmt.Errorf("app: demo token: %w", err)
	}
	return Demo{Vendor: v, Token: tok}, true, nil
}
