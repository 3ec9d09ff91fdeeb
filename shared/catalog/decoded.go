package catalog

import (
	"context"
	"encoding/json"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// GetShared is Get for callers that only read the product: it may come
// decoded from s.Decoded when the item read is the one decoded before, so
// it is shared and must not be modified (nor its slices and maps).
func (s Service) GetShared(ctx context.Context, vendorID, productID string) (Product, store.Item, error) {
	return s.get(ctx, vendorID, productID, func(it store.Item) (Product, error) { return s.Decoded.Decode(it, Decode) })
}

// get reads a product and its store item, decoded by decode.
func (s Service) get(ctx context.Context, vendorID, productID string, decode func(store.Item) (Product, error)) (Product, store.Item, error) {
	if !ValidProductID(productID) {
		return Product{}, store.Item{}, productErrors.NotFound()
	}
	var it store.Item
	p, err := store.Read(ctx, s.Store, datamodel.ProductKey(vendorID, productID), func(read store.Item) (Product, error) {
		it = read
		return decode(read)
	}, productErrors.NotFound(), productErrors.Unavailable)
	if err != nil {
		return Product{}, store.Item{}, err
	}
	return p, it, nil
}

// EncodedViewOf reads a product to answer with its view's JSON, kept encoded in
// s.Decoded beside the product (decoded.Cache.View: it answers only for
// the product's very bytes). The bytes are shared and must not be
// modified.
func (s Service) EncodedViewOf(ctx context.Context, vendorID, productID string) ([]byte, error) {
	var b []byte
	_, _, err := s.get(ctx, vendorID, productID, func(it store.Item) (Product, error) {
		var err error
		b, err = s.Decoded.View(it, Decode, productView{}, func(p Product) ([]byte, error) { return json.Marshal(p.View()) })
		return Product{}, err
	})
	return b, err
}

// productView names a product's own view among the encodings kept beside
// it.
type productView struct{}
