package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
)

// TestReservationExpiryShardsAndSurvivesABrokenEntry reproduces finding 11
// of issue 17: every tenant's holds were indexed in one partition, and one
// entry that failed ended the whole pass. Holds are now indexed in the
// vendor's hashed shard; a broken entry due first in that shard is counted
// and skipped while the holds after it expire; a hold indexed in the old
// single partition still expires.
func TestReservationExpiryShardsAndSurvivesABrokenEntry(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		ctx := context.Background()
		f := newStock(t, kind, 10)
		e := f.e
		var a, b resBody
		f.reserve("shard-res-a", 2, "expires_in_seconds", 60).JSON(t, &a)
		f.reserve("shard-res-b", 3, "expires_in_seconds", 60).JSON(t, &b)
		f.want(t, 10, 5, 5, 2)
		shard := datamodel.ExpiryPartition(e.Vendor.ID)
		if shard == "RESEXP" {
			t.Fatal("the vendor's holds are indexed in the global partition")
		}
		entries, err := e.Store.Query(ctx, store.Query{PK: shard, Limit: 10})
		if err != nil || len(entries) != 2 {
			t.Fatalf("shard %s holds %d entries, want 2: %v", shard, len(entries), err)
		}
		if legacy, _ := e.Store.Query(ctx, store.Query{PK: "RESEXP", Limit: 10}); len(legacy) != 0 {
			t.Fatalf("%d entries in the global partition", len(legacy))
		}
		// Move b's entry to the old global partition, as an earlier version wrote it.
		var bEntry store.Item
		for _, it := range entries {
			if containsID(it.Data, b.Data.ID) {
				bEntry = it
			}
		}
		legacy := bEntry
		legacy.PK = "RESEXP"
		broken := store.Item{PK: shard, SK: fmt.Sprintf("%012d#%s#res_broken", e.Clock.Now().Unix()-1, e.Vendor.ID), Version: 1, Data: []byte("{not json")}
		if err := e.Store.Transact(ctx, store.Delete(bEntry.Key(), store.Cond{}), store.Put(legacy, store.Cond{}), store.Put(broken, store.Cond{})); err != nil {
			t.Fatal(err)
		}

		e.Clock.Advance(61 * time.Second)
		run, err := reservation.Service{Store: e.Store, Clock: e.Clock}.ExpireDue(ctx, 100)
		if err != nil || run.Expired != 2 || run.Failed != 1 || len(run.Errors) != 1 {
			t.Fatalf("pass: %+v %v; want 2 expired and the broken entry counted", run, err)
		}
		f.want(t, 10, 0, 10, 0)
		// The broken entry stays to be seen again; nothing else is left to do.
		run, err = reservation.Service{Store: e.Store, Clock: e.Clock}.ExpireDue(ctx, 100)
		if err != nil || run.Expired != 0 || run.Failed != 1 {
			t.Fatalf("second pass: %+v %v", run, err)
		}
		if left, _ := e.Store.Query(ctx, store.Query{PK: "RESEXP", Limit: 10}); len(left) != 0 {
			t.Fatalf("%d stale entries left in the global partition", len(left))
		}
	})
}

func containsID(data []byte, id string) bool {
	var e struct {
		ReservationID string `json:"reservation_id"`
	}
	return json.Unmarshal(data, &e) == nil && e.ReservationID == id
}
