package syncjob

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

func TestParseKinds(t *testing.T) {
	cases := []struct {
		body string
		want Value
	}{
		{`{"kind":"inventory","items":[{"inventory_item_id":"inv_a_000","on_hand":3}]}`, Value{OnHand: new(int64(3))}},
		{`{"kind":"price","items":[{"product_id":"prd_a","variation_id":null,"price":10}]}`, Value{Price: new(int64(10))}},
		{`{"kind":"catalog","items":[{"product_id":"prd_a","name":"Shirt","catalog_status":"archived"}]}`, Value{Name: new("Shirt"), CatalogStatus: new("archived")}},
	}
	for _, c := range cases {
		sub, err := Parse([]byte(c.body), false)
		if err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		got, _ := json.Marshal(sub.Items[0].ChannelValue)
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) || sub.Items[0].Status != ItemPending || sub.ConnectionID != "" {
			t.Fatalf("%s: %s, want %s", c.body, got, want)
		}
	}
	// The plugin's body never names a connection.
	if _, err := Parse([]byte(`{"connection_id":"c1","kind":"inventory","items":[{"inventory_item_id":"i","on_hand":1}]}`), false); err == nil {
		t.Fatal("a connection_id was accepted on the plugin's body")
	}
	// A variation and the product's own price are different resources.
	if _, err := Parse([]byte(`{"kind":"price","items":[{"product_id":"p","price":1},{"product_id":"p","variation_id":"v","price":1}]}`), false); err != nil {
		t.Fatal(err)
	}
}

func TestCountsAndOutcome(t *testing.T) {
	var j Job
	for _, st := range []string{ItemInSync, ItemUpdated, ItemConflict, ItemFailed, ItemChannelStale} {
		j.Items = append(j.Items, Item{ItemView: ItemView{Status: st}})
	}
	if c := j.Counts(); c != (Counts{Total: 5, InSync: 1, Updated: 1, Conflicts: 1, Failed: 1, ChannelStale: 1}) || j.outcome() != StatusCompleted {
		t.Fatalf("%+v %s", c, j.outcome())
	}
	j.Items = append(j.Items, Item{ItemView: ItemView{Status: ItemNotAttempted}})
	if j.outcome() != StatusFailed {
		t.Fatal("a stopped job completed")
	}
}

func TestRuleStartsOnInsertOnly(t *testing.T) {
	k := datamodel.SyncJobKey("ven_1", "syn_1")
	out, err := Rule(context.Background(), store.Change{Kind: store.Inserted, Key: k})
	if err != nil || len(out) != 1 || out[0].Queue != queue.SyncJobs || string(out[0].Body) != `{"vendor_id":"ven_1","sync_job_id":"syn_1"}` {
		t.Fatalf("%+v %v", out, err)
	}
	for _, c := range []store.Change{{Kind: store.Modified, Key: k}, {Kind: store.Inserted, Key: store.Key{PK: k.PK, SK: "BULK#x"}}} {
		if out, _ := Rule(context.Background(), c); len(out) != 0 {
			t.Fatalf("%+v made %v", c, out)
		}
	}
}
