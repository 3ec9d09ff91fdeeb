package catalog

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/fields"
)

// Limits of the product bodies, from the contract.
const (
	MaxPrice      = 1_000_000_000
	MaxVariations = 100
	MaxWeightKg   = 2500
)

var ()

var (
	nameRule      = fields.StringRule{Min: 1, Max: 120, SingleLine: true}
	slugRule      = fields.StringRule{Min: 1, Max: 120, Pattern: fields.SlugPattern, PatternText: "lowercase letters and digits in hyphen-separated words"}
	textRule      = fields.StringRule{Max: 120, SingleLine: true}
	descRule      = fields.StringRule{Max: 5000}
	imagesRule    = fields.ListRule{Max: 12, Unique: true, Item: fields.StringRule{Min: 1, Max: 2048, URI: true}}
	badgeRule     = fields.StringRule{OneOf: []string{"sale", "new"}}
	optNameRule   = fields.StringRule{Min: 1, Max: 64, SingleLine: true}
	optValueRule  = fields.StringRule{Min: 1, Max: 64, SingleLine: true, NoComma: true}
	optListRule   = fields.ListRule{Max: 50, Unique: true, Item: optValueRule}
	featuresRule  = fields.ListRule{Max: 30, Unique: true, Item: fields.StringRule{Min: 1, Max: 200, SingleLine: true}}
	relatedRule   = fields.ListRule{Max: 30, Unique: true, Item: fields.StringRule{Min: 1, Max: 128}}
	tagsRule      = fields.ListRule{Max: 30, Unique: true, Item: fields.StringRule{Min: 1, Max: 64, SingleLine: true, NoComma: true}}
	skuRule       = fields.StringRule{Max: 100}
	regionRule    = fields.StringRule{Max: 120, SingleLine: true}
	connIDRule    = fields.ConnectionIDRule
	variationRule = fields.StringRule{Min: 1, Max: 128}
	statusRule    = fields.StringRule{OneOf: []string{VariationActive, VariationRetired}}
)

// Input is a parsed create or update body.
type Input struct {
	Kind              string
	Name, Slug        string
	Description       string
	Price             int64
	OriginalPrice     *int64
	Category          string
	Subcategory       string
	ImageURLs         []string
	Badge             *string
	Options           map[string][]string
	DefaultOptions    map[string]string
	Features          []string
	RelatedProductIDs []string
	Tags              []string
	SKU               *string
	WeightKg          float64
	SourceRegion      *string
	Variations        []VariationInput
	Authority         Bindings
	// ExpectedRevision is set by update bodies only.
	ExpectedRevision int64
}

// VariationInput is one item of the variations array. ID is empty for a
// new variation; Status is set only for existing ones.
type VariationInput struct {
	ID            string
	Status        string
	Options       map[string]string
	Price         int64
	OriginalPrice *int64
	SKU           *string
}

// Bindings are the authority connection ids a request asserts; nil means
// the service.
type Bindings struct {
	Catalog   *string
	BasePrice *string
}

// ParseCreate reads a product create body.
func ParseCreate(body []byte) (Input, error) { return parse(body, false) }

// ParseUpdate reads a product update (full replacement) body.
func ParseUpdate(body []byte) (Input, error) { return parse(body, true) }

func parse(body []byte, update bool) (Input, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Input{}, err
	}
	var in Input
	in.Kind = o.String("kind", fields.Required, fields.StringRule{OneOf: []string{KindSimple, KindVariable}})
	in.Name = o.String("name", fields.Required, nameRule)
	in.Slug = o.String("slug", fields.Required, slugRule)
	in.Description = o.String("description", fields.Required, descRule)
	in.Price = o.Int("price", fields.Required, 0, MaxPrice)
	in.OriginalPrice, _ = o.IntPtr("original_price", fields.OptionalNullable, 1, MaxPrice)
	in.Category = o.String("category", fields.Required, textRule)
	in.Subcategory = o.String("subcategory", fields.Required, textRule)
	in.ImageURLs = o.Strings("image_urls", fields.Required, imagesRule)
	in.Badge, _ = o.StringPtr("badge", fields.OptionalNullable, badgeRule)
	in.Options, _ = o.StringListMap("options", fields.Required, 8, optNameRule, optListRule)
	in.DefaultOptions, _ = o.StringMap("default_options", fields.OptionalNullable, 8, optNameRule, optValueRule)
	in.Features = o.Strings("features", fields.Required, featuresRule)
	in.RelatedProductIDs = o.Strings("related_product_ids", fields.Required, relatedRule)
	in.Tags = o.Strings("tags", fields.Optional, tagsRule)
	in.SKU, _ = o.StringPtr("sku", fields.OptionalNullable, skuRule)
	in.WeightKg = o.Number("weight_kg", fields.Required, 0, MaxWeightKg)
	in.SourceRegion, _ = o.StringPtr("source_region", fields.OptionalNullable, regionRule)
	in.Authority.Catalog, _ = o.StringPtr("catalog_authority_connection_id", fields.OptionalNullable, connIDRule)
	in.Authority.BasePrice, _ = o.StringPtr("base_price_authority_connection_id", fields.OptionalNullable, connIDRule)
	if update {
		in.ExpectedRevision = o.Int("expected_revision", fields.Required, 0, math.MaxInt64)
	}
	varPresence := fields.Optional
	if update && in.Kind == KindVariable {
		varPresence = fields.Required
	}
	for _, vo := range o.Objects("variations", varPresence, MaxVariations) {
		var v VariationInput
		if update {
			if vo.Has("id") {
				v.ID = vo.String("id", fields.Required, variationRule)
				v.Status = vo.String("status", fields.Required, statusRule)
			}
		}
		v.Options, _ = vo.StringMap("options", fields.Required, 8, optNameRule, optValueRule)
		v.Price = vo.Int("price", fields.Required, 0, MaxPrice)
		v.OriginalPrice, _ = vo.IntPtr("original_price", fields.OptionalNullable, 1, MaxPrice)
		v.SKU, _ = vo.StringPtr("sku", fields.OptionalNullable, skuRule)
		if v.OriginalPrice != nil && *v.OriginalPrice <= v.Price {
			vo.Fail("original_price", "must be greater than the variation price (%d)", v.Price)
		}
		o.Child(vo)
		in.Variations = append(in.Variations, v)
	}
	if err := o.Err(); err != nil {
		return Input{}, err
	}
	return in, in.check()
}

func invalid(format string, args ...any) error {
	return errs.Ef(errs.CodeInvalidRequest, format, args...)
}

// check applies the rules that span fields.
func (in Input) check() error {
	if in.OriginalPrice != nil && *in.OriginalPrice <= in.Price {
		return invalid("original_price: must be greater than price (%d)", in.Price)
	}
	switch in.Kind {
	case KindSimple:
		if len(in.Options) > 0 {
			return invalid("options: must have no keys when kind is simple")
		}
		if len(in.Variations) > 0 {
			return invalid("variations: must have no items when kind is simple")
		}
	case KindVariable:
		if in.SKU != nil {
			return invalid("sku: must be null when kind is variable; give each variation its own sku")
		}
	}
	for _, name := range sortedNames(in.DefaultOptions) {
		values, ok := in.Options[name]
		if !ok {
			return invalid("default_options: %q is not one of the product's options", name)
		}
		if !contains(values, in.DefaultOptions[name]) {
			return invalid("default_options: %q is not a value of option %q", in.DefaultOptions[name], name)
		}
	}
	combos := map[string]int{}
	ids := map[string]bool{}
	for i, v := range in.Variations {
		if v.ID != "" {
			if ids[v.ID] {
				return invalid("variations[%d].id: %q appears twice", i, v.ID)
			}
			ids[v.ID] = true
		}
		if len(v.Options) != len(in.Options) {
			return invalid("variations[%d].options: must name each of the product's options exactly once", i)
		}
		for _, name := range sortedNames(v.Options) {
			values, ok := in.Options[name]
			if !ok {
				return invalid("variations[%d].options: %q is not one of the product's options", i, name)
			}
			if !contains(values, v.Options[name]) {
				return invalid("variations[%d].options: %q is not a value of option %q", i, v.Options[name], name)
			}
		}
		if v.Status == VariationRetired {
			continue
		}
		key := comboKey(v.Options)
		if j, dup := combos[key]; dup {
			return invalid("variations[%d].options: the same options as variations[%d]", i, j)
		}
		combos[key] = i
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func comboKey(opts map[string]string) string {
	var b strings.Builder
	for _, k := range sortedNames(opts) {
		fmt.Fprintf(&b, "%d:%s=%d:%s;", len(k), k, len(opts[k]), opts[k])
	}
	return b.String()
}

// Transition is a parsed transition body.
type Transition struct {
	ExpectedRevision int64
	Authority        Bindings
}

// ParseTransition reads a publish, unpublish, archive or restore body.
func ParseTransition(body []byte) (Transition, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Transition{}, err
	}
	var t Transition
	t.ExpectedRevision = o.Int("expected_revision", fields.Required, 0, math.MaxInt64)
	t.Authority.Catalog, _ = o.StringPtr("catalog_authority_connection_id", fields.OptionalNullable, connIDRule)
	t.Authority.BasePrice, _ = o.StringPtr("base_price_authority_connection_id", fields.OptionalNullable, connIDRule)
	return t, o.Err()
}
