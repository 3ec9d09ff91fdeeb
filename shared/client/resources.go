package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// The resources below mirror the document's schemas of the same names.

// Vendor is #/components/schemas/Vendor.
type Vendor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// ProductCreate is #/components/schemas/ProductCreate (simple products;
// Variations carries a variable product's variations as the document
// describes them).
type ProductCreate struct {
	Kind              string            `json:"kind"`
	Name              string            `json:"name"`
	Slug              string            `json:"slug"`
	Description       string            `json:"description"`
	Price             int64             `json:"price"`
	OriginalPrice     *int64            `json:"original_price,omitempty"`
	Category          string            `json:"category"`
	Subcategory       string            `json:"subcategory"`
	ImageURLs         []string          `json:"image_urls"`
	Badge             *string           `json:"badge,omitempty"`
	Options           map[string]any    `json:"options"`
	DefaultOptions    map[string]string `json:"default_options,omitempty"`
	Features          []string          `json:"features"`
	RelatedProductIDs []string          `json:"related_product_ids"`
	Tags              []string          `json:"tags,omitempty"`
	SKU               *string           `json:"sku,omitempty"`
	WeightKg          float64           `json:"weight_kg"`
	SourceRegion      *string           `json:"source_region,omitempty"`
	Variations        []json.RawMessage `json:"variations,omitempty"`
}

// Product is #/components/schemas/Product.
type Product struct {
	ID                string            `json:"id"`
	VendorID          string            `json:"vendor_id"`
	CatalogStatus     string            `json:"catalog_status"`
	Status            string            `json:"status"`
	Revision          int64             `json:"revision"`
	Kind              string            `json:"kind"`
	Name              string            `json:"name"`
	Slug              string            `json:"slug"`
	Description       string            `json:"description"`
	Price             int64             `json:"price"`
	OriginalPrice     *int64            `json:"original_price"`
	Discount          int64             `json:"discount"`
	Category          string            `json:"category"`
	Subcategory       string            `json:"subcategory"`
	ImageURLs         []string          `json:"image_urls"`
	Badge             *string           `json:"badge"`
	Options           map[string]any    `json:"options"`
	DefaultOptions    map[string]string `json:"default_options"`
	Variations        []Variation       `json:"variations"`
	Features          []string          `json:"features"`
	RelatedProductIDs []string          `json:"related_product_ids"`
	Tags              []string          `json:"tags"`
	SKU               *string           `json:"sku"`
	WeightKg          float64           `json:"weight_kg"`
	SourceRegion      *string           `json:"source_region"`
	CreatedAt         time.Time         `json:"created_at"`
	UpdatedAt         time.Time         `json:"updated_at"`
	PublishedAt       *time.Time        `json:"published_at"`
	ArchivedAt        *time.Time        `json:"archived_at"`
}

// Variation is #/components/schemas/Variation.
type Variation struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Options       map[string]string `json:"options"`
	Price         int64             `json:"price"`
	OriginalPrice *int64            `json:"original_price"`
	SKU           *string           `json:"sku"`
}

// InventoryItem is #/components/schemas/InventoryItem.
type InventoryItem struct {
	ID               string            `json:"id"`
	VendorID         string            `json:"vendor_id"`
	LocationID       string            `json:"location_id"`
	StockPoolID      string            `json:"stock_pool_id"`
	ProductID        string            `json:"product_id"`
	ProductName      string            `json:"product_name"`
	ProductImageURL  *string           `json:"product_image_url"`
	VariationID      *string           `json:"variation_id"`
	VariationOptions map[string]string `json:"variation_options"`
	SKU              *string           `json:"sku"`
	OnHand           int64             `json:"on_hand"`
	Reserved         int64             `json:"reserved"`
	Available        int64             `json:"available"`
	Version          int64             `json:"version"`
	Status           string            `json:"status"`
}

// Roles is #/components/schemas/Roles.
type Roles struct {
	Catalog                  string `json:"catalog"`
	BasePrice                string `json:"base_price"`
	Inventory                string `json:"inventory"`
	OrderIngress             string `json:"order_ingress"`
	ExternalOrderFulfillment string `json:"external_order_fulfillment"`
}

// ConnectionCreate is #/components/schemas/ConnectionCreate; Roles is a
// Roles value or a preset name (#/components/schemas/RolePreset).
type ConnectionCreate struct {
	Provider          string `json:"provider"`
	ExternalAccountID string `json:"external_account_id"`
	DisplayName       string `json:"display_name"`
	Roles             any    `json:"roles"`
}

// Connection is #/components/schemas/Connection.
type Connection struct {
	ID                            string          `json:"id"`
	VendorID                      string          `json:"vendor_id"`
	Provider                      string          `json:"provider"`
	ExternalAccountID             string          `json:"external_account_id"`
	DisplayName                   string          `json:"display_name"`
	Status                        string          `json:"status"`
	Roles                         Roles           `json:"roles"`
	Health                        json.RawMessage `json:"health"`
	ActiveListingCount            int64           `json:"active_listing_count"`
	ActiveReservationCount        int64           `json:"active_reservation_count"`
	UnresolvedExternalOrderCount  int64           `json:"unresolved_external_order_count"`
	ActiveChannelFulfillmentCount int64           `json:"active_channel_fulfillment_count"`
	Version                       int64           `json:"version"`
	CreatedAt                     time.Time       `json:"created_at"`
	UpdatedAt                     time.Time       `json:"updated_at"`
}

// ReservationCreate is #/components/schemas/ReservationCreate.
type ReservationCreate struct {
	ConnectionID     string  `json:"connection_id"`
	InventoryItemID  string  `json:"inventory_item_id"`
	Quantity         int64   `json:"quantity"`
	ExpiresInSeconds int64   `json:"expires_in_seconds,omitempty"`
	Reference        *string `json:"reference,omitempty"`
}

// Reservation is #/components/schemas/Reservation.
type Reservation struct {
	ID              string     `json:"id"`
	VendorID        string     `json:"vendor_id"`
	ConnectionID    string     `json:"connection_id"`
	InventoryItemID string     `json:"inventory_item_id"`
	ProductID       string     `json:"product_id"`
	Quantity        int64      `json:"quantity"`
	Status          string     `json:"status"`
	Owner           string     `json:"owner"`
	Reference       *string    `json:"reference"`
	Version         int64      `json:"version"`
	ExpiresAt       time.Time  `json:"expires_at"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	CommittedAt     *time.Time `json:"committed_at"`
	ReleasedAt      *time.Time `json:"released_at"`
	ExpiredAt       *time.Time `json:"expired_at"`
}

// Event is #/components/schemas/Event: Data's shape depends on Type (the
// document has one schema per type); decode it with DecodeData.
type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	VendorID  string    `json:"vendor_id"`
	Resource  struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"resource"`
	Data json.RawMessage `json:"data"`
}

// DecodeData decodes the event's data into v (for example a struct with
// the fields the type's schema lists).
func (e Event) DecodeData(v any) error { return json.Unmarshal(e.Data, v) }

// WebhookSubscriptionCreate is #/components/schemas/WebhookSubscriptionCreate.
type WebhookSubscriptionCreate struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"event_types"`
	Description *string  `json:"description,omitempty"`
}

// WebhookSubscription is #/components/schemas/WebhookSubscription; Secret
// is set only in the answer of its creation and of rotate-secret.
type WebhookSubscription struct {
	ID             string     `json:"id"`
	VendorID       string     `json:"vendor_id"`
	URL            string     `json:"url"`
	EventTypes     []string   `json:"event_types"`
	Description    *string    `json:"description"`
	Status         string     `json:"status"`
	DisabledReason *string    `json:"disabled_reason"`
	DisabledAt     *time.Time `json:"disabled_at"`
	Version        int64      `json:"version"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	Secret         string     `json:"secret,omitempty"`
}

func vendorPath(vendorID string) string { return "/vendors/" + url.PathEscape(vendorID) }

// ListVendors lists the vendors granted to the credential (listVendors).
func (c *Client) ListVendors(ctx context.Context) ([]Vendor, error) {
	var out []Vendor
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/vendors"}, &out)
	return out, err
}

// GetVendor reads one vendor (getVendor).
func (c *Client) GetVendor(ctx context.Context, vendorID string) (Vendor, error) {
	var out Vendor
	_, err := c.do(ctx, call{method: http.MethodGet, path: vendorPath(vendorID)}, &out)
	return out, err
}

// CreateProduct creates a draft product (createProduct; idempotent).
func (c *Client) CreateProduct(ctx context.Context, vendorID string, in ProductCreate) (Product, *Response, error) {
	var out Product
	res, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/products", body: in, idempotent: true}, &out)
	return out, res, err
}

// GetProduct reads one product (getProduct).
func (c *Client) GetProduct(ctx context.Context, vendorID, productID string) (Product, error) {
	var out Product
	_, err := c.do(ctx, call{method: http.MethodGet, path: vendorPath(vendorID) + "/products/" + url.PathEscape(productID)}, &out)
	return out, err
}

// Products iterates the vendor's products (listProducts).
func (c *Client) Products(ctx context.Context, vendorID string) iter.Seq2[Product, error] {
	return list[Product](ctx, c, vendorPath(vendorID)+"/products", url.Values{"limit": {"100"}})
}

// TransitionProduct moves a product: action is publish, unpublish,
// archive or restore (publishProduct, ...), at expectedRevision.
func (c *Client) TransitionProduct(ctx context.Context, vendorID, productID, action string, expectedRevision int64) (Product, error) {
	var out Product
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/products/" + url.PathEscape(productID) + "/" + action,
		body: map[string]int64{"expected_revision": expectedRevision}}, &out)
	return out, err
}

// InventoryItems iterates the vendor's inventory items (listInventoryItems).
func (c *Client) InventoryItems(ctx context.Context, vendorID string) iter.Seq2[InventoryItem, error] {
	return list[InventoryItem](ctx, c, vendorPath(vendorID)+"/inventory-items", url.Values{"limit": {"100"}})
}

// GetInventoryItem reads one inventory item (getInventoryItem).
func (c *Client) GetInventoryItem(ctx context.Context, vendorID, itemID string) (InventoryItem, error) {
	var out InventoryItem
	_, err := c.do(ctx, call{method: http.MethodGet, path: vendorPath(vendorID) + "/inventory-items/" + url.PathEscape(itemID)}, &out)
	return out, err
}

// AdjustInventoryItem sets on_hand (adjustInventoryItem; idempotent).
func (c *Client) AdjustInventoryItem(ctx context.Context, vendorID, itemID string, targetOnHand, expectedVersion int64) (InventoryItem, *Response, error) {
	var out InventoryItem
	res, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-items/" + url.PathEscape(itemID) + "/adjustments",
		body: map[string]int64{"target_on_hand": targetOnHand, "expected_version": expectedVersion}, idempotent: true}, &out)
	return out, res, err
}

// CreateConnection creates a channel connection (createConnection; idempotent).
func (c *Client) CreateConnection(ctx context.Context, vendorID string, in ConnectionCreate) (Connection, error) {
	var out Connection
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/connections", body: in, idempotent: true}, &out)
	return out, err
}

// Connections iterates the vendor's connections (listConnections).
func (c *Client) Connections(ctx context.Context, vendorID string) iter.Seq2[Connection, error] {
	return list[Connection](ctx, c, vendorPath(vendorID)+"/connections", url.Values{"limit": {"100"}})
}

// TransitionConnection moves a connection: action is pause, resume or
// disconnect, at expectedVersion.
func (c *Client) TransitionConnection(ctx context.Context, vendorID, connectionID, action string, expectedVersion int64) (Connection, error) {
	var out Connection
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/connections/" + url.PathEscape(connectionID) + "/" + action,
		body: map[string]int64{"expected_version": expectedVersion}}, &out)
	return out, err
}

// CreateReservation holds stock (createReservation; idempotent).
func (c *Client) CreateReservation(ctx context.Context, vendorID string, in ReservationCreate) (Reservation, error) {
	var out Reservation
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-reservations", body: in, idempotent: true}, &out)
	return out, err
}

// TransitionReservation ends or extends a hold: action is renew, commit
// or release (idempotent), at expectedVersion.
func (c *Client) TransitionReservation(ctx context.Context, vendorID, reservationID, action string, expectedVersion int64) (Reservation, error) {
	var out Reservation
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/inventory-reservations/" + url.PathEscape(reservationID) + "/" + action,
		body: map[string]int64{"expected_version": expectedVersion}, idempotent: true}, &out)
	return out, err
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
	var out Event
	_, err := c.do(ctx, call{method: http.MethodGet, path: vendorPath(vendorID) + "/events/" + url.PathEscape(eventID)}, &out)
	return out, err
}

// CreateWebhookSubscription subscribes a URL to event types; the answer
// carries the signing secret, shown only now (createWebhookSubscription;
// idempotent).
func (c *Client) CreateWebhookSubscription(ctx context.Context, vendorID string, in WebhookSubscriptionCreate) (WebhookSubscription, error) {
	var out WebhookSubscription
	_, err := c.do(ctx, call{method: http.MethodPost, path: vendorPath(vendorID) + "/webhook-subscriptions", body: in, idempotent: true}, &out)
	return out, err
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
