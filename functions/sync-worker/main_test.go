package main

import (
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
)

// TestSampleEvent keeps events/sync-worker/sync-job.json a batch as the
// queue's event source mapping delivers it, whose body is the work's JSON
// message.
func TestSampleEvent(t *testing.T) {
	lambdatest.SQSSample(t, "sync-worker/sync-job.json", work, "vendor_id", "sync_job_id")
}

// A sync job runs end to end through the worker's Lambda handler, on each
// store: the job is stored, the stream router's rules turn its insert into
// its message, and the handler, given that message as SQS delivers it,
// decides the item and completes the job.
func TestSyncJobThroughTheHandler(t *testing.T) {
	for _, kind := range apitest.Stores() {
		t.Run(string(kind), func(t *testing.T) {
			e := apitest.New(t, apitest.Options{Store: kind})
			r := e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/connections", Token: e.Token,
				Headers: map[string]string{"Idempotency-Key": "sync-worker-conn"},
				Body: map[string]any{"provider": "marketplace_a", "external_account_id": "acct-1", "display_name": "Main store",
					"roles": map[string]string{"catalog": "destination", "base_price": "destination", "inventory": "destination",
						"order_ingress": "enabled", "external_order_fulfillment": "moku"}}})
			var conn struct{ Data struct{ ID string } }
			r.JSON(t, &conn)
			if r.Status != http.StatusCreated {
				t.Fatalf("connection: %d %s", r.Status, r.Body)
			}
			r = e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/sync-jobs", Token: e.Token,
				Headers: map[string]string{"Idempotency-Key": "sync-worker-1"},
				Body: map[string]any{"connection_id": conn.Data.ID, "kind": "inventory",
					"items": []map[string]any{{"inventory_item_id": "inv_missing_000", "on_hand": 1}}}})
			var job struct{ Data struct{ ID, Status string } }
			r.JSON(t, &job)
			if r.Status != http.StatusAccepted || job.Data.Status != "queued" {
				t.Fatalf("submit: %d %s", r.Status, r.Body)
			}

			lambdatest.WorkStored(t, e.App, datamodel.SyncJobKey(e.Vendor.ID, job.Data.ID), work)
			var done struct {
				Data struct {
					Status string
					Items  []struct{ Status, Code string }
				}
			}
			e.Get("/vendors/"+e.Vendor.ID+"/sync-jobs/"+job.Data.ID).JSON(t, &done)
			if done.Data.Status != "completed" || len(done.Data.Items) != 1 || done.Data.Items[0].Status != "failed" || done.Data.Items[0].Code != "NOT_FOUND" {
				t.Fatalf("after the handler: %+v", done.Data)
			}
		})
	}
}
