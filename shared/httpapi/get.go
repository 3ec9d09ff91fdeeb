package httpapi

import (
	"context"
	"net/http"
)

// getByID answers 200 with the vendor's resource that get reads, named by
// the path parameter param.
func getByID[V any](c *Call, param string, get func(ctx context.Context, vendorID, id string) (V, error)) error {
	v, err := get(c.Ctx, c.Principal.Vendor.ID, c.R.PathValue(param))
	if err != nil {
		return err
	}
	return c.Data(http.StatusOK, v)
}
