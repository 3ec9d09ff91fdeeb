package main

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/lambdaapi/lambdatest"
	"github.com/moku/sellerapi/shared/sellerorder"
)

// TestSampleBatchProjectsASellerOrder runs events/seller-order-worker/
// committed.json, a batch as the queue's mapping delivers it, through the
// worker main builds: the committed moku-fulfilled order becomes one open
// seller order with the event's lines, and the same batch again (SQS
// delivers at least once) changes nothing.
func TestSampleBatchProjectsASellerOrder(t *testing.T) {
	ctx := context.Background()
	f := lambdatest.SQLite(t)
	a, err := app.New(ctx, config.Default(), app.WithStore(f.Store), app.WithClock(clock.System{}), app.WithLogOutput(t.Output()))
	if err != nil {
		t.Fatal(err)
	}
	h, err := lambdaapi.NewWorker(a, &lambdatest.Queues{}, work)
	if err != nil {
		t.Fatal(err)
	}
	batch := lambdatest.SQSEvent(t, "seller-order-worker/committed.json", work)
	var e event.Event
	if err := json.Unmarshal([]byte(batch.Records[0].Body), &e); err != nil {
		t.Fatalf("body: %v", err)
	}
	var want struct {
		ExternalOrderID string             `json:"external_order_id"`
		ConnectionID    string             `json:"connection_id"`
		Lines           []sellerorder.Line `json:"lines"`
	}
	raw, _ := json.Marshal(e.Data)
	if err := json.Unmarshal(raw, &want); err != nil || len(want.Lines) == 0 {
		t.Fatalf("the sample's data %s has no lines (%v)", raw, err)
	}
	key := datamodel.SellerOrderKey(e.VendorID, sellerorder.IDOf(e.Resource.ID))
	for i := range 2 {
		resp, err := h(ctx, batch)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("pass %d: %+v, %v", i, resp, err)
		}
		it, err := f.Store.Get(ctx, key)
		if err != nil {
			t.Fatalf("pass %d: no seller order at %v: %v", i, key, err)
		}
		var o sellerorder.Order
		if err := json.Unmarshal(it.Data, &o); err != nil {
			t.Fatal(err)
		}
		if o.Status != sellerorder.StatusOpen || o.Version != 1 || o.ChannelOrderID != want.ExternalOrderID ||
			o.ConnectionID != want.ConnectionID || o.SourceEventID != e.ID || !reflect.DeepEqual(o.Lines, want.Lines) {
			t.Errorf("pass %d: projected %+v", i, o)
		}
	}
}
