package catalog

import (
	"context"
	"errors"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// ViewOf reads a product to answer with it. Unlike Get, the product may
// come decoded from s.Decoded when the item read is the one decoded
// before: it is shared, so only reads that never modify it use ViewOf.
func (s Service) ViewOf(ctx context.Context, vendorID, productID string) (View, error) {
	if !ValidProductID(productID) {
		return View{}, notFound()
	}
	it, err := s.Store.Get(ctx, datamodel.ProductKey(vendorID, productID))
	if errors.Is(err, store.ErrNotFound) {
		return View{}, notFound()
	}
	if err != nil {
		return View{}, errs.Unavailablef(err, "the catalog could not be read")
	}
	p, err := s.Decoded.Decode(it, Decode)
	if err != nil {
		return View{}, errs.Unavailablef(err, "the catalog could not be read")
	}
	return p.View(), nil
}
