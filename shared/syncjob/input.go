package syncjob

import (
	"fmt"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/inventory"
)

// Submission is a parsed, structurally valid job.
type Submission struct {
	// ConnectionID is empty for the plugin's route, which acts for its
	// pairing's connection.
	ConnectionID string
	Kind         string
	Items        []Item
}

// Parse reads a submission body; withConnection says whether the body
// names the connection (the vendor's route) or not (the plugin's). Any
// structural error rejects the whole job and names the field, e.g.
// "items[3].on_hand: must be from 0 to 1000000000".
func Parse(body []byte, withConnection bool) (Submission, error) {
	o, err := fields.Parse(body, "")
	if err != nil {
		return Submission{}, err
	}
	var sub Submission
	if withConnection {
		sub.ConnectionID = o.String("connection_id", fields.Required, connIDRule)
	}
	sub.Kind = o.String("kind", fields.Required, kindRule)
	if sub.Kind == "" {
		// The kind's error is recorded; the items' shape depends on it.
		o.Raw("items")
		return Submission{}, o.Err()
	}
	list := o.Objects("items", fields.Required, MaxItems)
	if o.Err() == nil && len(list) < MinItems {
		o.Fail("items", "must have at least %d item", MinItems)
	}
	seen := map[string]int{}
	for i, in := range list {
		it, key, field := readItem(in, sub.Kind)
		o.Child(in)
		if o.Err() != nil {
			break
		}
		if first, dup := seen[key]; dup {
			o.Fail(fmt.Sprintf("items[%d].%s", i, field), "repeats the resource of items[%d]; a resource may appear once per job", first)
			break
		}
		seen[key] = i
		sub.Items = append(sub.Items, it)
	}
	if err := o.Err(); err != nil {
		return Submission{}, err
	}
	return sub, nil
}

// readItem reads one item of kind; key identifies its resource within the
// job and field names the field a repeat is reported on.
func readItem(in *fields.Object, kind string) (it Item, key, field string) {
	it.Status = ItemPending
	switch kind {
	case KindInventory:
		id := in.String("inventory_item_id", fields.Required, idRule)
		n := in.Int("on_hand", fields.Required, 0, inventory.MaxOnHand)
		it.Resource, it.ChannelValue = Resource{Type: conflict.ResourceInventoryItem, ID: id}, Value{OnHand: &n}
		return it, id, "inventory_item_id"
	case KindPrice:
		id := in.String("product_id", fields.Required, idRule)
		it.VariationID, _ = in.StringPtr("variation_id", fields.OptionalNullable, idRule)
		p := in.Int("price", fields.Required, 0, catalog.MaxPrice)
		it.Resource, it.ChannelValue = Resource{Type: conflict.ResourceProduct, ID: id}, Value{Price: &p}
		key, field = id+"\x00", "product_id"
		if it.VariationID != nil {
			key, field = id+"\x00"+*it.VariationID, "variation_id"
		}
		return it, key, field
	default:
		id := in.String("product_id", fields.Required, idRule)
		name := in.String("name", fields.Required, nameRule)
		st := in.String("catalog_status", fields.Required, catalogRule)
		it.Resource, it.ChannelValue = Resource{Type: conflict.ResourceProduct, ID: id}, Value{Name: &name, CatalogStatus: &st}
		return it, id, "product_id"
	}
}
