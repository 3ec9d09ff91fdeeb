package connection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// Authority is the vendor's record of who masters each domain; nil is the
// service. It also counts the service's own active reservations, because
// Stock Pool authority may only move to a channel when there are none.
type Authority struct {
	Catalog   *string   `json:"catalog"`
	BasePrice *string   `json:"base_price"`
	Inventory *string   `json:"inventory"`
	UpdatedAt time.Time `json:"updated_at"`
}

// authState is the authority as read, with what a conditional write needs.
type authState struct {
	Authority
	exists              bool
	version             int64
	serviceReservations int64
}

func decodeAuthority(it store.Item) (authState, error) {
	st := authState{exists: it.PK != ""}
	if !st.exists {
		return st, nil
	}
	st.version, st.serviceReservations = it.Version, it.Nums[datamodel.ServiceReservationsAttr]
	if len(it.Data) > 0 {
		if err := json.Unmarshal(it.Data, &st.Authority); err != nil {
			return authState{}, fmt.Errorf("connection: decode authority: %w", err)
		}
	}
	return st, nil
}

func loadAuthority(ctx context.Context, s store.Store, vendorID string) (authState, error) {
	it, err := s.Get(ctx, datamodel.AuthorityKey(vendorID))
	if errors.Is(err, store.ErrNotFound) {
		return authState{}, nil
	}
	if err != nil {
		return authState{}, err
	}
	return decodeAuthority(it)
}

func flag(p *string) int64 {
	if p != nil {
		return 1
	}
	return 0
}

// op writes next over the state read, conditioned on it being unchanged;
// extra bounds are added to the condition.
func (st authState) op(vendorID string, next Authority, bounds ...store.Bound) (store.Op, error) {
	data, err := json.Marshal(next)
	if err != nil {
		return store.Op{}, fmt.Errorf("connection: encode authority: %w", err)
	}
	k := datamodel.AuthorityKey(vendorID)
	if !st.exists {
		nums := map[string]int64{datamodel.ServiceReservationsAttr: 0, datamodel.InventoryExternalAttr: flag(next.Inventory)}
		if len(bounds) > 0 {
			// A fresh record has no reservations: the bounds hold trivially.
			bounds = nil
		}
		return store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data, Nums: nums}, store.IfAbsent()), nil
	}
	cond := store.IfVersion(st.version)
	cond.Bounds = bounds
	deltas := map[string]int64{datamodel.InventoryExternalAttr: flag(next.Inventory) - flag(st.Inventory)}
	return store.Update(k, data, st.version+1, deltas, cond), nil
}

// Masters reads the vendor's authority for the catalog and inventory rules.
type Masters struct{ Store store.Store }

// Masters implements catalog.Authority.
func (m Masters) Masters(ctx context.Context, vendorID string) (catalog.Masters, error) {
	st, err := loadAuthority(ctx, m.Store, vendorID)
	if err != nil {
		return catalog.Masters{}, err
	}
	fence := store.Check(datamodel.AuthorityKey(vendorID), store.IfAbsent())
	if st.exists {
		fence = store.Check(datamodel.AuthorityKey(vendorID), store.IfVersion(st.version))
	}
	return catalog.Masters{Catalog: st.Catalog, BasePrice: st.BasePrice, Inventory: st.Inventory, Fence: &fence}, nil
}

// Master is one domain's master as the API shows it.
type Master struct {
	Type         string  `json:"type"`
	ConnectionID *string `json:"connection_id"`
}

func masterOf(p *string) Master {
	if p == nil {
		return Master{Type: Moku}
	}
	return Master{Type: "connection", ConnectionID: p}
}

// Pool is one Stock Pool's master.
type Pool struct {
	StockPoolID string `json:"stock_pool_id"`
	Master      Master `json:"master"`
}

// AuthorityView is the vendor authority as the API shows it.
type AuthorityView struct {
	VendorID        string `json:"vendor_id"`
	CatalogMaster   Master `json:"catalog_master"`
	BasePriceMaster Master `json:"base_price_master"`
	InventoryPools  []Pool `json:"inventory_pools"`
}

func (a Authority) view(vendorID string) AuthorityView {
	return AuthorityView{VendorID: vendorID, CatalogMaster: masterOf(a.Catalog), BasePriceMaster: masterOf(a.BasePrice),
		InventoryPools: []Pool{{StockPoolID: "default", Master: masterOf(a.Inventory)}}}
}

// claim moves the claims of connection id to match roles: it takes every
// domain the roles source and gives back every domain they no longer
// source. A domain another connection masters is a conflict.
func (a Authority) claim(id string, r Roles) (Authority, []string) {
	var taken []string
	next := a
	for _, d := range []struct {
		name string
		role string
		cur  **string
	}{
		{"catalog", r.Catalog, &next.Catalog},
		{"base_price", r.BasePrice, &next.BasePrice},
		{"inventory", r.Inventory, &next.Inventory},
	} {
		switch {
		case d.role == Source && *d.cur != nil && **d.cur != id:
			taken = append(taken, fmt.Sprintf("%s is sourced by connection %s", d.name, **d.cur))
		case d.role == Source:
			v := id
			*d.cur = &v
		case *d.cur != nil && **d.cur == id:
			*d.cur = nil
		}
	}
	return next, taken
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// handsInventoryToChannel reports whether next moves the Stock Pool from the
// service to a connection.
func handsInventoryToChannel(prev, next Authority) bool {
	return next.Inventory != nil && !equalPtr(prev.Inventory, next.Inventory)
}

// With is m reading through st, a request's view of the store.
func (m Masters) With(st store.Store) catalog.Authority { return Masters{Store: st} }
