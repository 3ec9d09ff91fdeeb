package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// Check is what store.check read: the vendors counted, and of one vendor
// its record, two pages of its products (the second reached through a
// cursor signed and checked with the table's cursor keys) and its webhook
// subscriptions with their signing secrets opened.
type Check struct {
	Vendors int           `json:"vendors"`
	Vendor  *account.View `json:"vendor"`
	// Products counts the products on each of the first two pages
	// (at most CheckPage each).
	Products      []int `json:"products"`
	CursorKeys    int   `json:"cursor_keys"`
	Subscriptions int   `json:"webhook_subscriptions"`
	SecretsOpened int   `json:"webhook_secrets_opened"`
}

// Sealed is what webhook-secrets.seal did.
type Sealed struct {
	Vendors int `json:"vendors"`
	Sealed  int `json:"secrets_sealed"`
}

// eachVendor calls f with the id of every vendor of the registry.
func (s Service) eachVendor(ctx context.Context, f func(id string) error) error {
	for after := ""; ; {
		items, err := s.Store.Query(ctx, store.Query{PK: datamodel.VendorRegistry, After: after, Limit: 100})
		if err != nil {
			return fmt.Errorf("read the vendors: %w", err)
		}
		for _, it := range items {
			if err := f(it.SK); err != nil {
				return err
			}
		}
		if len(items) < 100 {
			return nil
		}
		after = items[len(items)-1].SK
	}
}

// sealWebhookSecrets seals every signing secret stored in the clear.
func (s Service) sealWebhookSecrets(ctx context.Context) (Sealed, error) {
	if s.Secrets == nil {
		return Sealed{}, errors.New("no box to seal secrets with")
	}
	hooks := s.Webhooks
	var out Sealed
	err := s.eachVendor(ctx, func(id string) error {
		n, err := hooks.SealPlaintext(ctx, id)
		out.Vendors++
		out.Sealed += n
		return err
	})
	return out, err
}

// Recounted is what webhook-subscriptions.recount did.
type Recounted struct {
	Vendors   int `json:"vendors"`
	Recounted int `json:"recounted"`
}

// recountSubscriptions completes every older count item's per-type
// counts (webhook.Service.Recount).
func (s Service) recountSubscriptions(ctx context.Context) (Recounted, error) {
	var out Recounted
	err := s.eachVendor(ctx, func(id string) error {
		done, err := s.Webhooks.Recount(ctx, id)
		out.Vendors++
		if done {
			out.Recounted++
		}
		return err
	})
	return out, err
}

// CheckPage is the page size of store.check's product pages.
const CheckPage = 2

// check reads the store as the API would, and fails on what it cannot
// read (an item that does not decode, a key or secret that does not
// open), so that a restored table is known to serve before traffic is
// moved to it. It writes nothing, but that reading a cursor key stored in
// the clear seals it, as every reader does.
func (s Service) check(ctx context.Context, vendorID string) (Check, error) {
	var c Check
	first := ""
	if err := s.eachVendor(ctx, func(id string) error {
		if first == "" {
			first = id
		}
		c.Vendors++
		return nil
	}); err != nil {
		return Check{}, err
	}
	if s.Secrets == nil {
		return Check{}, fmt.Errorf("no box to open secrets with")
	}
	// A store that never served a list has no cursor keys: the check does
	// not make them.
	var codec cursor.Codec
	if _, err := s.Store.Get(ctx, datamodel.CursorSigningKey()); err == nil {
		if codec, err = (cursor.Keyring{Store: s.Store, Box: s.Secrets, Clock: s.Clock}).Codec(ctx); err != nil {
			return Check{}, err
		}
		c.CursorKeys = codec.Keys()
	} else if !errors.Is(err, store.ErrNotFound) {
		return Check{}, fmt.Errorf("read the cursor keys: %w", err)
	}
	if vendorID == "" {
		vendorID = first
	}
	if vendorID == "" {
		return c, nil
	}
	v, err := s.Vendors.Get(ctx, vendorID)
	if err != nil {
		return Check{}, err
	}
	view := v.View()
	c.Vendor = &view
	products := s.Catalog
	binding := cursor.Binding{Resource: "products", VendorID: v.ID, TokenID: "store.check"}
	after := ""
	for page := range 2 {
		ps, err := products.List(ctx, v.ID, after, CheckPage)
		if err != nil {
			return Check{}, err
		}
		c.Products = append(c.Products, len(ps.Items))
		if !ps.More || page == 1 || c.CursorKeys == 0 {
			break
		}
		cur, err := codec.Encode(binding, ps.Last)
		if err != nil {
			return Check{}, err
		}
		if after, err = codec.Decode(binding, cur); err != nil {
			return Check{}, err
		}
	}
	items, err := s.Store.Query(ctx, store.Query{PK: datamodel.VendorPartition(v.ID), Prefix: datamodel.SubscriptionPrefix, Limit: 100})
	if err != nil {
		return Check{}, errs.Unavailablef(err, "webhook subscriptions could not be read")
	}
	for _, it := range items {
		sub, err := webhook.Decode(it)
		if err != nil {
			return Check{}, err
		}
		c.Subscriptions++
		if err := sub.Open(ctx, s.Secrets); err != nil {
			return Check{}, err
		}
		c.SecretsOpened++
	}
	return c, nil
}
