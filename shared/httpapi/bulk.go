package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// BulkOperations is the Bulk operations group: batches of inventory
// adjustments, accepted at once and applied by the bulk worker.
var BulkOperations = Group{Name: "bulk-operations", Routes: func(s *Server) []Route {
	base := "/vendors/{vendor_id}/bulk-operations"
	return []Route{
		{Method: http.MethodPost, Path: base, Operation: "createBulkOperation", Scopes: []auth.Scope{auth.JobsWrite, auth.InventoryWrite}, Handle: s.createBulkOperation},
		{Method: http.MethodGet, Path: base + "/{bulk_operation_id}", Operation: "getBulkOperation", Scopes: []auth.Scope{auth.JobsRead}, ReadAhead: aheadOf(aheadBulk), Handle: s.getBulkOperation},
	}
}}

// createBulkOperation stores the job with its receipt and answers 202: the
// adjustments happen later, in the worker. The whole batch is checked
// first; any structural error rejects it before anything is stored.
func (s *Server) createBulkOperation(ctx context.Context, c *Call) error {
	body, sub, err := parsed(c, bulk.MaxBody, bulk.Parse)
	if err != nil {
		return err
	}
	return c.Mutate(ctx, "bulk_operations.create", idempotency.ProductKeyPattern, body, answer(http.StatusAccepted, func(context.Context) (store.Prepared[bulk.View], error) {
		return c.bulkOps().PrepareCreate(c.Principal.Vendor.ID, c.Principal.Token.ID, sub)
	}))
}

func (s *Server) getBulkOperation(ctx context.Context, c *Call) error {
	return getByID(ctx, c, "bulk_operation_id", c.bulkOps().Get)
}
