package httpapi_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

type xoBody struct {
	Data struct {
		ID          string
		Status      string
		Fulfillment string
		Version     int64
		Lines       []struct {
			LineID   string `json:"line_id"`
			Quantity int64
			Problem  *string
		}
	}
}

func xoLine(id, item string, qty int) map[string]any {
	return map[string]any{"line_id": id, "inventory_item_id": item, "quantity": qty, "unit_price": 1250}
}

func importXO(e *apitest.Env, key, conn, ext string, lines ...map[string]any) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/external-orders", Token: e.Token,
		Body: map[string]any{"connection_id": conn, "external_order_id": ext, "lines": lines}, Headers: map[string]string{"Idempotency-Key": key}})
}

func moveXO(e *apitest.Env, id, action string, version int64) *apitest.Resp {
	return e.DoRetrying(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/external-orders/" + id + "/" + action,
		Token: e.Token, Body: map[string]any{"expected_version": version}})
}

func mustXO(t *testing.T, r *apitest.Resp, status int, want string) xoBody {
	t.Helper()
	if r.Status != status {
		t.Fatalf("external order: %d %s", r.Status, r.Body)
	}
	var o xoBody
	r.JSON(t, &o)
	if o.Data.Status != want {
		t.Fatalf("external order status %q, want %q: %s", o.Data.Status, want, r.Body)
	}
	return o
}

// orderCounts reads a connection's unresolved and channel-fulfillment counts.
func orderCounts(t *testing.T, e *apitest.Env, connID string) (unresolved, fulfilling int64) {
	t.Helper()
	var c struct {
		Data struct {
			Unresolved int64 `json:"unresolved_external_order_count"`
			Fulfilling int64 `json:"active_channel_fulfillment_count"`
		}
	}
	e.Get("/vendors/"+e.Vendor.ID+"/connections/"+connID).JSON(t, &c)
	return c.Data.Unresolved, c.Data.Fulfilling
}

func wantOrderCounts(t *testing.T, e *apitest.Env, connID string, unresolved, fulfilling int64) {
	t.Helper()
	if u, f := orderCounts(t, e, connID); u != unresolved || f != fulfilling {
		t.Fatalf("connection counts unresolved %d fulfilling %d, want %d %d", u, f, unresolved, fulfilling)
	}
}

func channelRoles() map[string]string {
	r := map[string]string{}
	for k, v := range destinationRoles {
		r[k] = v
	}
	r["external_order_fulfillment"] = "channel"
	return r
}

func TestExternalOrderLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		// Two lines on the same item are held together.
		first := importXO(e, "xo-import-1", f.conn, "EXT-1", xoLine("a", f.item, 3), xoLine("b", f.item, 2))
		o1 := mustXO(t, first, 201, "reserved")
		if o1.Data.Fulfillment != "moku" || o1.Data.Version != 1 {
			t.Fatalf("imported: %s", first.Body)
		}
		wantBuckets(t, f, 10, 5, 5)
		wantOrderCounts(t, e, f.conn, 1, 0)
		if again := importXO(e, "xo-import-1", f.conn, "EXT-1", xoLine("a", f.item, 3), xoLine("b", f.item, 2)); string(again.Body) != string(first.Body) {
			t.Fatalf("replay: %d %s", again.Status, again.Body)
		}
		// The same order under another key: the first order, nothing held twice.
		if same := mustXO(t, importXO(e, "xo-import-1b", f.conn, "EXT-1", xoLine("a", f.item, 3), xoLine("b", f.item, 2)), 200, "reserved"); same.Data.ID != o1.Data.ID {
			t.Fatalf("same content answered another order %s", same.Data.ID)
		}
		importXO(e, "xo-import-1c", f.conn, "EXT-1", xoLine("a", f.item, 4)).WantProblem(t, 409, "EXTERNAL_ORDER_DUPLICATE")
		wantBuckets(t, f, 10, 5, 5)
		wantOrderCounts(t, e, f.conn, 1, 0)

		// Short stock and an unknown item: unreservable, nothing moves.
		o2 := mustXO(t, importXO(e, "xo-import-2", f.conn, "EXT-2", xoLine("a", f.item, 6)), 201, "unreservable")
		if p := o2.Data.Lines[0].Problem; p == nil || *p != "insufficient_stock" {
			t.Fatalf("problem: %+v", o2.Data.Lines)
		}
		o3 := mustXO(t, importXO(e, "xo-import-3", f.conn, "EXT-3", xoLine("a", "inv_nothing_0", 1), xoLine("b", f.item, 1)), 201, "unreservable")
		if p := o3.Data.Lines[0].Problem; p == nil || *p != "item_not_found" || o3.Data.Lines[1].Problem != nil {
			t.Fatalf("problems: %+v", o3.Data.Lines)
		}
		wantBuckets(t, f, 10, 5, 5)
		wantOrderCounts(t, e, f.conn, 3, 0)

		// Every 409 of the transitions.
		moveXO(e, o2.Data.ID, "commit", 1).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		moveXO(e, o2.Data.ID, "reserve", 1).WantProblem(t, 409, "INSUFFICIENT_STOCK")
		moveXO(e, o2.Data.ID, "reject", 9).WantProblem(t, 409, "EXTERNAL_ORDER_VERSION_CONFLICT")
		moveXO(e, o1.Data.ID, "reject", 1).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		moveXO(e, o1.Data.ID, "reserve", 1).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		moveXO(e, o1.Data.ID, "fulfill", 1).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		moveXO(e, "xo_missing", "commit", 1).WantProblem(t, 404, "NOT_FOUND")

		// cancel releases the holds.
		mustXO(t, moveXO(e, o1.Data.ID, "cancel", 1), 200, "cancelled")
		wantBuckets(t, f, 10, 0, 10)
		wantOrderCounts(t, e, f.conn, 2, 0)
		moveXO(e, o1.Data.ID, "commit", 2).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		// reserve retries an unreservable order once stock is there.
		mustXO(t, moveXO(e, o2.Data.ID, "reserve", 1), 200, "reserved")
		wantBuckets(t, f, 10, 6, 4)
		wantOrderCounts(t, e, f.conn, 2, 0)
		// commit consumes; a moku order leaves the unresolved count.
		mustXO(t, moveXO(e, o2.Data.ID, "commit", 2), 200, "committed")
		wantBuckets(t, f, 4, 0, 4)
		wantOrderCounts(t, e, f.conn, 1, 0)
		moveXO(e, o2.Data.ID, "fulfill", 3).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		moveXO(e, o2.Data.ID, "cancel", 3).WantProblem(t, 409, "EXTERNAL_ORDER_STATE_CONFLICT")
		mustXO(t, moveXO(e, o3.Data.ID, "reject", 1), 200, "rejected")
		wantOrderCounts(t, e, f.conn, 0, 0)
		// cancel of an unreservable order moves no stock.
		o5 := mustXO(t, importXO(e, "xo-import-5", f.conn, "EXT-5", xoLine("a", f.item, 9)), 201, "unreservable")
		wantOrderCounts(t, e, f.conn, 1, 0)
		mustXO(t, moveXO(e, o5.Data.ID, "cancel", 1), 200, "cancelled")
		wantOrderCounts(t, e, f.conn, 0, 0)

		// A channel-fulfilled order: commit counts it, fulfill resolves it.
		ch := mustConnection(t, e, "xo-conn-channel", connectionBody("marketplace_b", channelRoles()))
		o4 := mustXO(t, importXO(e, "xo-import-4", ch.Data.ID, "EXT-1", xoLine("a", f.item, 1)), 201, "reserved")
		if o4.Data.Fulfillment != "channel" {
			t.Fatalf("fulfillment %s", o4.Data.Fulfillment)
		}
		wantOrderCounts(t, e, ch.Data.ID, 1, 0)
		mustXO(t, moveXO(e, o4.Data.ID, "commit", 1), 200, "committed")
		wantOrderCounts(t, e, ch.Data.ID, 1, 1)
		mustXO(t, moveXO(e, o4.Data.ID, "fulfill", 2), 200, "fulfilled")
		wantOrderCounts(t, e, ch.Data.ID, 0, 0)
		wantBuckets(t, f, 3, 0, 3)

		// Ingress disabled, or a disconnected connection: refused.
		off := channelRoles()
		off["order_ingress"] = "disabled"
		noIngress := mustConnection(t, e, "xo-conn-off", connectionBody("marketplace_c", off))
		importXO(e, "xo-import-6", noIngress.Data.ID, "EXT-6", xoLine("a", f.item, 1)).WantProblem(t, 409, "CONNECTION_STATE_CONFLICT")
		if r := post(e, "/connections/"+ch.Data.ID+"/disconnect", map[string]any{"expected_version": 1}); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		importXO(e, "xo-import-7", ch.Data.ID, "EXT-7", xoLine("a", f.item, 1)).WantProblem(t, 409, "CONNECTION_STATE_CONFLICT")

		// Lists filter by connection and status.
		var page struct{ Data []struct{ ID, Status string } }
		e.Get("/vendors/"+e.Vendor.ID+"/external-orders?connection_id="+ch.Data.ID).JSON(t, &page)
		if len(page.Data) != 1 || page.Data[0].ID != o4.Data.ID {
			t.Fatalf("list by connection: %+v", page.Data)
		}
		e.Get("/vendors/"+e.Vendor.ID+"/external-orders?status=cancelled").JSON(t, &page)
		if len(page.Data) != 2 {
			t.Fatalf("list cancelled: %+v", page.Data)
		}
		if r := e.Get("/vendors/" + e.Vendor.ID + "/external-orders/" + o4.Data.ID); r.Status != 200 {
			t.Fatalf("get: %d %s", r.Status, r.Body)
		}
		list := checkLedger(t, f)
		n := 0
		for _, ef := range list {
			if ef.Cause.Type == "external_order" {
				n++
			}
		}
		// reserve+cancel of o1, reserve+commit of o2, reserve+commit of o4.
		if n != 6 {
			t.Fatalf("%d external order effects, want 6", n)
		}
	})
}

// TestExternalOrdersCompeteForTheLastUnits is the proof: orders from two
// connections race for ten units; exactly ten hold, the rest are
// unreservable, nothing oversells, and counters and ledger are exact.
func TestExternalOrdersCompeteForTheLastUnits(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		other := mustConnection(t, f.e, "xo-race-conn-b", connectionBody("marketplace_b", destinationRoles))
		conns := []string{f.conn, other.Data.ID}
		const n = 30
		statuses := make([]string, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				r := importXO(f.e, fmt.Sprintf("xo-race-%03d", i), conns[i%2], fmt.Sprintf("RACE-%d", i), xoLine("a", f.item, 1))
				if r.Status != 201 {
					t.Errorf("import %d: %d %s", i, r.Status, r.Body)
					return
				}
				var o xoBody
				r.JSON(t, &o)
				statuses[i] = o.Data.Status
			}(i)
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		count := map[string]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count["reserved"] != 10 || count["unreservable"] != 20 {
			t.Fatalf("outcomes %v, want 10 reserved and 20 unreservable", count)
		}
		wantBuckets(t, f, 10, 10, 0)
		wantOrderCounts(t, f.e, f.conn, n/2, 0)
		wantOrderCounts(t, f.e, other.Data.ID, n/2, 0)
		// Each unreservable order opened its conflict, counted on its connection.
		if open := listConflicts(t, f.e, "status=open&type=unreservable_external_order&limit=100"); len(open) != 20 {
			t.Fatalf("%d open conflicts, want 20", len(open))
		}
		if a, b := openConflicts(t, f.e, f.conn), openConflicts(t, f.e, other.Data.ID); a+b != 20 {
			t.Fatalf("connections count %d and %d open conflicts, want 20 in all", a, b)
		}
		list := checkLedger(t, f)
		if len(list) != 11 {
			t.Fatalf("%d effects, want the adjustment and 10 holds", len(list))
		}
	})
}

func wantBuckets(t *testing.T, f stockFixture, onHand, reserved, available int64) {
	t.Helper()
	oh, rs, av, _ := f.buckets(t)
	if oh != onHand || rs != reserved || av != available {
		t.Fatalf("buckets on_hand %d reserved %d available %d, want %d %d %d", oh, rs, av, onHand, reserved, available)
	}
}
