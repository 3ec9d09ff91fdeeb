package catalog

import (
	"context"
	"errors"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// GetShared is Get for callers that only read the product: it may come
// decoded from s.Decoded when the item read is the one decoded before, so
// it is shared and must not be modified (nor its slices and maps).
func (s Service) GetShared(ctx context.Context, vendorID, productID string) (Product, store.Item, error) {
	if !ValidProductID(productID) {
		return Product{}, store.Item{}, notFound()
	}
	it, err := s.Store.Get(ctx, datamodel.ProductKey(vendorID, productID))
	if errors.Is(err, store.ErrNotFound) {
		return Product{}, store.Item{}, notFound()
	}
	if err != nil {
		return Product{}, store.Item{}, errs.Unavailablef(err, "the catalog could not be read")
	}
	p, err := s.Decoded.Decode(it, Decode)
	if err != nil {
		return Product{}, store.Item{}, errs.Unavailablef(err, "the catalog could not be read")
	}
	return p, it, nil
}

// ViewOf reads a product to answer with it (GetShared).
func (s Service) ViewOf(ctx context.Context, vendorID, productID string) (View, error) {
	p, _, err := s.GetShared(ctx, vendorID, productID)
	if err != nil {
		return View{}, err
	}
	return p.View(), nil
}
