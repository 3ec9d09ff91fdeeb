// Package connection holds sales-channel connections and the vendor's
// authority: which party (the service or one connection) is the source of
// truth for Catalog, base price and the default Stock Pool.
//
// A connection's roles say what it sources and receives. A source role
// claims the domain's Authority; the vendor's authority record keeps the
// claims so that every write can check them with one read, and every role
// change moves claims with a conditional write, so that no domain ever has
// two sources. The connection's four counters (active listings, active
// reservations, unresolved external orders, active channel fulfillments)
// are numeric attributes of its item, moved by the same transactions that
// change what they count.
package connection

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// Statuses of a connection.
const (
	StatusActive       = "active"
	StatusPaused       = "paused"
	StatusDisconnected = "disconnected"
)

// Providers: one store-plugin platform and five marketplaces. The published
// interface uses brand names; these neutral identifiers stand in for them.
func Providers() []string {
	return []string{"store_plugin", "marketplace_a", "marketplace_b", "marketplace_c", "marketplace_d", "marketplace_e"}
}

// StorePlugin is the provider whose role presets exist.
const StorePlugin = "store_plugin"

// Role values.
const (
	Source      = "source"
	Destination = "destination"
	Disabled    = "disabled"
	Enabled     = "enabled"
	// Service is the service's own value for fulfillment and authority.
	Moku    = "moku"
	Channel = "channel"
)

// Roles says what a connection does for each domain.
type Roles struct {
	Catalog                  string `json:"catalog"`
	BasePrice                string `json:"base_price"`
	Inventory                string `json:"inventory"`
	OrderIngress             string `json:"order_ingress"`
	ExternalOrderFulfillment string `json:"external_order_fulfillment"`
}

// Preset returns the roles a store-plugin preset stands for.
func Preset(name string) (Roles, bool) {
	r, ok := presets()[name]
	return r, ok
}

// PresetNames lists the store-plugin presets.
func PresetNames() []string {
	return []string{"service_source", "store_catalog_source", "store_source"}
}

// presets are the store-plugin shorthands for a role set.
func presets() map[string]Roles {
	return map[string]Roles{
		"service_source":       {Catalog: Destination, BasePrice: Destination, Inventory: Destination, OrderIngress: Enabled, ExternalOrderFulfillment: Moku},
		"store_catalog_source": {Catalog: Source, BasePrice: Source, Inventory: Destination, OrderIngress: Enabled, ExternalOrderFulfillment: Moku},
		"store_source":         {Catalog: Source, BasePrice: Source, Inventory: Source, OrderIngress: Enabled, ExternalOrderFulfillment: Channel},
	}
}

// Health is what the connector last reported about the channel.
type Health struct {
	State          string     `json:"state"`
	LastObservedAt *time.Time `json:"last_observed_at"`
	LastSuccessAt  *time.Time `json:"last_success_at"`
	Blockers       []string   `json:"blockers"`
}

// Health states.
const (
	HealthUnknown  = "unknown"
	HealthHealthy  = "healthy"
	HealthDegraded = "degraded"
	HealthBlocked  = "blocked"
)

// Fields are what a connection is both stored and shown with: the channel
// account it connects, its status and its roles.
type Fields struct {
	ID                string `json:"id"`
	VendorID          string `json:"vendor_id"`
	Provider          string `json:"provider"`
	ExternalAccountID string `json:"external_account_id"`
	DisplayName       string `json:"display_name"`
	Status            string `json:"status"`
	Roles             Roles  `json:"roles"`
}

// Connection is the stored record.
type Connection struct {
	Fields
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"-"`
	Counters  Counters  `json:"-"`
}

// Counters are the connection's live counts.
type Counters struct {
	ActiveListings           int64
	ActiveReservations       int64
	UnresolvedExternalOrders int64
	ActiveChannelFulfillment int64
	// OpenConflicts counts the connection's open conflict records; it is
	// not shown, but blocks role changes and disconnect like the others.
	OpenConflicts int64
}

// View is a connection as the API shows it.
type View struct {
	Fields
	Health                        Health    `json:"health"`
	ActiveListingCount            int64     `json:"active_listing_count"`
	ActiveReservationCount        int64     `json:"active_reservation_count"`
	UnresolvedExternalOrderCount  int64     `json:"unresolved_external_order_count"`
	ActiveChannelFulfillmentCount int64     `json:"active_channel_fulfillment_count"`
	Version                       int64     `json:"version"`
	CreatedAt                     time.Time `json:"created_at"`
	UpdatedAt                     time.Time `json:"updated_at"`
}

// View returns the API representation with health h.
func (c Connection) View(h Health) View {
	if h.Blockers == nil {
		h.Blockers = []string{}
	}
	if h.State == "" {
		h.State = HealthUnknown
	}
	return View{Fields: c.Fields, Health: h,
		ActiveListingCount: c.Counters.ActiveListings, ActiveReservationCount: c.Counters.ActiveReservations,
		UnresolvedExternalOrderCount: c.Counters.UnresolvedExternalOrders, ActiveChannelFulfillmentCount: c.Counters.ActiveChannelFulfillment,
		Version: c.Version, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

// Decode reads a connection item.
func Decode(it store.Item) (Connection, error) {
	c, err := store.Unmarshal(it, "connection", func(c *Connection) *int64 { return &c.Version })
	if err != nil {
		return Connection{}, err
	}
	c.Counters = Counters{ActiveListings: it.Nums[datamodel.ActiveListingsAttr], ActiveReservations: it.Nums[datamodel.ActiveReservationsAttr],
		UnresolvedExternalOrders: it.Nums[datamodel.UnresolvedOrdersAttr], ActiveChannelFulfillment: it.Nums[datamodel.ChannelFulfillmentsAttr],
		OpenConflicts: it.Nums[datamodel.OpenConflictsAttr]}
	return c, nil
}

func decodeHealth(it store.Item) (Health, error) {
	var h Health
	if it.PK == "" {
		return Health{State: HealthUnknown, Blockers: []string{}}, nil
	}
	if err := json.Unmarshal(it.Data, &h); err != nil {
		return Health{}, fmt.Errorf("connection: decode health %s: %w", it.SK, err)
	}
	return h, nil
}

// busy lists the counters that are not zero, for a 409's detail.
func (c Counters) busy() []string {
	var out []string
	for _, x := range []struct {
		name string
		n    int64
	}{
		{"active_listing_count", c.ActiveListings},
		{"active_reservation_count", c.ActiveReservations},
		{"unresolved_external_order_count", c.UnresolvedExternalOrders},
		{"active_channel_fulfillment_count", c.ActiveChannelFulfillment},
	} {
		if x.n != 0 {
			out = append(out, fmt.Sprintf("%s is %d", x.name, x.n))
		}
	}
	if c.OpenConflicts != 0 {
		out = append(out, fmt.Sprintf("%d open conflicts (list them with status=open and this connection_id, then resolve or dismiss them)", c.OpenConflicts))
	}
	return out
}

// idleBounds are the condition that the four counters and the open
// conflicts are zero.
func idleBounds() []store.Bound {
	return []store.Bound{
		{Attr: datamodel.ActiveListingsAttr, Cmp: store.EQ, Value: 0},
		{Attr: datamodel.ActiveReservationsAttr, Cmp: store.EQ, Value: 0},
		{Attr: datamodel.UnresolvedOrdersAttr, Cmp: store.EQ, Value: 0},
		{Attr: datamodel.ChannelFulfillmentsAttr, Cmp: store.EQ, Value: 0},
		{Attr: datamodel.OpenConflictsAttr, Cmp: store.EQ, Value: 0},
	}
}
