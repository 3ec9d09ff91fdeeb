package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// The API's shapes are generated from the OpenAPI document into
// types.gen.go (go generate); this file holds the operations.

// Event is an event: EventEnvelope, the fields every type has. Data's
// shape depends on Type (the document has one schema per type, the
// mapping under #/components/schemas/Event); decode it with DecodeData.
type Event = EventEnvelope

// DecodeData decodes the event's data into v (for example a struct with
// the fields the type's schema lists).
func (e EventEnvelope) DecodeData(v any) error { return json.Unmarshal(e.Data, v) }

func vendorPath(vendorID string) string { return "/vendors/" + url.PathEscape(vendorID) }

// ListVendors lists the vendors granted to the credential (listVendors).
func (c *Client) ListVendors(ctx context.Context) ([]Vendor, error) {
	return fetch[[]Vendor](ctx, c, call{method: http.MethodGet, path: "/vendors"})
}

// GetVendor reads one vendor (getVendor).
func (c *Client) GetVendor(ctx context.Context, vendorID string) (Vendor, error) {
	return fetch[Vendor](ctx, c, call{method: http.MethodGet, path: vendorPath(vendorID)})
}

// CreateProduct creates a draft product (createProduct; idempotent).
func (c *Client) CreateProduct(ctx context.Context, vendorID string, in ProductCreate) (Product, *Response, error) {
	return fetchResponse[Product](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/products", body: in, idempotent: true})
}

// GetProduct reads one product (getProduct).
func (c *Client) GetProduct(ctx context.Context, vendorID, productID string) (Product, error) {
	return fetch[Product](ctx, c, call{method: http.MethodGet, path: vendorPath(vendorID) + "/products/" + url.PathEscape(productID)})
}

// Products iterates the vendor's products (listProducts).
func (c *Client) Products(ctx context.Context, vendorID string) iter.Seq2[Product, error] {
	return list[Product](ctx, c, vendorPath(vendorID)+"/products", url.Values{"limit": {"100"}})
}

// TransitionProduct moves a product: action is publish, unpublish,
// archive or restore (publishProduct, ...), at expectedRevision.
func (c *Client) TransitionProduct(ctx context.Context, vendorID, productID, action string, expectedRevision int64) (Product, error) {
	return fetch[Product](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/products/" + url.PathEscape(productID) + "/" + action,
		body: ProductTransition{ExpectedRevision: expectedRevision}})
}

// InventoryItems iterates the vendor's inventory items (listInventoryItems).
func (c *Client) InventoryItems(ctx context.Context, vendorID string) iter.Seq2[InventoryItem, error] {
	return list[InventoryItem](ctx, c, vendorPath(vendorID)+"/inventory-items", url.Values{"limit": {"100"}})
}

// GetInventoryItem reads one inventory item (getInventoryItem).
func (c *Client) GetInventoryItem(ctx context.Context, vendorID, itemID string) (InventoryItem, error) {
	return fetch[InventoryItem](ctx, c, call{method: http.MethodGet, path: vendorPath(vendorID) + "/inventory-items/" + url.PathEscape(itemID)})
}

// AdjustInventoryItem sets on_hand (adjustInventoryItem; idempotent).
func (c *Client) AdjustInventoryItem(ctx context.Context, vendorID, itemID string, targetOnHand, expectedVersion int64) (InventoryItem, *Response, error) {
	return fetchResponse[InventoryItem](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-items/" + url.PathEscape(itemID) + "/adjustments",
		body: Adjustment{TargetOnHand: targetOnHand, ExpectedVersion: expectedVersion}, idempotent: true})
}

// CreateConnection creates a channel connection (createConnection; idempotent).
func (c *Client) CreateConnection(ctx context.Context, vendorID string, in ConnectionCreate) (Connection, error) {
	return fetch[Connection](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/connections", body: in, idempotent: true})
}

// Connections iterates the vendor's connections (listConnections).
func (c *Client) Connections(ctx context.Context, vendorID string) iter.Seq2[Connection, error] {
	return list[Connection](ctx, c, vendorPath(vendorID)+"/connections", url.Values{"limit": {"100"}})
}

// TransitionConnection moves a connection: action is pause, resume or
// disconnect, at expectedVersion.
func (c *Client) TransitionConnection(ctx context.Context, vendorID, connectionID, action string, expectedVersion int64) (Connection, error) {
	return fetch[Connection](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/connections/" + url.PathEscape(connectionID) + "/" + action,
		body: VersionBody{ExpectedVersion: expectedVersion}})
}

// CreateReservation holds stock (createReservation; idempotent).
func (c *Client) CreateReservation(ctx context.Context, vendorID string, in ReservationCreate) (Reservation, error) {
	return fetch[Reservation](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-reservations", body: in, idempotent: true})
}

// TransitionReservation ends or extends a hold: action is renew, commit
// or release (idempotent), at expectedVersion.
func (c *Client) TransitionReservation(ctx context.Context, vendorID, reservationID, action string, expectedVersion int64) (Reservation, error) {
	return fetch[Reservation](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-reservations/" + url.PathEscape(reservationID) + "/" + action,
		body: VersionBody{ExpectedVersion: expectedVersion}, idempotent: true})
}

// Events iterates the vendor's event log, newest first, optionally of one
// type (listEvents).
func (c *Client) Events(ctx context.Context, vendorID, eventType string, pageSize int) iter.Seq2[Event, error] {
	q := url.Values{"limit": {strconv.Itoa(pageSize)}}
	if eventType != "" {
		q.Set("type", eventType)
	}
	return list[Event](ctx, c, vendorPath(vendorID)+"/events", q)
}

// GetEvent reads one event (getEvent).
func (c *Client) GetEvent(ctx context.Context, vendorID, eventID string) (Event, error) {
	return fetch[Event](ctx, c, call{method: http.MethodGet, path: vendorPath(vendorID) + "/events/" + url.PathEscape(eventID)})
}

// CreateWebhookSubscription subscribes a URL to event types; the answer
// carries the signing secret, shown only now (createWebhookSubscription;
// idempotent).
func (c *Client) CreateWebhookSubscription(ctx context.Context, vendorID string, in WebhookSubscriptionCreate) (WebhookSubscriptionWithSecret, error) {
	return fetch[WebhookSubscriptionWithSecret](ctx, c, call{method: http.MethodPost, path: vendorPath(vendorID) + "/webhook-subscriptions", body: in, idempotent: true})
}

// DeleteWebhookSubscription deletes a subscription (deleteWebhookSubscription).
func (c *Client) DeleteWebhookSubscription(ctx context.Context, vendorID, subscriptionID string) error {
	_, err := c.do(ctx, call{method: http.MethodDelete, path: vendorPath(vendorID) + "/webhook-subscriptions/" + url.PathEscape(subscriptionID)}, nil)
	return err
}

// WebhookSubscriptions iterates the vendor's subscriptions.
func (c *Client) WebhookSubscriptions(ctx context.Context, vendorID string) iter.Seq2[WebhookSubscription, error] {
	return list[WebhookSubscription](ctx, c, vendorPath(vendorID)+"/webhook-subscriptions", url.Values{"limit": {"100"}})
}
