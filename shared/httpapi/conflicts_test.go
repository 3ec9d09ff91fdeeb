package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

type conflictBody struct {
	ID           string
	Type         string
	ConnectionID *string `json:"connection_id"`
	Resource     struct{ Type, ID string }
	Status       string
	Version      int64
	Resolution   *struct {
		Status, Reason string
		By             struct {
			Type string
			ID   *string
		}
	}
	ServiceValue map[string]any `json:"service_value"`
	ChannelValue map[string]any `json:"channel_value"`
	Source       struct{ Type, ID string }
}

func listConflicts(t *testing.T, e *apitest.Env, query string) []conflictBody {
	t.Helper()
	var page struct{ Data []conflictBody }
	r := e.Get("/vendors/" + e.Vendor.ID + "/conflicts?" + query)
	if r.Status != 200 {
		t.Fatalf("list conflicts: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &page)
	return page.Data
}

func closeConflict(e *apitest.Env, id, action string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/conflicts/" + id + "/" + action, Token: e.Token, Body: body})
}

func mustConflict(t *testing.T, r *apitest.Resp, status string) conflictBody {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("conflict: %d %s", r.Status, r.Body)
	}
	var c struct{ Data conflictBody }
	r.JSON(t, &c)
	if c.Data.Status != status {
		t.Fatalf("conflict status %q, want %q: %s", c.Data.Status, status, r.Body)
	}
	return c.Data
}

func replaceRoles(e *apitest.Env, connID string, version int64, roles any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPut, Path: "/connections/" + connID + "/roles", Token: e.Token,
		Body: map[string]any{"expected_version": version, "roles": roles}})
}

func disconnect(e *apitest.Env, connID string, version int64) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/connections/" + connID + "/disconnect", Token: e.Token,
		Body: map[string]any{"expected_version": version}})
}

func connectionVersion(t *testing.T, e *apitest.Env, connID string) int64 {
	t.Helper()
	var c connBody
	e.Get("/vendors/"+e.Vendor.ID+"/connections/"+connID).JSON(t, &c)
	return c.Data.Version
}

// TestDuplicateImportOpensAConflictThatBlocksTheConnection: a second
// import of an external id with other content is refused and recorded once;
// while it is open, role changes and disconnect answer 409 naming it;
// dismissing it (versioned, with a reason) lifts the block.
func TestDuplicateImportOpensAConflictThatBlocksTheConnection(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		o := mustXO(t, importXO(e, "cfl-import-1", f.conn, "EXT-1", xoLine("a", f.item, 3)), 201, "reserved")
		mustXO(t, moveXO(e, o.Data.ID, "cancel", 1), 200, "cancelled")

		p := importXO(e, "cfl-import-2", f.conn, "EXT-1", xoLine("a", f.item, 4)).WantProblem(t, 409, "EXTERNAL_ORDER_DUPLICATE")
		open := listConflicts(t, e, "status=open")
		if len(open) != 1 || open[0].Type != "duplicate_external_id" || open[0].Resource.ID != o.Data.ID ||
			open[0].ConnectionID == nil || *open[0].ConnectionID != f.conn || open[0].Version != 1 {
			t.Fatalf("open conflicts: %+v", open)
		}
		if !strings.Contains(p.Detail, open[0].ID) {
			t.Fatalf("the 409 does not name the conflict: %s", p.Detail)
		}
		if open[0].ChannelValue["external_order_id"] != "EXT-1" || open[0].ServiceValue["lines"] == nil {
			t.Fatalf("values: %+v", open[0])
		}
		// The same disagreement again is the same conflict.
		importXO(e, "cfl-import-3", f.conn, "EXT-1", xoLine("a", f.item, 5)).WantProblem(t, 409, "EXTERNAL_ORDER_DUPLICATE")
		if n := len(listConflicts(t, e, "")); n != 1 {
			t.Fatalf("%d conflicts after a repeat, want 1", n)
		}
		id := open[0].ID

		// The open conflict blocks role changes and disconnect.
		ver := connectionVersion(t, e, f.conn)
		busy := replaceRoles(e, f.conn, ver, channelRoles()).WantProblem(t, 409, "CONNECTION_BUSY")
		if !strings.Contains(busy.Detail, "1 open conflicts") {
			t.Fatalf("the 409 does not say why: %s", busy.Detail)
		}
		disconnect(e, f.conn, ver).WantProblem(t, 409, "CONNECTION_BUSY")

		// Bad closings change nothing.
		closeConflict(e, id, "dismiss", map[string]any{"expected_version": 1}).WantProblem(t, 400, "INVALID_REQUEST")
		closeConflict(e, id, "dismiss", map[string]any{"expected_version": 1, "reason": "  "}).WantProblem(t, 400, "INVALID_REQUEST")
		closeConflict(e, id, "dismiss", map[string]any{"expected_version": 7, "reason": "x"}).WantProblem(t, 409, "CONFLICT_RECORD_VERSION_CONFLICT")
		closeConflict(e, "cfl_missing", "dismiss", map[string]any{"expected_version": 1, "reason": "x"}).WantProblem(t, 404, "NOT_FOUND")
		e.Get("/vendors/"+e.Vendor.ID+"/conflicts?status=closed").WantProblem(t, 400, "INVALID_PARAMETER")
		e.Get("/vendors/"+e.Vendor.ID+"/conflicts?type=other").WantProblem(t, 400, "INVALID_PARAMETER")
		if open := listConflicts(t, e, "status=open&type=duplicate_external_id&connection_id="+f.conn+"&resource_id="+o.Data.ID); len(open) != 1 {
			t.Fatalf("filters lost the conflict: %+v", open)
		}

		c := mustConflict(t, closeConflict(e, id, "dismiss", map[string]any{"expected_version": 1, "reason": "the channel resent a corrected order by mistake"}), "dismissed")
		if c.Version != 2 || c.Resolution == nil || c.Resolution.Status != "dismissed" || c.Resolution.By.Type != "token" ||
			c.Resolution.By.ID == nil || *c.Resolution.By.ID == "" || c.Resolution.Reason != "the channel resent a corrected order by mistake" {
			t.Fatalf("dismissed: %+v", c)
		}
		closeConflict(e, id, "resolve", map[string]any{"expected_version": 2, "reason": "again"}).WantProblem(t, 409, "CONFLICT_RECORD_STATE_CONFLICT")
		if got := mustConflict(t, e.Get("/vendors/"+e.Vendor.ID+"/conflicts/"+id), "dismissed"); got.Version != 2 {
			t.Fatalf("get: %+v", got)
		}
		if open := listConflicts(t, e, "status=open"); len(open) != 0 {
			t.Fatalf("still open: %+v", open)
		}
		if r := replaceRoles(e, f.conn, ver, channelRoles()); r.Status != 200 {
			t.Fatalf("roles after dismissal: %d %s", r.Status, r.Body)
		}
		wantEvents(t, e, "conflict.opened", "conflict.dismissed")
	})
}

// TestUnreservableOrderConflictClosesWithTheOrder: an order that cannot be
// held opens a conflict that only the order's own transition closes.
func TestUnreservableOrderConflictClosesWithTheOrder(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		var o struct {
			Data struct {
				ID         string
				ConflictID *string `json:"conflict_id"`
			}
		}
		mustXO(t, importXO(e, "cfl-short-1", f.conn, "EXT-S", xoLine("a", f.item, 12)), 201, "unreservable")
		importXO(e, "cfl-short-1", f.conn, "EXT-S", xoLine("a", f.item, 12)).JSON(t, &o)
		if o.Data.ConflictID == nil {
			t.Fatalf("the unreservable order names no conflict")
		}
		c := mustConflict(t, e.Get("/vendors/"+e.Vendor.ID+"/conflicts/"+*o.Data.ConflictID), "open")
		if c.Type != "unreservable_external_order" || c.Resource.Type != "external_order" || c.Resource.ID != o.Data.ID {
			t.Fatalf("conflict: %+v", c)
		}
		if probs, _ := c.ServiceValue["problems"].(map[string]any); probs[f.item] != "insufficient_stock" {
			t.Fatalf("service value: %+v", c.ServiceValue)
		}
		closeConflict(e, c.ID, "resolve", map[string]any{"expected_version": 1, "reason": "done"}).WantProblem(t, 409, "CONFLICT_RECORD_STATE_CONFLICT")

		_, _, _, v := f.buckets(t)
		if r := adjust(e, f.item, "cfl-restock", map[string]any{"target_on_hand": 20, "expected_version": v}); r.Status != 200 {
			t.Fatalf("restock: %d %s", r.Status, r.Body)
		}
		mustXO(t, moveXO(e, o.Data.ID, "reserve", 1), 200, "reserved")
		c = mustConflict(t, e.Get("/vendors/"+e.Vendor.ID+"/conflicts/"+c.ID), "resolved")
		if c.Resolution == nil || c.Resolution.By.Type != "system" || !strings.Contains(c.Resolution.Reason, "reserved") {
			t.Fatalf("resolution: %+v", c.Resolution)
		}
		// A second unreservable order, rejected: its conflict closes too.
		o2 := mustXO(t, importXO(e, "cfl-short-2", f.conn, "EXT-T", xoLine("a", f.item, 50)), 201, "unreservable")
		mustXO(t, moveXO(e, o2.Data.ID, "reject", 1), 200, "rejected")
		mustXO(t, moveXO(e, o.Data.ID, "cancel", 2), 200, "cancelled")
		if open := listConflicts(t, e, "status=open"); len(open) != 0 {
			t.Fatalf("open conflicts after the orders moved on: %+v", open)
		}
		// Nothing left on the connection: it disconnects.
		ver := connectionVersion(t, e, f.conn)
		if r := disconnect(e, f.conn, ver); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
		wantEvents(t, e, "conflict.opened", "conflict.resolved")
	})
}

// TestConcurrentClosesOfOneConflict: of racing closes at the same version,
// exactly one wins and the connection's count moves once.
func TestConcurrentClosesOfOneConflict(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		o := mustXO(t, importXO(e, "cfl-race-1", f.conn, "EXT-R", xoLine("a", f.item, 1)), 201, "reserved")
		mustXO(t, moveXO(e, o.Data.ID, "cancel", 1), 200, "cancelled")
		importXO(e, "cfl-race-2", f.conn, "EXT-R", xoLine("a", f.item, 2)).WantProblem(t, 409, "EXTERNAL_ORDER_DUPLICATE")
		id := listConflicts(t, e, "status=open")[0].ID
		statuses := apitest.Statuses(apitest.Race(6, func(i int) *apitest.Resp {
			action := "resolve"
			if i%2 == 1 {
				action = "dismiss"
			}
			return closeConflict(e, id, action, map[string]any{"expected_version": 1, "reason": "race"})
		}))
		if wins := statuses[200]; wins != 1 || statuses[409] != 5 {
			t.Fatalf("%d closes won, want 1: %v", wins, statuses)
		}
		// The count went to zero exactly once: the connection disconnects.
		if r := disconnect(e, f.conn, connectionVersion(t, e, f.conn)); r.Status != 200 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Body)
		}
	})
}

// wantEvents checks that the vendor's log holds each event type.
func wantEvents(t *testing.T, e *apitest.Env, types ...string) {
	t.Helper()
	for _, typ := range types {
		var page struct{ Data []struct{ Type string } }
		e.Get("/vendors/"+e.Vendor.ID+"/events?type="+typ).JSON(t, &page)
		if len(page.Data) == 0 {
			t.Errorf("no %s event", typ)
		}
	}
}

// TestFenceViolationIsRecorded: an adjustment that claims a connection as
// the Stock Pool's source when it is not is refused, changes no stock, and
// is recorded once as that connection's authority_fence conflict; a claim
// of an unknown connection is only refused.
func TestFenceViolationIsRecorded(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newStock(t, kind, 10)
		e := f.e
		_, _, _, v := f.buckets(t)
		body := map[string]any{"target_on_hand": 3, "expected_version": v, "authority_connection_id": f.conn}
		r := adjust(e, f.item, "fence-adjust-1", body)
		p := r.WantProblem(t, 409, "AUTHORITY_MISMATCH")
		open := listConflicts(t, e, "status=open&type=authority_fence")
		if len(open) != 1 || open[0].ConnectionID == nil || *open[0].ConnectionID != f.conn || open[0].Resource.ID != f.item ||
			open[0].ChannelValue["authority_connection_id"] != f.conn || !strings.Contains(p.Detail, "recorded as conflict "+open[0].ID) ||
			open[0].Source.Type != "request" || open[0].Source.ID != r.Header.Get("X-Request-Id") {
			t.Fatalf("fence conflict: %+v; 409: %s", open, p.Detail)
		}
		adjust(e, f.item, "fence-adjust-2", body).WantProblem(t, 409, "AUTHORITY_MISMATCH")
		body["authority_connection_id"] = "conn_unknown"
		if p := adjust(e, f.item, "fence-adjust-3", body).WantProblem(t, 409, "AUTHORITY_MISMATCH"); strings.Contains(p.Detail, "recorded") {
			t.Fatalf("an unknown connection's claim was recorded: %s", p.Detail)
		}
		if all := listConflicts(t, e, ""); len(all) != 1 {
			t.Fatalf("%d conflicts, want 1: %+v", len(all), all)
		}
		wantBuckets(t, f, 10, 0, 10)
		ver := connectionVersion(t, e, f.conn)
		replaceRoles(e, f.conn, ver, channelRoles()).WantProblem(t, 409, "CONNECTION_BUSY")
		mustConflict(t, closeConflict(e, open[0].ID, "resolve", map[string]any{"expected_version": 1, "reason": "connector updated to read the authority"}), "resolved")
		if r := replaceRoles(e, f.conn, ver, channelRoles()); r.Status != 200 {
			t.Fatalf("roles after resolving: %d %s", r.Status, r.Body)
		}
	})
}

// TestBulkFenceViolationIsRecorded: a bulk operation's record that claims a
// connection as the Stock Pool's source when it is not fails as the single
// adjustment does (AUTHORITY_MISMATCH, no stock moved) and is recorded the
// same way: once, as that connection's authority_fence conflict, with the
// bulk operation as its source, named in the record's detail. A claim of
// an unknown connection only fails the record.
func TestBulkFenceViolationIsRecorded(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 2)
		conn := mustConnection(t, e, "bulk-fence-conn", connectionBody("marketplace_a", destinationRoles)).Data.ID
		rec := func(key, item string, body map[string]any) map[string]any {
			return map[string]any{"key": key, "inventory_item_id": item, "body": body}
		}
		claim := map[string]any{"target_on_hand": 3, "expected_version": 1, "authority_connection_id": conn}
		unknown := map[string]any{"target_on_hand": 3, "expected_version": 1, "authority_connection_id": "conn_unknown"}
		b := mustSubmit(t, e, e.Token, "bulk-fence-1", map[string]any{"kind": "inventory_adjustment", "items": []any{
			rec("claim", items[0], claim),
			rec("claim-again", items[0], claim),
			rec("unknown", items[1], unknown),
			rec("plain", items[1], map[string]any{"target_on_hand": 4, "expected_version": 1}),
		}})
		work(t, e, kind, b.Data.ID)
		got := getBulk(t, e, b.Data.ID)
		wantCounts(t, got, 4, 1, 3, 0, 0, 0)
		open := listConflicts(t, e, "status=open&type=authority_fence")
		if len(open) != 1 || open[0].ConnectionID == nil || *open[0].ConnectionID != conn || open[0].Resource.ID != items[0] ||
			open[0].ChannelValue["authority_connection_id"] != conn || open[0].ChannelValue["target_on_hand"] != float64(3) ||
			open[0].Source.Type != "bulk_operation" || open[0].Source.ID != b.Data.ID {
			t.Fatalf("fence conflict: %+v", open)
		}
		for i, res := range got.Data.Results {
			if i == 3 {
				if res.Status != "succeeded" {
					t.Fatalf("plain record: %+v", res)
				}
				continue
			}
			if res.Status != "failed" || res.Code == nil || *res.Code != "AUTHORITY_MISMATCH" || res.Detail == nil {
				t.Fatalf("record %s: %+v", res.Key, res)
			}
			if named := strings.Contains(*res.Detail, "recorded as conflict "+open[0].ID); named != (i < 2) {
				t.Fatalf("record %s: detail %q names the conflict: %v", res.Key, *res.Detail, named)
			}
		}
		if all := listConflicts(t, e, ""); len(all) != 1 {
			t.Fatalf("%d conflicts, want 1: %+v", len(all), all)
		}
		if oh, v := itemState(t, e, items[0]); oh != 0 || v != 1 {
			t.Fatalf("a fenced record moved stock: on_hand %d version %d", oh, v)
		}
		// The connection counts it, as it counts a request's.
		replaceRoles(e, conn, connectionVersion(t, e, conn), channelRoles()).WantProblem(t, 409, "CONNECTION_BUSY")
	})
}

// TestSyncJobRecordsNoFenceViolation: the sync worker adjusts stock only
// for the connection it read as the Stock Pool's master, and a claim the
// authority moved away from in between is decided again (here: the pool
// goes back to the service after the job read its state), not recorded:
// the connection reported a count and wrote nothing as a source, so there
// is nothing to hold it to account for. The item ends channel_stale, no
// stock moves, and no authority_fence conflict is opened
// (docs/decisions.md, "The authority fence in the inventory package").
func TestSyncJobRecordsNoFenceViolation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		f := newSyncFixture(t, kind)
		e := f.e
		b := mustSync(t, syncSubmit(e, e.Token, "sync-fence-1", map[string]any{"connection_id": f.master, "kind": "inventory",
			"items": stockItems(f.items[0], 12)}))
		handBack := func() {
			if r := replaceRoles(e, f.master, connectionVersion(t, e, f.master), destinationRoles); r.Status != http.StatusOK {
				t.Errorf("the pool back to the service: %d %s", r.Status, r.Body)
			}
		}
		w := syncWorker(e, &readRacingStore{Store: e.App.Store, race: handBack}, &sender{})
		if err := w.Handle(context.Background(), syncMessage(t, e, b.Data.ID)); err != nil {
			t.Fatalf("worker: %v", err)
		}
		if _, _, i := masters(t, e); i != "moku" {
			t.Fatalf("inventory master %q after the hand-back", i)
		}
		got := getSync(t, e, b.Data.ID)
		if !slices.Equal(syncStatuses(got), []string{"channel_stale"}) || got.Data.Items[0].ConflictID != nil {
			t.Fatalf("%s %v %+v", got.Data.Status, syncStatuses(got), got.Data.Items[0])
		}
		if open := listConflicts(t, e, "type=authority_fence"); len(open) != 0 {
			t.Fatalf("the sync job recorded a fence violation: %+v", open)
		}
		if oh, v := itemState(t, e, f.items[0]); oh != 10 || v != 2 {
			t.Fatalf("on_hand %d version %d, want 10 at 2", oh, v)
		}
	})
}
