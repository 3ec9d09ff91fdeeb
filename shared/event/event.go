// Package event is the vendor's durable event log: every relevant change
// writes one event item in the same transaction as the change (an outbox),
// kept for 90 days. An event names the resource that changed and carries a
// little metadata; it is a hint to read the resource, never a snapshot.
package event

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Retention is how long events are kept.
const Retention = 90 * 24 * time.Hour

// Types of events. docs/events.md describes each.
const (
	ProductCreated        = "product.created"
	ProductUpdated        = "product.updated"
	ProductPublished      = "product.published"
	ProductUnpublished    = "product.unpublished"
	ProductArchived       = "product.archived"
	ProductRestored       = "product.restored"
	InventoryItemAdjusted = "inventory_item.adjusted"

	ConnectionCreated       = "connection.created"
	ConnectionPaused        = "connection.paused"
	ConnectionResumed       = "connection.resumed"
	ConnectionDisconnected  = "connection.disconnected"
	ConnectionRolesReplaced = "connection.roles_replaced"

	ReservationCreated   = "reservation.created"
	ReservationRenewed   = "reservation.renewed"
	ReservationCommitted = "reservation.committed"
	ReservationReleased  = "reservation.released"
	ReservationExpired   = "reservation.expired"

	ListingCreated   = "listing.created"
	ListingUpdated   = "listing.updated"
	ListingActivated = "listing.activated"
	ListingPaused    = "listing.paused"
	ListingResumed   = "listing.resumed"
	ListingEnded     = "listing.ended"

	ExternalOrderImported     = "external_order.imported"
	ExternalOrderReserved     = "external_order.reserved"
	ExternalOrderUnreservable = "external_order.unreservable"
	ExternalOrderCommitted    = "external_order.committed"
	ExternalOrderCancelled    = "external_order.cancelled"
	ExternalOrderRejected     = "external_order.rejected"
	ExternalOrderFulfilled    = "external_order.fulfilled"

	SellerOrderShipped   = "seller_order.shipped"
	SellerOrderCancelled = "seller_order.cancelled"

	WebhookSubscriptionCreated  = "webhook_subscription.created"
	WebhookSubscriptionUpdated  = "webhook_subscription.updated"
	WebhookSubscriptionDeleted  = "webhook_subscription.deleted"
	WebhookSubscriptionDisabled = "webhook_subscription.disabled"
	// WebhookSubscriptionTest is only ever sent by POST .../test, never
	// written to the log.
	WebhookSubscriptionTest = "webhook_subscription.test"
	// WebhookSubscriptionFailing announces a failure streak, once per
	// streak, well before a disable.
	WebhookSubscriptionFailing = "webhook_subscription.failing"
	EventReplayCompleted       = "event_replay.completed"
	// WebhookRecoveryCompleted ends a recovery (POST .../recover).
	WebhookRecoveryCompleted = "webhook_recovery.completed"

	BulkOperationCompleted = "bulk_operation.completed"

	StorePairingCreated    = "store_pairing.created"
	StorePairingExchanged  = "store_pairing.exchanged"
	StorePairingDiscovered = "store_pairing.discovered"
	StorePairingAccepted   = "store_pairing.accepted"
	StorePairingReviewed   = "store_pairing.reviewed"
	StorePairingRevoked    = "store_pairing.revoked"

	SyncJobCompleted = "sync_job.completed"

	ConflictOpened    = "conflict.opened"
	ConflictResolved  = "conflict.resolved"
	ConflictDismissed = "conflict.dismissed"
)

// Types lists every event type the service emits.
func Types() []string {
	return []string{ProductCreated, ProductUpdated, ProductPublished, ProductUnpublished,
		ProductArchived, ProductRestored, InventoryItemAdjusted,
		ConnectionCreated, ConnectionPaused, ConnectionResumed, ConnectionDisconnected, ConnectionRolesReplaced,
		ReservationCreated, ReservationRenewed, ReservationCommitted, ReservationReleased, ReservationExpired,
		ListingCreated, ListingUpdated, ListingActivated, ListingPaused, ListingResumed, ListingEnded,
		ExternalOrderImported, ExternalOrderReserved, ExternalOrderUnreservable, ExternalOrderCommitted, ExternalOrderCancelled, ExternalOrderRejected, ExternalOrderFulfilled,
		SellerOrderShipped, SellerOrderCancelled,
		WebhookSubscriptionCreated, WebhookSubscriptionUpdated, WebhookSubscriptionDeleted, WebhookSubscriptionDisabled, WebhookSubscriptionFailing, WebhookSubscriptionTest, EventReplayCompleted, WebhookRecoveryCompleted,
		BulkOperationCompleted,
		StorePairingCreated, StorePairingExchanged, StorePairingDiscovered, StorePairingAccepted, StorePairingReviewed, StorePairingRevoked,
		SyncJobCompleted, ConflictOpened, ConflictResolved, ConflictDismissed}
}

// Resource names what changed.
type Resource struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// Request names the API request whose transaction wrote an event.
type Request struct {
	ID string `json:"id"`
	// IdempotencyKey is the request's Idempotency-Key; nil when it sent
	// none.
	IdempotencyKey *string `json:"idempotency_key"`
}

// Event is one entry of the log.
type Event struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	CreatedAt time.Time      `json:"created_at"`
	VendorID  string         `json:"vendor_id"`
	Resource  Resource       `json:"resource"`
	Data      map[string]any `json:"data"`
	// Request is the request that caused the event; nil (null) for what
	// the service did by itself (an expiry, a worker's step, a delivery).
	Request *Request `json:"request"`
}

// New makes an event of typ about a resource.
func New(now time.Time, vendorID, typ, resourceType, resourceID string, data map[string]any) Event {
	if data == nil {
		data = map[string]any{}
	}
	return Event{ID: ids.Sortable("evt", now), Type: typ, CreatedAt: now, VendorID: vendorID,
		Resource: Resource{Type: resourceType, ID: resourceID}, Data: data}
}

// Op is the transaction operation that appends e to the log.
func Op(e Event) (store.Op, error) {
	data, err := store.Marshal(e)
	if err != nil {
		return store.Op{}, fmt.Errorf("event: encode %s: %w", e.Type, err)
	}
	k := datamodel.EventKey(e.VendorID, e.ID)
	return store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data,
		ExpiresAt: e.CreatedAt.Add(Retention).Unix()}, store.IfAbsent()), nil
}

// Caused stamps the events among ops with the request ctx serves: its id
// (ids.RequestID) and Idempotency-Key (ids.IdempotencyKey). Work no
// request started (no request id in ctx) leaves them as they are, null.
// Every event a request writes is stamped where its transaction is
// committed (CausedStore), so no writer can forget it.
func Caused(ctx context.Context, ops []store.Op) ([]store.Op, error) {
	rid := ids.RequestID(ctx)
	if rid == nil {
		return ops, nil
	}
	var out []store.Op
	for i, op := range ops {
		if op.Kind != store.OpPut || !strings.HasPrefix(op.Item.SK, datamodel.EventPrefix) {
			continue
		}
		e, err := Decode(op.Item)
		if err != nil {
			return nil, err
		}
		if e.Request != nil {
			continue
		}
		e.Request = &Request{ID: *rid, IdempotencyKey: ids.IdempotencyKey(ctx)}
		data, err := store.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("event: encode %s: %w", e.Type, err)
		}
		if out == nil {
			out = slices.Clone(ops)
		}
		out[i].Item.Data = data
	}
	if out == nil {
		return ops, nil
	}
	return out, nil
}

// CausedStore is a store whose transactions stamp the events they write
// with the request their context serves (Caused).
type CausedStore struct{ store.Store }

// Transact stamps ops' events and commits them.
func (s CausedStore) Transact(ctx context.Context, ops ...store.Op) error {
	ops, err := Caused(ctx, ops)
	if err != nil {
		return err
	}
	return s.Store.Transact(ctx, ops...)
}

// Decode reads an event item.
func Decode(it store.Item) (Event, error) {
	var e Event
	if err := json.Unmarshal(it.Data, &e); err != nil {
		return Event{}, fmt.Errorf("event: decode %s: %w", it.SK, err)
	}
	return e, nil
}
