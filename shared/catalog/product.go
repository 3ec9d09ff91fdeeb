// Package catalog holds products and their variations: the record, the
// rules of the create and update bodies, the lifecycle (draft, published,
// archived) and the service that stores them.
//
// A product's inventory buckets live on the product's own store item as
// numeric attributes, one set per inventory item (the simple product's, or
// one per variation). That keeps a product with 100 variations and all of
// its inventory items one atomic write, far inside DynamoDB's 100-action
// transaction limit, and lets adjustments move one item's counters with an
// atomic conditional add that never clobbers the others. Package inventory
// reads and moves those buckets.
package catalog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// Kinds, statuses and catalog statuses.
const (
	KindSimple   = "simple"
	KindVariable = "variable"

	StatusDraft     = "draft"
	StatusPublished = "published"
	StatusArchived  = "archived"

	CatalogActive   = "active"
	CatalogArchived = "archived"

	VariationActive  = "active"
	VariationRetired = "retired"
)

// Variation is one sellable variant of a variable product.
type Variation struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Options       map[string]string `json:"options"`
	Price         int64             `json:"price"`
	OriginalPrice *int64            `json:"original_price"`
	SKU           *string           `json:"sku"`
	// Seq numbers the variation's inventory item within the product.
	Seq int `json:"seq"`
}

// Product is the stored record of a product.
type Product struct {
	ID                string              `json:"id"`
	VendorID          string              `json:"vendor_id"`
	Status            string              `json:"status"`
	Revision          int64               `json:"-"`
	Kind              string              `json:"kind"`
	Name              string              `json:"name"`
	Slug              string              `json:"slug"`
	Description       string              `json:"description"`
	Price             int64               `json:"price"`
	OriginalPrice     *int64              `json:"original_price"`
	Category          string              `json:"category"`
	Subcategory       string              `json:"subcategory"`
	ImageURLs         []string            `json:"image_urls"`
	Badge             *string             `json:"badge"`
	Options           map[string][]string `json:"options"`
	DefaultOptions    map[string]string   `json:"default_options"`
	Variations        []Variation         `json:"variations"`
	Features          []string            `json:"features"`
	RelatedProductIDs []string            `json:"related_product_ids"`
	Tags              []string            `json:"tags"`
	SKU               *string             `json:"sku"`
	WeightKg          float64             `json:"weight_kg"`
	SourceRegion      *string             `json:"source_region"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
	PublishedAt       *time.Time          `json:"published_at"`
	ArchivedAt        *time.Time          `json:"archived_at"`
	// NextSeq is the sequence number the next inventory item gets; the
	// simple product's own item is 0.
	NextSeq int `json:"next_seq"`
}

// CatalogStatus is the canonical availability: archived, or active (drafts
// included, since a privately synchronised product is active while its
// public offer is still a draft).
func (p Product) CatalogStatus() string {
	if p.Status == StatusArchived {
		return CatalogArchived
	}
	return CatalogActive
}

// Discount is the percentage off original_price, rounded down; 0 without one.
func Discount(price int64, original *int64) int64 {
	if original == nil || *original <= price || *original == 0 {
		return 0
	}
	return (*original - price) * 100 / *original
}

// View is a product as the API shows it.
type View struct {
	ID                string              `json:"id"`
	VendorID          string              `json:"vendor_id"`
	CatalogStatus     string              `json:"catalog_status"`
	Status            string              `json:"status"`
	Revision          int64               `json:"revision"`
	Kind              string              `json:"kind"`
	Name              string              `json:"name"`
	Slug              string              `json:"slug"`
	Description       string              `json:"description"`
	Price             int64               `json:"price"`
	OriginalPrice     *int64              `json:"original_price"`
	Discount          int64               `json:"discount"`
	Category          string              `json:"category"`
	Subcategory       string              `json:"subcategory"`
	ImageURLs         []string            `json:"image_urls"`
	Badge             *string             `json:"badge"`
	Options           map[string][]string `json:"options"`
	DefaultOptions    map[string]string   `json:"default_options"`
	Variations        []VariationView     `json:"variations"`
	Features          []string            `json:"features"`
	RelatedProductIDs []string            `json:"related_product_ids"`
	Tags              []string            `json:"tags"`
	SKU               *string             `json:"sku"`
	WeightKg          float64             `json:"weight_kg"`
	SourceRegion      *string             `json:"source_region"`
	CreatedAt         time.Time           `json:"created_at"`
	UpdatedAt         time.Time           `json:"updated_at"`
	PublishedAt       *time.Time          `json:"published_at"`
	ArchivedAt        *time.Time          `json:"archived_at"`
}

// VariationView is a variation as the API shows it.
type VariationView struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Options       map[string]string `json:"options"`
	Price         int64             `json:"price"`
	OriginalPrice *int64            `json:"original_price"`
	SKU           *string           `json:"sku"`
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// View returns the API representation.
func (p Product) View() View {
	vars := make([]VariationView, len(p.Variations))
	for i, v := range p.Variations {
		opts := v.Options
		if opts == nil {
			opts = map[string]string{}
		}
		vars[i] = VariationView{ID: v.ID, Status: v.Status, Options: opts, Price: v.Price, OriginalPrice: v.OriginalPrice, SKU: v.SKU}
	}
	opts := p.Options
	if opts == nil {
		opts = map[string][]string{}
	}
	return View{
		ID: p.ID, VendorID: p.VendorID, CatalogStatus: p.CatalogStatus(), Status: p.Status, Revision: p.Revision,
		Kind: p.Kind, Name: p.Name, Slug: p.Slug, Description: p.Description, Price: p.Price,
		OriginalPrice: p.OriginalPrice, Discount: Discount(p.Price, p.OriginalPrice),
		Category: p.Category, Subcategory: p.Subcategory, ImageURLs: nonNil(p.ImageURLs), Badge: p.Badge,
		Options: opts, DefaultOptions: p.DefaultOptions, Variations: vars, Features: nonNil(p.Features),
		RelatedProductIDs: nonNil(p.RelatedProductIDs), Tags: nonNil(p.Tags), SKU: p.SKU, WeightKg: p.WeightKg,
		SourceRegion: p.SourceRegion, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
		PublishedAt: p.PublishedAt, ArchivedAt: p.ArchivedAt,
	}
}

// NewBuckets are the deltas that create zeroed buckets for item seq, at
// inventory version 1.
func NewBuckets(seq int, into map[string]int64) map[string]int64 {
	if into == nil {
		into = map[string]int64{}
	}
	into[datamodel.OnHandAttr(seq)] = 0
	into[datamodel.ReservedAttr(seq)] = 0
	into[datamodel.AvailableAttr(seq)] = 0
	into[datamodel.ItemVersionAttr(seq)] = 1
	return into
}

// Seqs lists the inventory items of a product, in order: the simple
// product's single item, or one per variation.
func (p Product) Seqs() []int {
	if p.Kind == KindSimple {
		return []int{0}
	}
	out := make([]int, len(p.Variations))
	for i, v := range p.Variations {
		out[i] = v.Seq
	}
	return out
}

// Variation returns the variation whose inventory item is seq.
func (p Product) VariationBySeq(seq int) (Variation, bool) {
	for _, v := range p.Variations {
		if v.Seq == seq {
			return v, true
		}
	}
	return Variation{}, false
}

// idPart is the product id without its prefix.
func idPart(productID string) string { return strings.TrimPrefix(productID, "prd_") }

// InventoryItemID is the opaque id of item seq of a product.
func InventoryItemID(productID string, seq int) string {
	return "inv_" + idPart(productID) + "_" + fmt.Sprintf("%03d", seq)
}

// ParseInventoryItemID finds the product and item an inventory id names.
func ParseInventoryItemID(id string) (productID string, seq int, ok bool) {
	rest, ok := strings.CutPrefix(id, "inv_")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || len(rest)-i-1 != 3 {
		return "", 0, false
	}
	digits := rest[i+1:]
	if strings.Trim(digits, "0123456789") != "" {
		return "", 0, false // "+12" and " 12" would be other spellings of 012
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return "", 0, false
	}
	pid := "prd_" + rest[:i]
	if !ValidProductID(pid) {
		return "", 0, false
	}
	return pid, n, true
}

// ValidProductID reports whether id can name a product (1..128 chars, the
// characters our ids use).
func ValidProductID(id string) bool {
	if len(id) < 1 || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Decode reads a product from its store item.
func Decode(it store.Item) (Product, error) {
	var p Product
	if err := json.Unmarshal(it.Data, &p); err != nil {
		return Product{}, fmt.Errorf("catalog: decode %s: %w", it.SK, err)
	}
	p.Revision = it.Version
	return p, nil
}

// Encode returns the product's document.
func Encode(p Product) ([]byte, error) {
	b, err := store.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("catalog: encode %s: %w", p.ID, err)
	}
	return b, nil
}
