package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestSampleEvent keeps events/bulk-worker/bulk-operation.json a batch as the queue's event
// source mapping delivers it, whose body is the work's JSON message.
func TestSampleEvent(t *testing.T) {
	lambdatest.SQSSample(t, "bulk-worker/bulk-operation.json", work, "vendor_id", "bulk_operation_id")
}

// A bulk operation runs end to end through the worker's Lambda handler, on
// each store: the submission is stored, the stream router's rules turn the
// job's insert into its message, and the handler, given that message as
// SQS delivers it, applies the record and completes the job.
func TestBulkOperationThroughTheHandler(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			e := apitest.New(t, apitest.Options{Store: kind})
			prep, err := catalog.Service{Store: e.Store, Clock: e.Clock, Authority: catalog.ServiceOwned{}}.PrepareCreate(ctx, e.Vendor.ID,
				catalog.Input{Kind: catalog.KindSimple, Name: "Mug", Slug: "mug", Options: map[string][]string{}})
			p, ops := prep.View, prep.Ops
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Store.Transact(ctx, ops...); err != nil {
				t.Fatal(err)
			}
			itemID := catalog.InventoryItemID(p.ID, 0)
			var item struct{ Data struct{ Version int64 } }
			e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+itemID).JSON(t, &item)

			r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/bulk-operations", Token: e.Token,
				Headers: map[string]string{"Idempotency-Key": "bulk-worker-1"},
				Body: map[string]any{"kind": "inventory_adjustment", "items": []map[string]any{{"key": "r1", "inventory_item_id": itemID,
					"body": map[string]any{"target_on_hand": 7, "expected_version": item.Data.Version}}}}})
			var job struct{ Data struct{ ID, Status string } }
			r.JSON(t, &job)
			if r.Status != http.StatusAccepted || job.Data.Status != "queued" {
				t.Fatalf("submit: %d %s", r.Status, r.Body)
			}

			lambdatest.WorkStored(t, e.App, datamodel.BulkKey(e.Vendor.ID, job.Data.ID), work)
			var done struct{ Data struct{ Status string } }
			e.Get("/vendors/"+e.Vendor.ID+"/bulk-operations/"+job.Data.ID).JSON(t, &done)
			var after struct {
				Data struct {
					OnHand int64 `json:"on_hand"`
				}
			}
			e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+itemID).JSON(t, &after)
			if done.Data.Status != "completed" || after.Data.OnHand != 7 {
				t.Fatalf("after the handler: job %s, on_hand %d; want completed and 7", done.Data.Status, after.Data.OnHand)
			}
		})
	}
}
