package httpapi_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/reservation"
)

type effectView struct {
	ID              string `json:"id"`
	InventoryItemID string `json:"inventory_item_id"`
	ProductID       string `json:"product_id"`
	OnHandDelta     int64  `json:"on_hand_delta"`
	ReservedDelta   int64  `json:"reserved_delta"`
	Before, After   struct {
		OnHand   int64 `json:"on_hand"`
		Reserved int64 `json:"reserved"`
	}
	Version int64
	Cause   struct {
		Type      string
		ID        *string
		Action    string
		RecordKey *string `json:"record_key"`
	}
	RequestID *string `json:"request_id"`
}

// effects walks every page of an item's stock effects.
func effects(t *testing.T, e *apitest.Env, item string) []effectView {
	t.Helper()
	var all []effectView
	path := "/vendors/" + e.Vendor.ID + "/stock-effects?limit=7&inventory_item_id=" + url.QueryEscape(item)
	for {
		var page struct {
			Data []effectView
			Page struct {
				NextCursor *string `json:"next_cursor"`
			}
		}
		r := e.Get(path)
		if r.Status != 200 {
			t.Fatalf("list effects: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &page)
		all = append(all, page.Data...)
		if page.Page.NextCursor == nil {
			return all
		}
		path = "/vendors/" + e.Vendor.ID + "/stock-effects?limit=7&inventory_item_id=" + url.QueryEscape(item) + "&page_after=" + url.QueryEscape(*page.Page.NextCursor)
	}
}

// checkLedger checks the invariant: effects chain by version (each before
// is the previous after), and their deltas sum to the item's buckets.
func checkLedger(t *testing.T, f stockFixture) []effectView {
	t.Helper()
	list := effects(t, f.e, f.item)
	oh, rs, _, version := f.buckets(t)
	var sumOH, sumRS int64
	for i, ef := range list {
		if ef.After.OnHand != ef.Before.OnHand+ef.OnHandDelta || ef.After.Reserved != ef.Before.Reserved+ef.ReservedDelta {
			t.Fatalf("effect %s: after is not before plus the deltas: %+v", ef.ID, ef)
		}
		if i > 0 {
			prev := list[i-1]
			if ef.Version != prev.Version+1 || ef.Before != prev.After {
				t.Fatalf("effect %d (v%d, before %+v) does not follow v%d (after %+v)", i, ef.Version, ef.Before, prev.Version, prev.After)
			}
		} else if ef.Before.OnHand != 0 || ef.Before.Reserved != 0 || ef.Version != 2 {
			t.Fatalf("first effect does not start from the new item: %+v", ef)
		}
		sumOH += ef.OnHandDelta
		sumRS += ef.ReservedDelta
	}
	if sumOH != oh || sumRS != rs {
		t.Fatalf("deltas sum to on_hand %d reserved %d; the item holds %d %d", sumOH, sumRS, oh, rs)
	}
	if n := len(list); n > 0 && list[n-1].Version != version {
		t.Fatalf("last effect at version %d, item at %d", list[n-1].Version, version)
	}
	return list
}

func TestStockEffectPerMovement(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10) // adjustment 0 -> 10, version 2
		e := f.e
		var reqIDs []*string
		rid := func(r *apitest.Resp, status int) *apitest.Resp {
			t.Helper()
			if r.Status != status {
				t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
			}
			id := r.Header.Get("X-Request-Id")
			reqIDs = append(reqIDs, &id)
			return r
		}
		reqIDs = append(reqIDs, nil) // the fixture's adjustment: its request id is checked below by value
		var a, b, c resBody
		rid(f.reserve("eff-res-a", 3), 201).JSON(t, &a)
		rid(f.move(a.Data.ID, "commit", "eff-commit-a", map[string]any{"expected_version": 1}), 200)
		rid(f.reserve("eff-res-b", 2), 201).JSON(t, &b)
		rid(f.move(b.Data.ID, "release", "eff-release-b", map[string]any{"expected_version": 1}), 200)
		rid(adjust(e, f.item, "eff-adjust-2", map[string]any{"target_on_hand": 12, "expected_version": 6}), 200)
		// An exact replay answers from the receipt and moves nothing.
		if r := adjust(e, f.item, "eff-adjust-2", map[string]any{"target_on_hand": 12, "expected_version": 6}); r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", r.Status, r.Body)
		}
		if r := f.reserve("eff-res-a", 3); r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("reservation replay: %d %s", r.Status, r.Body)
		}
		rid(f.reserve("eff-res-c", 4, "expires_in_seconds", 60), 201).JSON(t, &c)
		e.Clock.Advance(61 * time.Second)
		if run, err := (reservation.Service{Store: e.Store, Clock: e.Clock}).ExpireDue(context.Background(), 10); err != nil || run.Expired != 1 || run.Failed != 0 {
			t.Fatalf("expired %+v, %v", run, err)
		}
		reqIDs = append(reqIDs, nil)

		type want struct {
			dOH, dRS     int64
			bOH, bRS     int64
			typ, action  string
			id           string
			hasRequestID bool
		}
		wants := []want{
			{10, 0, 0, 0, "adjustment", "adjusted", "", true},
			{0, 3, 10, 0, "reservation", "reserved", a.Data.ID, true},
			{-3, -3, 10, 3, "reservation", "committed", a.Data.ID, true},
			{0, 2, 7, 0, "reservation", "reserved", b.Data.ID, true},
			{0, -2, 7, 2, "reservation", "released", b.Data.ID, true},
			{5, 0, 7, 0, "adjustment", "adjusted", "", true},
			{0, 4, 12, 0, "reservation", "reserved", c.Data.ID, true},
			{0, -4, 12, 4, "reservation", "expired", c.Data.ID, false},
		}
		list := checkLedger(t, f)
		if len(list) != len(wants) {
			t.Fatalf("%d effects, want %d: %+v", len(list), len(wants), list)
		}
		for i, w := range wants {
			ef := list[i]
			if ef.OnHandDelta != w.dOH || ef.ReservedDelta != w.dRS || ef.Before.OnHand != w.bOH || ef.Before.Reserved != w.bRS ||
				ef.Cause.Type != w.typ || ef.Cause.Action != w.action || ef.Version != int64(i+2) || ef.InventoryItemID != f.item {
				t.Fatalf("effect %d = %+v, want %+v", i, ef, w)
			}
			if (w.id == "") != (ef.Cause.ID == nil) || (w.id != "" && *ef.Cause.ID != w.id) {
				t.Fatalf("effect %d cause id %v, want %q", i, ef.Cause.ID, w.id)
			}
			if (ef.RequestID != nil) != w.hasRequestID {
				t.Fatalf("effect %d request id %v", i, ef.RequestID)
			}
			if i > 0 && w.hasRequestID && *ef.RequestID != *reqIDs[i] {
				t.Fatalf("effect %d request id %s, the response said %s", i, *ef.RequestID, *reqIDs[i])
			}
		}
		var one struct{ Data effectView }
		e.Get("/vendors/"+e.Vendor.ID+"/stock-effects/"+list[2].ID).JSON(t, &one)
		if one.Data.ID != list[2].ID || one.Data.Cause.Action != "committed" {
			t.Fatalf("get effect: %+v", one.Data)
		}
		e.Get("/vendors/"+e.Vendor.ID+"/stock-effects/eff_nope_000000000001").WantProblem(t, 404, "NOT_FOUND")
		var all struct{ Data []effectView }
		e.Get("/vendors/"+e.Vendor.ID+"/stock-effects").JSON(t, &all)
		if len(all.Data) != len(wants) {
			t.Fatalf("unfiltered list: %d effects", len(all.Data))
		}
	})
}

// TestStockLedgerInvariant runs a randomized concurrent workload of
// adjustments, reservations, commits, releases and expiries on one item,
// then checks that the ledger explains the buckets exactly.
func TestStockLedgerInvariant(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 20)
		svc := reservation.Service{Store: f.e.Store, Clock: f.e.Clock}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var held []resBody
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(g), 8))
				for i := 0; i < 12; i++ {
					key := fmt.Sprintf("inv-%d-%02d", g, i)
					switch op := rnd.IntN(5); {
					case op <= 1:
						var r resBody
						res := f.reserve(key, 1+rnd.IntN(3), "expires_in_seconds", 60+rnd.IntN(120))
						if res.Status == 201 {
							res.JSON(t, &r)
							mu.Lock()
							held = append(held, r)
							mu.Unlock()
						}
					case op == 2 || op == 3:
						mu.Lock()
						if len(held) == 0 {
							mu.Unlock()
							continue
						}
						j := rnd.IntN(len(held))
						r := held[j]
						held = append(held[:j], held[j+1:]...)
						mu.Unlock()
						action := map[int]string{2: "commit", 3: "release"}[op]
						f.e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + f.e.Vendor.ID + "/inventory-reservations/" + r.Data.ID + "/" + action,
							Token: f.e.Token, Body: map[string]any{"expected_version": 1}, Headers: map[string]string{"Idempotency-Key": key}})
					default:
						var it itemBody
						f.e.Get("/vendors/"+f.e.Vendor.ID+"/inventory-items/"+f.item).JSON(t, &it)
						target := it.Data.Reserved + int64(rnd.IntN(15))
						adjust(f.e, f.item, key, map[string]any{"target_on_hand": target, "expected_version": it.Data.Version})
					}
				}
			}(g)
		}
		// The expirer runs alongside as the clock moves.
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 6; i++ {
				time.Sleep(20 * time.Millisecond)
				f.e.Clock.Advance(30 * time.Second)
				if run, err := svc.ExpireDue(context.Background(), 100); err != nil || run.Failed != 0 {
					t.Errorf("expire: %+v %v", run, err)
				}
			}
		}()
		wg.Wait()
		list := checkLedger(t, f)
		if len(list) < 10 {
			t.Fatalf("only %d effects: the workload did too little", len(list))
		}
	})
}

// TestStockEffectOfBulkRecord: a bulk record's adjustment names the
// operation and the record, and has no request id (the worker's work).
func TestStockEffectOfBulkRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 2)
		job := mustSubmit(t, e, e.Token, "bulk-effect-1", batch(items, 7, 9))
		work(t, e, kind, job.Data.ID)
		for i, item := range items {
			list := effects(t, e, item)
			if len(list) != 1 {
				t.Fatalf("item %d: %d effects", i, len(list))
			}
			ef := list[0]
			key := fmt.Sprintf("r%d", i+1)
			if ef.Cause.Type != "bulk_operation" || ef.Cause.ID == nil || *ef.Cause.ID != job.Data.ID || ef.Cause.RecordKey == nil ||
				*ef.Cause.RecordKey != key || ef.RequestID != nil || ef.OnHandDelta != int64(7+2*i) || ef.Version != 2 {
				t.Fatalf("bulk effect %d: %+v", i, ef)
			}
		}
	})
}
