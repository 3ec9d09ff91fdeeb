// Package listing holds listings: one product, or one variation, offered
// on one connection, with its channel id, status, optional channel price
// and what the connection pushes for it. A listing is unique per
// (connection, product, variation) through a key item, and the
// connection's active_listing_count (active and paused listings) moves in
// the same transaction as every transition in or out of that set.
package listing

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/store"
)

// Statuses: draft → active ⇄ paused → ended (final).
const (
	StatusDraft  = "draft"
	StatusActive = "active"
	StatusPaused = "paused"
	StatusEnded  = "ended"
)

// Counted reports whether a listing in status counts in the connection's
// active_listing_count: a paused listing still exists on the channel.
func Counted(status string) bool { return status == StatusActive || status == StatusPaused }

// Actions.
const (
	Activate = "activate"
	Pause    = "pause"
	Resume   = "resume"
	End      = "end"
)

// transitions: for an action, the statuses it leaves from and where it leads.
var transitions = map[string]struct {
	from []string
	to   string
}{
	Activate: {[]string{StatusDraft}, StatusActive},
	Pause:    {[]string{StatusActive}, StatusPaused},
	Resume:   {[]string{StatusPaused}, StatusActive},
	End:      {[]string{StatusDraft, StatusActive, StatusPaused}, StatusEnded},
}

// Sync is what the connection pushes for the listing: each true only when
// the connection's role for that domain is destination.
type Sync struct {
	Catalog bool `json:"catalog"`
	Price   bool `json:"price"`
	Stock   bool `json:"stock"`
}

// SyncOf derives Sync from a connection's roles.
func SyncOf(r connection.Roles) Sync {
	return Sync{Catalog: r.Catalog == connection.Destination, Price: r.BasePrice == connection.Destination, Stock: r.Inventory == connection.Destination}
}

// Fields are what a listing is both stored and shown with: which product
// or variation it offers on which connection, and how.
type Fields struct {
	ID                string  `json:"id"`
	VendorID          string  `json:"vendor_id"`
	ConnectionID      string  `json:"connection_id"`
	ProductID         string  `json:"product_id"`
	VariationID       *string `json:"variation_id"`
	ExternalListingID *string `json:"external_listing_id"`
	Status            string  `json:"status"`
	ChannelPrice      *int64  `json:"channel_price"`
}

// Listing is the stored record.
type Listing struct {
	Fields
	Version   int64     `json:"-"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// View is a listing as the API shows it.
type View struct {
	Fields
	Sync      Sync      `json:"sync"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// View shows l with the sync of its connection's roles.
func (l Listing) View(r connection.Roles) View {
	return View{Fields: l.Fields, Sync: SyncOf(r), Version: l.Version, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt}
}

// Decode reads a listing item.
func Decode(it store.Item) (Listing, error) {
	return store.Unmarshal(it, "listing", func(l *Listing) *int64 { return &l.Version })
}

func (l Listing) encode() ([]byte, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, fmt.Errorf("listing: encode: %w", err)
	}
	return b, nil
}

var (
	connIDRule     = fields.ConnectionIDRule
	idRule         = fields.StringRule{Min: 1, Max: 128}
	externalIDRule = fields.StringRule{Min: 1, Max: 255, SingleLine: true}
)

// CreateInput is a parsed create body.
type CreateInput struct {
	ConnectionID, ProductID string
	VariationID             *string
	ExternalListingID       *string
	ChannelPrice            *int64
}

// ParseCreate reads a create body.
func ParseCreate(body []byte) (CreateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return CreateInput{}, err
	}
	var in CreateInput
	in.ConnectionID = o.String("connection_id", fields.Required, connIDRule)
	in.ProductID = o.String("product_id", fields.Required, idRule)
	in.VariationID, _ = o.StringPtr("variation_id", fields.OptionalNullable, idRule)
	in.ExternalListingID, _ = o.StringPtr("external_listing_id", fields.OptionalNullable, externalIDRule)
	in.ChannelPrice, _ = o.IntPtr("channel_price", fields.OptionalNullable, 0, catalog.MaxPrice)
	return in, o.Err()
}

// UpdateInput is a parsed update body; a Set flag says the field was given.
type UpdateInput struct {
	ExpectedVersion                       int64
	ChannelPrice                          *int64
	ExternalListingID                     *string
	SetChannelPrice, SetExternalListingID bool
}

// ParseUpdate reads an update body.
func ParseUpdate(body []byte) (UpdateInput, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return UpdateInput{}, err
	}
	var in UpdateInput
	in.ExpectedVersion = o.Int("expected_version", fields.Required, 0, math.MaxInt64)
	in.SetChannelPrice, in.SetExternalListingID = o.Has("channel_price"), o.Has("external_listing_id")
	in.ChannelPrice, _ = o.IntPtr("channel_price", fields.OptionalNullable, 0, catalog.MaxPrice)
	in.ExternalListingID, _ = o.StringPtr("external_listing_id", fields.OptionalNullable, externalIDRule)
	return in, o.Err()
}
