package app

import (
	"runtime"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/listing"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/stockeffect"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/decoded"
	"github.com/moku/sellerapi/shared/syncjob"
	"github.com/moku/sellerapi/shared/webhook"
)

// Services is every service of a process, each built once, here and only
// here (TestServicesBuiltAtTheRoot): the HTTP handler, the workers, the
// admin commands and the demo receive them. A request calls copies bound
// to its view of the store (httpapi's Call.store); nothing below builds a
// service of its own.
type Services struct {
	// API is what the HTTP handler calls (httpapi.New).
	API httpapi.Services
	// Bulk and Sync are what the job workers call.
	Bulk bulk.Services
	Sync syncjob.Services
	// Vendors and Tokens create the demo vendor and its token; Tokens,
	// which keeps no process cache, also rechecks the jobs' credentials.
	Vendors account.Service
	Tokens  auth.Service
	// Admin runs the administrative commands.
	Admin admin.Service
}

// decodedDocs is how many tokens, vendors and products a process keeps
// decoded between requests (decoded.Cache): each entry is a document's
// bytes, its decoded value and its encoded views, and each cache also
// holds at most 16 MiB of documents and views.
const decodedDocs = 4096

// verifiedTokens is how many tokens a process remembers having
// authenticated (auth.Verified): only those spend a vendor's window and
// read its partition beside their check. An entry is an id, a hash, a
// vendor id and an expiry, so a full set is well under a megabyte.
const verifiedTokens = 4096

// NewServices builds every service of the app once, over st: the app's
// store (New), or in a test a store in front of it. Every event a
// service's transaction writes names the request its context serves, if
// any (event.CausedStore).
func NewServices(a *App, st store.Store) Services {
	st = event.CausedStore{Store: st}
	c, cfg := a.Clock, a.Config
	connections := connection.Service{Store: st, Clock: c}
	conflicts := conflict.Service{Store: st, Clock: c}
	pairings := pairing.Service{Store: st, Clock: c, Connections: connections}
	tokens := auth.Service{Store: st, Clock: c}
	vendors := account.Service{Store: st, Clock: c}
	policy := webhook.Policy{AllowLoopback: cfg.AllowPrivateWebhooks, Resolver: a.WebhookResolver}
	hooks := webhook.Service{Store: st, Clock: c, Secrets: a.Secrets, Policy: policy}
	// Who masters each vendor's Catalog, base price and Stock Pool: its
	// authority record, kept by connections.
	authority := connection.Masters{Store: st}
	products := decoded.New[catalog.Product](decodedDocs)
	catalogs := catalog.Service{Store: st, Clock: c, Authority: authority, Decoded: products}
	// An adjustment's refused claim of authority is recorded (inventory.Fence);
	// its product is read without the authority, which it reads itself.
	inv := inventory.Service{Store: st, Clock: c, Authority: authority, Connections: connections, Conflicts: conflicts,
		Catalog: catalog.Service{Store: st, Clock: c, Decoded: products}}
	return Services{
		API: httpapi.Services{
			Auth:      auth.Service{Store: st, Clock: c, Decoded: auth.NewDecoded(decodedDocs), Verified: auth.NewVerified(verifiedTokens)},
			Discovery: pairings,
			// Rate-window units are taken in growing chunks (ratelimit.Leases):
			// a window costs a few store writes, not one a request.
			Limiter: ratelimit.Limiter{Store: st, Clock: c, Reads: cfg.RateReads, Writes: cfg.RateWrites, Leases: ratelimit.NewLeases()},
			Keeper:  idempotency.Keeper{Store: st, Clock: c, Secrets: a.Secrets},

			Catalog:      catalogs,
			Inventory:    inv,
			Connections:  connections,
			Reservations: reservation.Service{Store: st, Clock: c},
			Media: media.Service{Store: st, Blob: a.Blob, Encode: a.MediaEncode, Clock: c, BaseURL: cfg.MediaURL(),
				Budget: media.Budget{Bytes: cfg.MediaBudgetBytes, Objects: cfg.MediaBudgetObjects},
				Gate:   media.NewGate(cfg.MediaDecodeBytes, decodeSlots()), StoreTimeout: cfg.StoreTimeout, DecodeTimeout: cfg.MediaDecodeTimeout},
			Effects:      stockeffect.Service{Store: st},
			Listings:     listing.Service{Store: st, Clock: c},
			ExtOrders:    extorder.Service{Store: st, Clock: c, Conflicts: conflicts},
			Conflicts:    conflicts,
			SellerOrders: sellerorder.Service{Store: st, Clock: c},
			Pairings:     pairings,
			Bulk:         bulk.Service{Store: st, Clock: c},
			SyncJobs:     syncjob.Service{Store: st, Clock: c, Connections: connections},
			Webhooks:     hooks,
			Events:       event.Log{Store: st},
			Tester:       webhook.Deliverer{Clock: c, Policy: policy, Log: a.Log, Secrets: a.Secrets, AWS: a.WebhookAWS},
		},
		// A bulk operation's records spend the vendor's window of writes
		// directly, not from the HTTP path's leases.
		Bulk:    bulk.Services{Limiter: ratelimit.Limiter{Store: st, Clock: c, Writes: cfg.RateWrites}, Inventory: inv, Tokens: tokens},
		Sync:    syncjob.Services{Pairings: pairings, Inventory: inv, Conflicts: conflicts, Tokens: tokens},
		Vendors: vendors,
		Tokens:  tokens,
		Admin: admin.Service{Store: st, Clock: c, Secrets: a.Secrets, Log: a.Log,
			Vendors: vendors, Tokens: tokens, Pairings: pairings, Webhooks: hooks, Catalog: catalogs},
	}
}

// decodeSlots is the decodes a process runs at once: its cores, and at
// least two, so that with one vendor's share (half the slots) taken another
// vendor's upload still finds one (media.Gate).
func decodeSlots() int { return max(2, runtime.GOMAXPROCS(0)) }
