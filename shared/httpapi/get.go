package httpapi

import (
	"context"
	"net/http"
)

// getByID answers 200 with the vendor's resource that get reads, named by
// the path parameter param.
func getByID[V any](ctx context.Context, c *Call, param string, get func(ctx context.Context, vendorID, id string) (V, error)) error {
	v, err := get(ctx, c.Principal.Vendor.ID, c.R.PathValue(param))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}
