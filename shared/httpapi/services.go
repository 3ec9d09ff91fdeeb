package httpapi

import (
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/listing"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/syncjob"
	"github.com/moku/sellerapi/shared/webhook"
)

// Services are the services the server calls, each built once by the
// process's composition root (app.NewServices) over the process's store;
// the server builds none. Auth, Discovery and Limiter admit requests on
// that store; a request calls every other one as a copy bound to its own
// view of the store (Call.view: its rate decision and what it read
// ahead), made with the service's With.
type Services struct {
	// Auth checks tokens; its Decoded and Verified are the process's
	// caches of tokens and vendors.
	Auth auth.Service
	// Discovery checks store-plugin discovery credentials.
	Discovery pairing.Service
	// Limiter spends the rate windows; its Leases are the process's.
	Limiter ratelimit.Limiter
	Keeper  idempotency.Keeper

	Catalog      catalog.Service
	Inventory    inventory.Service
	Connections  connection.Service
	Reservations reservation.Service
	Media        media.Service
	Effects      stockeffect.Service
	Listings     listing.Service
	ExtOrders    extorder.Service
	Conflicts    conflict.Service
	SellerOrders sellerorder.Service
	Pairings     pairing.Service
	Bulk         bulk.Service
	SyncJobs     syncjob.Service
	// Webhooks holds this deployment's address policy (Policy).
	Webhooks webhook.Service
	Events   event.Log
	// Tester sends a subscription's test delivery.
	Tester webhook.Deliverer
}

// The request's copies of the services, bound to its view of the store.

func (c *Call) keeper() idempotency.Keeper        { return c.s.svc.Keeper.With(c.store()) }
func (c *Call) catalog() catalog.Service          { return c.s.svc.Catalog.With(c.store()) }
func (c *Call) inventory() inventory.Service      { return c.s.svc.Inventory.With(c.store()) }
func (c *Call) connections() connection.Service   { return c.s.svc.Connections.With(c.store()) }
func (c *Call) reservations() reservation.Service { return c.s.svc.Reservations.With(c.store()) }
func (c *Call) media() media.Service              { return c.s.svc.Media.With(c.store()) }
func (c *Call) effects() stockeffect.Service      { return c.s.svc.Effects.With(c.store()) }
func (c *Call) listings() listing.Service         { return c.s.svc.Listings.With(c.store()) }
func (c *Call) extorders() extorder.Service       { return c.s.svc.ExtOrders.With(c.store()) }
func (c *Call) conflicts() conflict.Service       { return c.s.svc.Conflicts.With(c.store()) }
func (c *Call) sellerorders() sellerorder.Service { return c.s.svc.SellerOrders.With(c.store()) }
func (c *Call) pairings() pairing.Service         { return c.s.svc.Pairings.With(c.store()) }
func (c *Call) bulkOps() bulk.Service             { return c.s.svc.Bulk.With(c.store()) }
func (c *Call) syncJobs() syncjob.Service         { return c.s.svc.SyncJobs.With(c.store()) }
func (c *Call) webhooks() webhook.Service         { return c.s.svc.Webhooks.With(c.store()) }
func (c *Call) events() event.Log                 { return c.s.svc.Events.With(c.store()) }
