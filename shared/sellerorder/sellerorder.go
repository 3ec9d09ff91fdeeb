// Package sellerorder holds seller orders: the fulfillment projection of
// committed external orders whose fulfillment is moku, what the seller
// must ship. The projection is built from events (external_order.committed
// and .cancelled) by a pipeline rule and a queue worker, idempotent on the
// event: a seller order's id is derived from its external order and it
// records the event that created it, so a redelivered or replayed event
// changes nothing and replaying the log rebuilds it. Clients change only
// its fulfillment: mark shipped (carrier, tracking number) or cancel.
package sellerorder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Statuses: open → shipped, or open → cancelled.
const (
	StatusOpen      = "open"
	StatusShipped   = "shipped"
	StatusCancelled = "cancelled"
)

// Line is one line to ship.
type Line struct {
	LineID          string `json:"line_id"`
	InventoryItemID string `json:"inventory_item_id"`
	Quantity        int64  `json:"quantity"`
	UnitPrice       int64  `json:"unit_price"`
}

// Order is the stored record and its view.
type Order struct {
	ID              string     `json:"id"`
	VendorID        string     `json:"vendor_id"`
	ExternalOrderID string     `json:"external_order_id"`
	ChannelOrderID  string     `json:"channel_order_id"`
	ConnectionID    string     `json:"connection_id"`
	Status          string     `json:"status"`
	Lines           []Line     `json:"lines"`
	Carrier         *string    `json:"carrier"`
	TrackingNumber  *string    `json:"tracking_number"`
	ShippedAt       *time.Time `json:"shipped_at"`
	SourceEventID   string     `json:"source_event_id"`
	Version         int64      `json:"version"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
}

// IDOf is the seller order id of an external order.
func IDOf(externalOrderID string) string { return "so_" + strings.TrimPrefix(externalOrderID, "xo_") }

func decode(it store.Item) (Order, error) {
	return store.Unmarshal(it, "sellerorder", func(o *Order) *int64 { return &o.Version })
}

func (o Order) item() (store.Item, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return store.Item{}, fmt.Errorf("sellerorder: encode: %w", err)
	}
	k := datamodel.SellerOrderKey(o.VendorID, o.ID)
	return store.Item{PK: k.PK, SK: k.SK, Version: o.Version, Data: data}, nil
}

// Projected are the event types Rule sends to the seller-orders queue,
// whatever the vendor's webhook subscriptions: their inserts always carry
// a pending marker (pipeline.Pending.Kept).
func Projected() []string {
	return []string{event.ExternalOrderCommitted, event.ExternalOrderCancelled, event.SellerOrderShipped, event.SellerOrderCancelled}
}

// Rule sends every event of a Projected type to the seller-orders queue.
func Rule(_ context.Context, c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || c.New == nil || !strings.HasPrefix(c.Key.SK, datamodel.EventPrefix) {
		return nil, nil
	}
	e, err := event.Decode(*c.New)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(Projected(), e.Type) {
		return nil, nil
	}
	return []pipeline.Outgoing{{Queue: queue.SellerOrders, Body: c.New.Data}}, nil
}

// Projector applies events to seller orders.
type Projector struct {
	Store store.Store
	Clock clock.Clock
}

// Handle is the queue handler: one message is one event.
func (p Projector) Handle(ctx context.Context, m queue.Message) error {
	var e event.Event
	if err := json.Unmarshal(m.Body, &e); err != nil {
		return nil // not an event: nothing to project, never retried
	}
	return p.Apply(ctx, e)
}

// eventOrder is the part of an external order event the projection reads.
type eventOrder struct {
	ConnectionID    string `json:"connection_id"`
	ExternalOrderID string `json:"external_order_id"`
	Fulfillment     string `json:"fulfillment"`
	Lines           []Line `json:"lines"`
}

// fulfillmentEvent is the part of a seller order event the projection reads.
type fulfillmentEvent struct {
	Version        int64   `json:"version"`
	Status         string  `json:"status"`
	Carrier        *string `json:"carrier"`
	TrackingNumber *string `json:"tracking_number"`
}

// applyFulfillment replays a seller order's own fulfillment event: a no-op
// when the order already has that version (the usual case: the change and
// its event were one transaction), and the rebuild of the change otherwise.
func (p Projector) applyFulfillment(ctx context.Context, e event.Event) error {
	raw, err := json.Marshal(e.Data)
	if err != nil {
		return err
	}
	var f fulfillmentEvent
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil
	}
	it, err := p.Store.Get(ctx, datamodel.SellerOrderKey(e.VendorID, e.Resource.ID))
	if errors.Is(err, store.ErrNotFound) {
		return &queue.RetryError{After: time.Second, Err: err} // its creation is not projected yet
	}
	if err != nil {
		return err
	}
	o, err := decode(it)
	if err != nil || o.Version >= f.Version {
		return err
	}
	prev := o.Version
	o.Status, o.Carrier, o.TrackingNumber, o.Version, o.UpdatedAt = f.Status, f.Carrier, f.TrackingNumber, f.Version, e.CreatedAt
	if f.Status == StatusShipped {
		at := e.CreatedAt
		o.ShippedAt = &at
	}
	return p.replace(ctx, o, prev)
}

// replace writes o over the version prev it was read at; a concurrent
// write is retried, so that the event applies to what won.
func (p Projector) replace(ctx context.Context, o Order, prev int64) error {
	next, err := o.item()
	if err != nil {
		return err
	}
	err = p.Store.Transact(ctx, store.Put(next, store.IfVersion(prev)))
	if store.IsCondition(err) {
		return &queue.RetryError{After: time.Second, Err: err}
	}
	return err
}

// Apply projects one event; applying it again changes nothing.
func (p Projector) Apply(ctx context.Context, e event.Event) error {
	if e.Type == event.SellerOrderShipped || e.Type == event.SellerOrderCancelled {
		return p.applyFulfillment(ctx, e)
	}
	raw, err := json.Marshal(e.Data)
	if err != nil {
		return err
	}
	var d eventOrder
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil
	}
	if d.Fulfillment != connection.Moku {
		return nil
	}
	id := IDOf(e.Resource.ID)
	switch e.Type {
	case event.ExternalOrderCommitted:
		o := Order{ID: id, VendorID: e.VendorID, ExternalOrderID: e.Resource.ID, ChannelOrderID: d.ExternalOrderID, ConnectionID: d.ConnectionID,
			Status: StatusOpen, Lines: d.Lines, SourceEventID: e.ID, Version: 1, CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt}
		if o.Lines == nil {
			o.Lines = []Line{}
		}
		it, err := o.item()
		if err != nil {
			return err
		}
		err = p.Store.Transact(ctx, store.Put(it, store.IfAbsent()))
		if store.IsCondition(err) {
			return nil // already projected
		}
		return err
	case event.ExternalOrderCancelled:
		it, err := p.Store.Get(ctx, datamodel.SellerOrderKey(e.VendorID, id))
		if errors.Is(err, store.ErrNotFound) {
			return nil // the order never reached commit: nothing to ship
		}
		if err != nil {
			return err
		}
		o, err := decode(it)
		if err != nil || o.Status != StatusOpen {
			return err
		}
		prev := o.Version
		o.Status, o.Version, o.UpdatedAt = StatusCancelled, o.Version+1, e.CreatedAt
		return p.replace(ctx, o, prev)
	}
	return nil
}

// Service reads seller orders and changes their fulfillment.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// sellerOrderErrors is how the package's errors name its records.
var sellerOrderErrors = errs.Record{Name: "seller order", Unreadable: "seller order state could not be read safely"}

// Get reads one seller order.
func (s Service) Get(ctx context.Context, vendorID, id string) (Order, error) {
	if !ids.Issued("so", id) {
		return Order{}, sellerOrderErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.SellerOrderKey(vendorID, id), decode, sellerOrderErrors.NotFound(), sellerOrderErrors.Unavailable)
}

// Filter narrows a list.
type Filter struct{ ConnectionID, Status string }

// List reads a page of seller orders, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int, f Filter) (store.PageOf[Order], error) {
	if err := errs.ForeignCursor(after, datamodel.SellerOrderPrefix); err != nil {
		return store.PageOf[Order]{}, err
	}
	keep := func(o Order) bool {
		return (f.Status == "" || o.Status == f.Status) && (f.ConnectionID == "" || o.ConnectionID == f.ConnectionID)
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.SellerOrderKey(vendorID, "").PK, Prefix: datamodel.SellerOrderPrefix, After: after}, limit, decode, keep)
	if err != nil {
		return store.PageOf[Order]{}, sellerOrderErrors.Unavailable(err)
	}
	return page, nil
}

// Actions.
const (
	MarkShipped = "mark_shipped"
	Cancel      = "cancel"
)

// Input is a parsed action body.
type Input struct {
	ExpectedVersion         int64
	Carrier, TrackingNumber string
}

var textRule = fields.StringRule{Min: 1, Max: 200, SingleLine: true}

// ParseInput reads an action body: expected_version, and for mark_shipped
// carrier and tracking_number.
func ParseInput(body []byte, action string) (Input, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Input{}, err
	}
	var in Input
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	if action == MarkShipped {
		in.Carrier = o.String("carrier", fields.Required, textRule)
		in.TrackingNumber = o.String("tracking_number", fields.Required, textRule)
	}
	return in, o.Err()
}

// Transition marks an open seller order shipped or cancelled.
func (s Service) Transition(ctx context.Context, vendorID, id, action string, in Input) (Order, error) {
	o, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return Order{}, err
	}
	if o.Version != in.ExpectedVersion {
		return Order{}, errs.StaleVersion(errs.CodeSellerOrderVersion, "seller order", o.Version)
	}
	if o.Status != StatusOpen {
		return Order{}, errs.Ef(errs.CodeSellerOrderState, "a %s seller order cannot change its fulfillment", o.Status)
	}
	now := s.Clock.Now()
	prev := o.Version
	typ := event.SellerOrderCancelled
	o.Status = StatusCancelled
	if action == MarkShipped {
		o.Status, o.Carrier, o.TrackingNumber, o.ShippedAt, typ = StatusShipped, &in.Carrier, &in.TrackingNumber, &now, event.SellerOrderShipped
	}
	o.Version, o.UpdatedAt = o.Version+1, now
	it, err := o.item()
	if err != nil {
		return Order{}, err
	}
	ev, err := event.Op(event.New(now, vendorID, typ, "seller_order", o.ID, map[string]any{
		"version": o.Version, "external_order_id": o.ExternalOrderID, "status": o.Status, "carrier": o.Carrier, "tracking_number": o.TrackingNumber}))
	if err != nil {
		return Order{}, err
	}
	err = s.Store.Transact(ctx, store.Put(it, store.IfVersion(prev)), ev)
	if store.IsCondition(err) {
		cur, lerr := s.Get(ctx, vendorID, id)
		if lerr != nil {
			return Order{}, lerr
		}
		return Order{}, errs.StaleVersion(errs.CodeSellerOrderVersion, "seller order", cur.Version)
	}
	if err != nil {
		return Order{}, errs.Unavailablef(err, "the seller order could not be stored")
	}
	return o, nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
