package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/store"
)

// Inventory is the Inventory group.
var Inventory = Group{Name: "inventory", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.InventoryRead}, []auth.Scope{auth.InventoryWrite}
	base := "/vendors/{vendor_id}/inventory-items"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listInventoryItems", Scopes: read, ReadAhead: aheadOf(aheadListStart), PageAhead: pageInventory, Handle: s.listInventory},
		{Method: http.MethodGet, Path: base + "/{inventory_item_id}", Operation: "getInventoryItem", Scopes: read, ReadAhead: aheadOf(aheadItem), Handle: s.getInventoryItem},
		{Method: http.MethodPost, Path: base + "/{inventory_item_id}/adjustments", Operation: "adjustInventoryItem", Scopes: write,
			ReadAhead: aheadOf(aheadItem, aheadAuthority, aheadReceipt("inventory.adjust", idempotency.ProductKeyPattern)), Handle: s.adjustInventory},
		// Stock effects are the ledger of the items' movements, read with
		// the items' scope.
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/stock-effects", Operation: "listStockEffects", Scopes: read, PageAhead: pageEffects, Handle: s.listStockEffects},
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/stock-effects/{effect_id}", Operation: "getStockEffect", Scopes: read, Handle: s.getStockEffect},
	}
}}

func (s *Server) listInventory(ctx context.Context, c *Call) error {
	pr, err := c.PageParams(ctx, "inventory-items", "")
	if err != nil {
		return err
	}
	items, err := c.inventory().ListEncoded(ctx, c.Principal.Vendor.ID, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, items)
}

func (s *Server) getInventoryItem(ctx context.Context, c *Call) error {
	it, err := c.inventory().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("inventory_item_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, it)
}

func (s *Server) adjustInventory(ctx context.Context, c *Call) error {
	body, a, err := parsed(c, 0, inventory.ParseAdjustment)
	if err != nil {
		return err
	}
	id := c.R.PathValue("inventory_item_id")
	err = c.Mutate(ctx, "inventory.adjust", idempotency.ProductKeyPattern, body, answer(http.StatusOK, func(ctx context.Context) (store.Prepared[inventory.Item], error) {
		return c.inventory().PrepareAdjust(ctx, c.Principal.Vendor.ID, id, a)
	}))
	if err == nil {
		return nil
	}
	source := conflict.Source{Type: conflict.SourceRequest}
	if rid := ids.RequestID(ctx); rid != nil {
		source.ID = *rid
	}
	return c.inventory().Fence(ctx, c.Principal.Vendor.ID, id, a, source, err)
}

func (s *Server) listStockEffects(ctx context.Context, c *Call) error {
	item := c.R.URL.Query().Get("inventory_item_id")
	if !validEffectsItem(item) {
		return errs.E(errs.CodeInvalidParameter, "inventory_item_id: not an inventory item id")
	}
	pr, err := c.PageParams(ctx, "stock-effects", "inventory_item_id="+item)
	if err != nil {
		return err
	}
	effects, err := c.effects().List(ctx, c.Principal.Vendor.ID, item, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, effects)
}

func (s *Server) getStockEffect(ctx context.Context, c *Call) error {
	e, err := c.effects().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("effect_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, e)
}
