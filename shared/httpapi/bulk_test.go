package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

type bulkResult struct {
	Key             string
	InventoryItemID string `json:"inventory_item_id"`
	Status          string
	Data            *struct {
		ID      string
		OnHand  int64 `json:"on_hand"`
		Version int64
	}
	Code, Detail *string
}

type bulkBody struct {
	Data struct {
		ID          string
		VendorID    string `json:"vendor_id"`
		Kind        string
		Status      string
		Counts      map[string]int
		Results     []bulkResult
		CreatedAt   string  `json:"created_at"`
		StartedAt   *string `json:"started_at"`
		CompletedAt *string `json:"completed_at"`
	}
}

// bulkEnv is an API whose vendor may make writes writes per minute; reads
// are unlimited so that polling never gets in the way.
func bulkEnv(t *testing.T, kind apitest.StoreKind, writes int) *apitest.Env {
	e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.RateReads, c.RateWrites = 1<<20, writes }})
	e.Clock.Tick(time.Millisecond)
	return e
}

// seedItems creates one variable product with n variations, one write, and
// returns its inventory items: each at version 1 with on_hand 0.
func seedItems(t *testing.T, e *apitest.Env, n int) []string {
	t.Helper()
	mustCreate(t, e, "bulk-seed-1", variableProduct("bulk-stock", n))
	var inv struct{ Data []struct{ ID string } }
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items?limit=100").JSON(t, &inv)
	var out []string
	for _, it := range inv.Data {
		out = append(out, it.ID)
	}
	if len(out) != n {
		t.Fatalf("%d items, want %d", len(out), n)
	}
	return out
}

// nextWindow moves the clock just past the start of the next one-minute
// rate window (a paused job resumes within a second of it), so that what
// follows starts with the vendor's full allowance.
func nextWindow(e *apitest.Env) {
	e.Clock.Set(e.Clock.Now().Truncate(time.Minute).Add(time.Minute + 2*time.Second))
}

// batch builds a submission: record i adjusts items[i] to targets[i] from
// version 1, keyed r1, r2, ...
func batch(items []string, targets ...int64) map[string]any {
	var recs []map[string]any
	for i, id := range items {
		recs = append(recs, map[string]any{"key": fmt.Sprintf("r%d", i+1), "inventory_item_id": id,
			"body": map[string]any{"target_on_hand": targets[i], "expected_version": 1}})
	}
	return map[string]any{"kind": "inventory_adjustment", "items": recs}
}

func submitAs(e *apitest.Env, token, key string, body any) *apitest.Resp {
	return submitJob(e, "bulk-operations", token, key, body)
}

func mustSubmit(t *testing.T, e *apitest.Env, token, key string, body any) bulkBody {
	t.Helper()
	return accepted[bulkBody](t, submitAs(e, token, key, body))
}

func getBulk(t *testing.T, e *apitest.Env, id string) bulkBody {
	t.Helper()
	return getJob[bulkBody](t, e, "bulk-operations", id)
}

// bulkMessage is the message the pipeline rule makes for job id.
func bulkMessage(t *testing.T, e *apitest.Env, id string) queue.Message {
	t.Helper()
	return jobMessage(t, bulk.Rule, queue.BulkOperations, datamodel.BulkKey(e.Vendor.ID, id))
}

// handle calls the app's bulk worker directly, as its Lambda would.
func handle(t *testing.T, e *apitest.Env, id string) error {
	t.Helper()
	return handleWith(t, e, queue.BulkOperations, bulkMessage(t, e, id))
}

// work lets the background work of job id run as far as it can now: the
// app's embedded pipeline (Drain) on the embedded store; on DynamoDB, where
// the embedded queue does not exist, the worker's handler with the message
// the rule makes. A pause for the rate window is not a failure.
func work(t *testing.T, e *apitest.Env, kind apitest.StoreKind, id string) {
	t.Helper()
	if kind == apitest.SQLite {
		if err := e.App.Drain(context.Background()); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := handle(t, e, id); err != nil && !errs429(err) {
		t.Fatal(err)
	}
}

// errs429 tells the worker's pause for the vendor's window.
func errs429(err error) bool {
	_, ok := queue.DelayOf(err)
	return ok && strings.Contains(err.Error(), "RATE_LIMITED")
}

func statuses(b bulkBody) []string {
	var out []string
	for _, r := range b.Data.Results {
		out = append(out, r.Status)
	}
	return out
}

func wantCounts(t *testing.T, b bulkBody, total, succeeded, failed, pending, unknown, notAttempted int) {
	t.Helper()
	want := map[string]int{"total": total, "succeeded": succeeded, "failed": failed, "pending": pending, "unknown": unknown, "not_attempted": notAttempted}
	if len(b.Data.Counts) != len(want) {
		t.Fatalf("counts %v, want exactly %v", b.Data.Counts, want)
	}
	for k, v := range want {
		if b.Data.Counts[k] != v {
			t.Fatalf("counts %v, want %v", b.Data.Counts, want)
		}
	}
}

func itemState(t *testing.T, e *apitest.Env, id string) (onHand, version int64) {
	t.Helper()
	var it itemBody
	e.Get("/vendors/"+e.Vendor.ID+"/inventory-items/"+id).JSON(t, &it)
	return it.Data.OnHand, it.Data.Version
}

func countEvents(t *testing.T, e *apitest.Env, typ string) int {
	n := 0
	for _, ty := range eventTypes(t, e) {
		if ty == typ {
			n++
		}
	}
	return n
}

func TestBulkAccepted(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 5)
		body := batch(items, 10, 20, 30, 40, 50)
		r := submitAs(e, e.Token, "bulk-key-0001", body)
		if r.Status != http.StatusAccepted {
			t.Fatalf("submit: %d %s", r.Status, r.Body)
		}
		// The acknowledgement: the stored job, queued, every record pending.
		var raw struct{ Data map[string]json.RawMessage }
		r.JSON(t, &raw)
		var fields []string
		for k := range raw.Data {
			fields = append(fields, k)
		}
		slices.Sort(fields)
		if want := []string{"completed_at", "counts", "created_at", "id", "kind", "results", "started_at", "status", "vendor_id"}; !slices.Equal(fields, want) {
			t.Fatalf("fields %v, want %v", fields, want)
		}
		var ack bulkBody
		r.JSON(t, &ack)
		d := ack.Data
		if !strings.HasPrefix(d.ID, "bop_") || d.VendorID != e.Vendor.ID || d.Kind != "inventory_adjustment" || d.Status != "queued" ||
			d.CreatedAt == "" || d.StartedAt != nil || d.CompletedAt != nil {
			t.Fatalf("acknowledgement: %s", r.Body)
		}
		wantCounts(t, ack, 5, 0, 0, 5, 0, 0)
		for i, res := range d.Results {
			if res.Key != fmt.Sprintf("r%d", i+1) || res.InventoryItemID != items[i] || res.Status != "pending" || res.Data != nil || res.Code != nil || res.Detail != nil {
				t.Fatalf("result %d: %+v", i, res)
			}
		}
		for _, k := range []string{`"data":null`, `"code":null`, `"detail":null`} {
			if !bytes.Contains(r.Body, []byte(k)) {
				t.Fatalf("acknowledgement lacks %s: %s", k, r.Body)
			}
		}
		// Nothing is applied before the worker runs.
		if got := getBulk(t, e, d.ID); got.Data.Status != "queued" {
			t.Fatalf("before work: %+v", got.Data)
		}
		if oh, v := itemState(t, e, items[0]); oh != 0 || v != 1 {
			t.Fatalf("item moved before work: on_hand %d version %d", oh, v)
		}

		work(t, e, kind, d.ID)
		done := getBulk(t, e, d.ID)
		if done.Data.Status != "completed" || done.Data.StartedAt == nil || done.Data.CompletedAt == nil || *done.Data.CompletedAt < *done.Data.StartedAt {
			t.Fatalf("after work: %+v", done.Data)
		}
		wantCounts(t, done, 5, 5, 0, 0, 0, 0)
		for i, res := range done.Data.Results {
			target := int64(10 * (i + 1))
			if res.Status != "succeeded" || res.Data == nil || res.Data.ID != items[i] || res.Data.OnHand != target || res.Data.Version != 2 || res.Code != nil {
				t.Fatalf("result %d: %+v", i, res)
			}
			if oh, v := itemState(t, e, items[i]); oh != target || v != 2 {
				t.Fatalf("item %d: on_hand %d version %d", i, oh, v)
			}
		}
		if n := countEvents(t, e, "bulk_operation.completed"); n != 1 {
			t.Fatalf("%d bulk_operation.completed events, want 1", n)
		}
		if n := countEvents(t, e, "inventory_item.adjusted"); n != 5 {
			t.Fatalf("%d inventory_item.adjusted events, want 5", n)
		}

		// An exact replay after completion returns the original
		// acknowledgement and starts nothing; a key is never reused.
		again := submitAs(e, e.Token, "bulk-key-0001", body)
		if again.Status != http.StatusAccepted || !bytes.Equal(again.Body, r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s", again.Status, again.Body)
		}
		work(t, e, kind, d.ID)
		if oh, v := itemState(t, e, items[0]); oh != 10 || v != 2 {
			t.Fatalf("replay applied again: on_hand %d version %d", oh, v)
		}
		submitAs(e, e.Token, "bulk-key-0001", batch(items, 11, 20, 30, 40, 50)).WantProblem(t, 409, "IDEMPOTENCY_KEY_REUSED")

		// Results and the receipt outlive completion by 30 days.
		e.Clock.Advance(30 * 24 * time.Hour)
		if got := getBulk(t, e, d.ID); got.Data.Status != "completed" || len(got.Data.Results) != 5 {
			t.Fatalf("30 days later: %+v", got.Data)
		}
		if again := submitAs(e, e.Token, "bulk-key-0001", body); again.Status != http.StatusAccepted || !bytes.Equal(again.Body, r.Body) {
			t.Fatalf("replay 30 days later: %d %s", again.Status, again.Body)
		}

		// Reads need jobs.read; submissions need jobs.write and inventory.write.
		path := "/vendors/" + e.Vendor.ID + "/bulk-operations/" + d.ID
		if r := e.Do(apitest.Req{Path: path, Token: e.NewToken(e.Vendor.ID, auth.JobsRead)}); r.Status != 200 {
			t.Fatalf("GET with jobs.read: %d %s", r.Status, r.Body)
		}
		e.Do(apitest.Req{Path: path, Token: e.NewToken(e.Vendor.ID, auth.InventoryRead)}).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		submitAs(e, e.NewToken(e.Vendor.ID, auth.JobsWrite), "bulk-key-0002", body).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		submitAs(e, e.NewToken(e.Vendor.ID, auth.InventoryWrite), "bulk-key-0003", body).WantProblem(t, 403, "INSUFFICIENT_SCOPE")
		e.Get("/vendors/"+e.Vendor.ID+"/bulk-operations/bop_nope").WantProblem(t, 404, "NOT_FOUND")
		// An id longer than the document allows is refused as a parameter.
		e.Get("/vendors/"+e.Vendor.ID+"/bulk-operations/"+strings.Repeat("b", 129)).WantProblem(t, 400, "INVALID_PARAMETER")
	})
}

func TestBulkValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 3)
		rec := func(key string, body any) map[string]any {
			return map[string]any{"key": key, "inventory_item_id": items[0], "body": body}
		}
		ok := map[string]any{"target_on_hand": 1, "expected_version": 1}
		many := make([]any, 26)
		for i := range many {
			many[i] = rec(fmt.Sprintf("k%d", i), ok)
		}
		cases := []struct {
			name   string
			body   any
			detail string
		}{
			{"no items", map[string]any{"kind": "inventory_adjustment", "items": []any{}}, "items: must have at least 1 item"},
			{"26 items", map[string]any{"kind": "inventory_adjustment", "items": many}, "items: must have at most 25 items"},
			{"items missing", map[string]any{"kind": "inventory_adjustment"}, "items: is required"},
			{"kind missing", map[string]any{"items": []any{rec("a", ok)}}, "kind: is required"},
			{"other kind", map[string]any{"kind": "price_change", "items": []any{rec("a", ok)}}, "kind: must be one of inventory_adjustment"},
			{"unknown top-level field", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", ok)}, "atomic": true}, "atomic: unknown property"},
			{"duplicate keys", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", ok), rec("b", ok), rec("a", ok)}},
				"items[2].key: repeats the key of items[0]"},
			{"empty key", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("", ok)}}, "items[0].key: must not be empty"},
			{"item not an object", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", ok), 7}}, "items[1]: must be an object"},
			{"item id missing", map[string]any{"kind": "inventory_adjustment", "items": []any{map[string]any{"key": "a", "body": ok}}},
				"items[0].inventory_item_id: is required"},
			{"body missing", map[string]any{"kind": "inventory_adjustment", "items": []any{map[string]any{"key": "a", "inventory_item_id": items[0]}}},
				"items[0].body: is required"},
			{"body not an object", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", 5)}}, "items[0].body: must be an object"},
			{"bad target in record 4", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", ok), rec("b", ok), rec("c", ok),
				rec("d", map[string]any{"target_on_hand": -1, "expected_version": 1})}}, "items[3].body.target_on_hand: must be from 0 to 1000000000"},
			{"version missing", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", ok), rec("b", map[string]any{"target_on_hand": 1})}},
				"items[1].body.expected_version: is required"},
			{"bad authority id", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", map[string]any{"target_on_hand": 1, "expected_version": 1, "authority_connection_id": "no spaces"})}},
				"items[0].body.authority_connection_id: must match"},
			{"unknown body field", map[string]any{"kind": "inventory_adjustment", "items": []any{rec("a", map[string]any{"target_on_hand": 1, "expected_version": 1, "delta": 2})}},
				"items[0].body.delta: unknown property"},
			{"unknown record field", map[string]any{"kind": "inventory_adjustment", "items": []any{map[string]any{"key": "a", "inventory_item_id": items[0], "body": ok, "note": "x"}}},
				"items[0].note: unknown property"},
		}
		for i, c := range cases {
			p := submitAs(e, e.Token, fmt.Sprintf("bulk-invalid-%02d", i), c.body).WantProblem(t, 400, "INVALID_REQUEST")
			if !strings.HasPrefix(p.Detail, c.detail) {
				t.Errorf("%s: detail %q, want it to start with %q", c.name, p.Detail, c.detail)
			}
		}
		submitAs(e, e.Token, "", batch(items, 1, 2, 3)).WantProblem(t, 400, "IDEMPOTENCY_KEY_REQUIRED")
		submitAs(e, e.Token, "bulk-invalid-json", `{"kind":`).WantProblem(t, 400, "INVALID_JSON")

		// The whole body is at most 64 KiB: a valid batch padded to exactly
		// 65536 bytes is accepted, one byte more is refused.
		valid, _ := json.Marshal(batch(items, 1, 2, 3))
		pad := func(n int) []byte { return append(bytes.Repeat([]byte(" "), n-len(valid)), valid...) }
		submitAs(e, e.Token, "bulk-too-large", pad(64<<10+1)).WantProblem(t, 400, "REQUEST_BODY_TOO_LARGE")

		// No refused batch stored a job or changed stock, even after the
		// background work ran.
		work(t, e, kind, "bop_none")
		if jobs, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Prefix: datamodel.BulkPrefix, Limit: 10}); err != nil || len(jobs) != 0 {
			t.Fatalf("refused batches stored %d jobs (%v)", len(jobs), err)
		}
		for _, id := range items {
			if oh, v := itemState(t, e, id); oh != 0 || v != 1 {
				t.Fatalf("stock changed by a refused batch: on_hand %d version %d", oh, v)
			}
		}
		if n := countEvents(t, e, "inventory_item.adjusted"); n != 0 {
			t.Fatalf("%d adjustments from refused batches", n)
		}

		b := mustSubmit(t, e, e.Token, "bulk-exactly-64k", pad(64<<10))
		work(t, e, kind, b.Data.ID)
		if got := getBulk(t, e, b.Data.ID); got.Data.Status != "completed" {
			t.Fatalf("64 KiB batch: %+v", got.Data)
		}
	})
}

// TestBulkRecordFailures: each record keeps the checks of a single
// adjustment; a failed record does not roll back those that succeeded.
func TestBulkRecordFailures(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 5)
		// Hold 4 units of items[3] the way a reservation does.
		productID, seq, _ := catalog.ParseInventoryItemID(items[3])
		hold := store.Add(datamodel.ProductKey(e.Vendor.ID, productID), map[string]int64{
			datamodel.OnHandAttr(seq): 4, datamodel.ReservedAttr(seq): 4, datamodel.ItemVersionAttr(seq): 1}, 0, store.Cond{})
		if err := e.Store.Transact(context.Background(), hold); err != nil {
			t.Fatal(err)
		}
		rec := func(key, id string, body map[string]any) map[string]any {
			return map[string]any{"key": key, "inventory_item_id": id, "body": body}
		}
		b := mustSubmit(t, e, e.Token, "bulk-failures-1", map[string]any{"kind": "inventory_adjustment", "items": []any{
			rec("ok-1", items[0], map[string]any{"target_on_hand": 7, "expected_version": 1}),
			rec("stale", items[1], map[string]any{"target_on_hand": 7, "expected_version": 9}),
			rec("missing", "inv_nope_000", map[string]any{"target_on_hand": 7, "expected_version": 1}),
			rec("floor", items[3], map[string]any{"target_on_hand": 2, "expected_version": 2}),
			rec("authority", items[4], map[string]any{"target_on_hand": 7, "expected_version": 1, "authority_connection_id": "conn_1"}),
			rec("ok-2", items[2], map[string]any{"target_on_hand": 9, "expected_version": 1}),
		}})
		work(t, e, kind, b.Data.ID)
		got := getBulk(t, e, b.Data.ID)
		if got.Data.Status != "completed_with_errors" || got.Data.CompletedAt == nil {
			t.Fatalf("status %s", got.Data.Status)
		}
		wantCounts(t, got, 6, 2, 4, 0, 0, 0)
		wantCodes := []string{"", "INVENTORY_VERSION_CONFLICT", "NOT_FOUND", "INVENTORY_BELOW_RESERVED", "AUTHORITY_MISMATCH", ""}
		for i, res := range got.Data.Results {
			if wantCodes[i] == "" {
				if res.Status != "succeeded" || res.Data == nil || res.Code != nil || res.Detail != nil {
					t.Fatalf("record %d: %+v", i, res)
				}
				continue
			}
			if res.Status != "failed" || res.Data != nil || res.Code == nil || *res.Code != wantCodes[i] || res.Detail == nil || *res.Detail == "" {
				t.Fatalf("record %d: %+v, want failed %s", i, res, wantCodes[i])
			}
		}
		if !strings.Contains(*got.Data.Results[1].Detail, "version 1") {
			t.Fatalf("conflict detail %q does not name the current version", *got.Data.Results[1].Detail)
		}
		if oh, v := itemState(t, e, items[0]); oh != 7 || v != 2 {
			t.Fatalf("succeeded record rolled back: on_hand %d version %d", oh, v)
		}
		if oh, v := itemState(t, e, items[1]); oh != 0 || v != 1 {
			t.Fatalf("conflicting record applied: on_hand %d version %d", oh, v)
		}

		// items[0] moved to version 2 above; items[1] is still at 1: a mixed batch.
		mixed := mustSubmit(t, e, e.Token, "bulk-failures-2", batch(items[:2], 5, 5))
		work(t, e, kind, mixed.Data.ID)
		if got := getBulk(t, e, mixed.Data.ID); got.Data.Status != "completed_with_errors" || !slices.Equal(statuses(got), []string{"failed", "succeeded"}) {
			t.Fatalf("mixed batch: %s %v", got.Data.Status, statuses(got))
		}
		// A batch in which nothing succeeds is failed.
		all := mustSubmit(t, e, e.Token, "bulk-failures-3", batch(items[:2], 5, 5))
		work(t, e, kind, all.Data.ID)
		got = getBulk(t, e, all.Data.ID)
		if got.Data.Status != "failed" || !slices.Equal(statuses(got), []string{"failed", "failed"}) {
			t.Fatalf("all-failed batch: %s %v", got.Data.Status, statuses(got))
		}
		if n := countEvents(t, e, "bulk_operation.completed"); n != 3 {
			t.Fatalf("%d bulk_operation.completed events, want 3", n)
		}
	})
}

// TestBulkPacing: each record spends one write of the vendor's window;
// a spent window pauses the job until the next one instead of failing it.
func TestBulkPacing(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 3)
		items := seedItems(t, e, 5)
		nextWindow(e)
		// The submission is one of the window's 3 writes; records 1 and 2 take the others.
		b := mustSubmit(t, e, e.Token, "bulk-pacing-1", batch(items, 1, 2, 3, 4, 5))
		if kind == apitest.DynamoDB {
			err := handle(t, e, b.Data.ID)
			delay, ok := queue.DelayOf(err)
			if !errs429(err) || !ok || delay <= 0 || delay > time.Minute {
				t.Fatalf("paused job: %v (delay %v), want a retry when the window resets", err, delay)
			}
		} else {
			work(t, e, kind, b.Data.ID)
		}
		got := getBulk(t, e, b.Data.ID)
		if got.Data.Status != "running" || got.Data.StartedAt == nil || got.Data.CompletedAt != nil ||
			!slices.Equal(statuses(got), []string{"succeeded", "succeeded", "pending", "pending", "pending"}) {
			t.Fatalf("paused: %s %v", got.Data.Status, statuses(got))
		}
		wantCounts(t, got, 5, 2, 0, 3, 0, 0)
		// The allowance is the vendor's: the API's own writes wait too.
		adjust(e, items[4], "bulk-pacing-adjust", map[string]any{"target_on_hand": 1, "expected_version": 1}).WantProblem(t, 429, "RATE_LIMITED")
		// Work again within the window changes nothing.
		work(t, e, kind, b.Data.ID)
		if got := getBulk(t, e, b.Data.ID); got.Data.Counts["pending"] != 3 {
			t.Fatalf("worked inside a spent window: %v", statuses(got))
		}

		nextWindow(e)
		work(t, e, kind, b.Data.ID)
		got = getBulk(t, e, b.Data.ID)
		if got.Data.Status != "completed" || got.Data.CompletedAt == nil {
			t.Fatalf("after the window reset: %s %v", got.Data.Status, statuses(got))
		}
		for i, id := range items {
			if oh, v := itemState(t, e, id); oh != int64(i+1) || v != 2 {
				t.Fatalf("item %d: on_hand %d version %d", i, oh, v)
			}
		}
	})
}

// TestBulkCredentialRecheck: before each record the original credential is
// verified again; when it fails, that record is unknown, later ones are
// not_attempted, earlier effects stay, and a replacement token does not
// take the batch over.
func TestBulkCredentialRecheck(t *testing.T) {
	cases := []struct {
		name string
		ttl  time.Duration
		// end makes the original credential fail.
		end func(t *testing.T, e *apitest.Env, tokenID string)
	}{
		{"revoked", 0, func(t *testing.T, e *apitest.Env, tokenID string) {
			if _, err := (auth.Service{Store: e.Store, Clock: e.Clock}).Revoke(context.Background(), tokenID); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired", 90 * time.Second, func(t *testing.T, e *apitest.Env, tokenID string) { e.Clock.Advance(2 * time.Minute) }},
		{"owner changed", 0, func(t *testing.T, e *apitest.Env, tokenID string) {
			it, err := e.Store.Get(context.Background(), datamodel.VendorKey(e.Vendor.ID))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			json.Unmarshal(it.Data, &doc)
			doc["owner_id"] = "usr_someone_else"
			it.Data, _ = json.Marshal(doc)
			if err := e.Store.Transact(context.Background(), store.Put(it, store.Cond{})); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
				e := bulkEnv(t, kind, 2)
				items := seedItems(t, e, 5)
				nextWindow(e)
				svc := auth.Service{Store: e.Store, Clock: e.Clock}
				tok, err := svc.Issue(context.Background(), e.Vendor.ID, []auth.Scope{auth.JobsWrite, auth.InventoryWrite, auth.JobsRead}, c.ttl)
				if err != nil {
					t.Fatal(err)
				}
				// The window allows the submission and one record, so the job
				// pauses after record 1.
				b := mustSubmit(t, e, tok.Token, "bulk-recheck-1", batch(items, 10, 20, 30, 40, 50))
				work(t, e, kind, b.Data.ID)
				if got := getBulk(t, e, b.Data.ID); !slices.Equal(statuses(got), []string{"succeeded", "pending", "pending", "pending", "pending"}) {
					t.Fatalf("paused: %v", statuses(got))
				}
				c.end(t, e, tok.ID)
				// A replacement credential (issued to the current owner) does
				// not carry the batch on; the test reads with it from here.
				e.Token = e.NewToken(e.Vendor.ID, auth.AllScopes()...)
				nextWindow(e)
				work(t, e, kind, b.Data.ID)

				got := getBulk(t, e, b.Data.ID)
				if got.Data.Status != "failed" || got.Data.CompletedAt == nil ||
					!slices.Equal(statuses(got), []string{"succeeded", "unknown", "not_attempted", "not_attempted", "not_attempted"}) {
					t.Fatalf("stopped: %s %v", got.Data.Status, statuses(got))
				}
				wantCounts(t, got, 5, 1, 0, 0, 1, 3)
				if r := got.Data.Results[1]; r.Code == nil || *r.Code != "UNAUTHENTICATED" || r.Data != nil {
					t.Fatalf("record 2: %+v", r)
				}
				for _, r := range got.Data.Results[2:] {
					if r.Code == nil || *r.Code != "BULK_OPERATION_STOPPED" || r.Detail == nil || !strings.Contains(*r.Detail, `"r2"`) || r.Data != nil {
						t.Fatalf("later record: %+v", r)
					}
				}
				// Revocation does not undo the earlier adjustment, and nothing after it happened.
				if oh, v := itemState(t, e, items[0]); oh != 10 || v != 2 {
					t.Fatalf("record 1 undone: on_hand %d version %d", oh, v)
				}
				for _, id := range items[1:] {
					if oh, v := itemState(t, e, id); oh != 0 || v != 1 {
						t.Fatalf("record applied after the credential ended: on_hand %d version %d", oh, v)
					}
				}
				if n := countEvents(t, e, "bulk_operation.completed"); n != 1 {
					t.Fatalf("%d bulk_operation.completed events, want 1", n)
				}
			})
		})
	}
}

// crashStore stands for a worker that dies while applying record failAt:
// the transaction carrying that record's adjustment fails (before or after
// it commits) or panics, and the store refuses everything after it, as a
// dead process would.
type crashStore struct {
	store.Store
	failAt int
	// mode is "before" (dies before the commit), "after" (commits, then
	// dies before hearing so), "panic", or "lost": the commit's response is
	// lost but the worker lives on.
	mode string

	mu          sync.Mutex
	adjustments int
	dead        bool
}

var errCrash = errors.New("simulated crash")

func (s *crashStore) Transact(ctx context.Context, ops ...store.Op) error {
	s.mu.Lock()
	if s.dead {
		s.mu.Unlock()
		return errCrash
	}
	for _, op := range ops {
		if op.Kind == store.OpAdd && strings.HasPrefix(op.Item.SK, datamodel.ProductPrefix) {
			s.adjustments++
		}
	}
	crash := s.adjustments == s.failAt
	s.dead = crash && s.mode != "lost"
	s.mu.Unlock()
	if !crash {
		return s.Store.Transact(ctx, ops...)
	}
	switch s.mode {
	case "after", "lost":
		if err := s.Store.Transact(ctx, ops...); err != nil {
			return err
		}
	case "panic":
		panic(errCrash)
	}
	return errCrash
}

func (s *crashStore) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	s.mu.Lock()
	dead := s.dead
	s.mu.Unlock()
	if dead {
		return 0, errCrash
	}
	return s.Store.Increment(ctx, k, attr, delta, below, expiresAt)
}

// TestBulkCrashResumes kills the worker while it applies record 3 and runs
// a healthy one after it: confirmed effects are not repeated, and the rest
// of the batch completes.
func TestBulkCrashResumes(t *testing.T) {
	for _, mode := range []string{"before", "after", "panic"} {
		t.Run(mode, func(t *testing.T) {
			forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
				e := bulkEnv(t, kind, 1<<20)
				items := seedItems(t, e, 5)
				b := mustSubmit(t, e, e.Token, "bulk-crash-1", batch(items, 10, 20, 30, 40, 50))

				crashing := bulkWorker(e, &crashStore{Store: e.App.Store, failAt: 3, mode: mode}, nil)
				err := func() (err error) {
					defer func() {
						if p := recover(); p != nil {
							err = fmt.Errorf("panic: %v", p)
						}
					}()
					return crashing.Handle(context.Background(), bulkMessage(t, e, b.Data.ID))
				}()
				if err == nil || !strings.Contains(err.Error(), errCrash.Error()) {
					t.Fatalf("crashing worker: %v", err)
				}
				mid := getBulk(t, e, b.Data.ID)
				want := []string{"succeeded", "succeeded", "pending", "pending", "pending"}
				if mode == "after" {
					want[2] = "succeeded"
				}
				if mid.Data.Status != "running" || !slices.Equal(statuses(mid), want) {
					t.Fatalf("after the crash: %s %v, want running %v", mid.Data.Status, statuses(mid), want)
				}

				if err := handle(t, e, b.Data.ID); err != nil {
					t.Fatalf("resumed worker: %v", err)
				}
				got := getBulk(t, e, b.Data.ID)
				if got.Data.Status != "completed" {
					t.Fatalf("resumed: %s %v", got.Data.Status, statuses(got))
				}
				// Every item moved exactly once: version 2, its own target.
				for i, id := range items {
					if oh, v := itemState(t, e, id); oh != int64(10*(i+1)) || v != 2 {
						t.Fatalf("item %d: on_hand %d version %d, want %d at version 2", i, oh, v, 10*(i+1))
					}
					if r := got.Data.Results[i]; r.Data == nil || r.Data.Version != 2 {
						t.Fatalf("result %d: %+v", i, r)
					}
				}
				if n := countEvents(t, e, "inventory_item.adjusted"); n != 5 {
					t.Fatalf("%d adjustments, want 5", n)
				}
				if n := countEvents(t, e, "bulk_operation.completed"); n != 1 {
					t.Fatalf("%d bulk_operation.completed events, want 1", n)
				}
			})
		})
	}
}

// failingStore fails every transaction that adjusts item failItem, without
// applying it: the store cannot take that record.
type failingStore struct {
	store.Store
	productKey string
	attr       string
}

func (s failingStore) Transact(ctx context.Context, ops ...store.Op) error {
	for _, op := range ops {
		if op.Kind == store.OpAdd && op.Item.SK == s.productKey {
			if _, ok := op.Deltas[s.attr]; ok {
				return errors.New("store unavailable")
			}
		}
	}
	return s.Store.Transact(ctx, ops...)
}

// TestBulkAttemptsRunOut: a record the service cannot complete gets
// bulk.MaxAttempts tries with growing waits, then is unknown and the batch
// stops: the job is failed with unresolved results.
func TestBulkAttemptsRunOut(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 5)
		b := mustSubmit(t, e, e.Token, "bulk-attempts-1", batch(items, 10, 20, 30, 40, 50))
		productID, seq, _ := catalog.ParseInventoryItemID(items[2])
		sent := &sender{}
		w := bulkWorker(e, failingStore{Store: e.App.Store, productKey: datamodel.ProductKey(e.Vendor.ID, productID).SK, attr: datamodel.OnHandAttr(seq)}, sent)
		msg := bulkMessage(t, e, b.Data.ID)
		var last time.Duration
		for i := 1; i <= bulk.MaxAttempts; i++ {
			// Each counted attempt completes the message and continues the
			// job in a fresh one, later and later.
			if err := w.Handle(context.Background(), msg); err != nil {
				t.Fatalf("attempt %d: %v", i, err)
			}
			next := sent.take(t)
			if !bytes.Equal(next.body, msg.Body) || next.delay <= last {
				t.Fatalf("attempt %d: continuation %+v after %v, want a growing delay", i, next, last)
			}
			last = next.delay
			if got := getBulk(t, e, b.Data.ID); !slices.Equal(statuses(got), []string{"succeeded", "succeeded", "pending", "pending", "pending"}) {
				t.Fatalf("attempt %d: %v", i, statuses(got))
			}
		}
		if err := w.Handle(context.Background(), msg); err != nil {
			t.Fatalf("giving up: %v", err)
		}
		got := getBulk(t, e, b.Data.ID)
		if got.Data.Status != "failed" || !slices.Equal(statuses(got), []string{"succeeded", "succeeded", "unknown", "not_attempted", "not_attempted"}) {
			t.Fatalf("ran out: %s %v", got.Data.Status, statuses(got))
		}
		if r := got.Data.Results[2]; r.Code == nil || *r.Code != "SERVICE_UNAVAILABLE" || r.Detail == nil || !strings.Contains(*r.Detail, "reconcile") {
			t.Fatalf("record 3: %+v", r)
		}
		if oh, v := itemState(t, e, items[2]); oh != 0 || v != 1 {
			t.Fatalf("record 3 applied: on_hand %d version %d", oh, v)
		}
		// A later delivery of the message finds the job finished.
		if err := handle(t, e, b.Data.ID); err != nil {
			t.Fatal(err)
		}
		if n := countEvents(t, e, "bulk_operation.completed"); n != 1 {
			t.Fatalf("%d bulk_operation.completed events, want 1", n)
		}
	})
}

// sender records the messages a worker sends.
type sender struct {
	mu   sync.Mutex
	sent []sentMessage
}

type sentMessage struct {
	queue string
	body  []byte
	delay time.Duration
}

func (s *sender) Send(_ context.Context, q string, body []byte, delay time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, sentMessage{q, body, delay})
	return nil
}

// take returns the one message sent since the last take.
func (s *sender) take(t *testing.T) sentMessage {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) != 1 || s.sent[0].queue != queue.BulkOperations {
		t.Fatalf("sent %+v, want one message to %s", s.sent, queue.BulkOperations)
	}
	m := s.sent[0]
	s.sent = nil
	return m
}

// TestBulkPauseContinues: a job paused by the vendor's window completes its
// message and continues in a fresh one sent for when the window resets, so
// that pauses never count towards the queue's receive limit.
func TestBulkPauseContinues(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 2)
		items := seedItems(t, e, 5)
		nextWindow(e)
		// 2 writes a minute: the submission and record 1, then records 2-3, then 4-5.
		b := mustSubmit(t, e, e.Token, "bulk-continue-1", batch(items, 1, 2, 3, 4, 5))
		sent := &sender{}
		w, err := e.App.Work(sent, queue.BulkOperations)
		if err != nil {
			t.Fatal(err)
		}
		msg := bulkMessage(t, e, b.Data.ID)
		for round := 1; round <= 3; round++ {
			if err := w.Handle(context.Background(), msg); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if got := getBulk(t, e, b.Data.ID); got.Data.Counts["succeeded"] != 2*round-1 {
				t.Fatalf("round %d: %v", round, statuses(got))
			}
			if round == 3 {
				break
			}
			next := sent.take(t)
			reset := e.Clock.Now().Truncate(time.Minute).Add(time.Minute)
			if !bytes.Equal(next.body, msg.Body) || next.delay <= 0 || e.Clock.Now().Add(next.delay).Before(reset) {
				t.Fatalf("round %d: continuation %+v, want one for when the window resets at %v", round, next, reset)
			}
			nextWindow(e)
			msg = queue.Message{ID: fmt.Sprintf("msg_%d", round), Queue: next.queue, Body: next.body, Receives: 1}
		}
		if got := getBulk(t, e, b.Data.ID); got.Data.Status != "completed" {
			t.Fatalf("%s %v", got.Data.Status, statuses(got))
		}
		if len(sent.sent) != 0 {
			t.Fatalf("a finished job sent %+v", sent.sent)
		}
	})
}

// TestBulkLostResponse: a transaction that committed but reported failure
// is recognised at once (the job's version moved), so the worker carries on
// without repeating the record.
func TestBulkLostResponse(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 4)
		b := mustSubmit(t, e, e.Token, "bulk-lost-1", batch(items, 10, 20, 30, 40))
		w := bulkWorker(e, &crashStore{Store: e.App.Store, failAt: 2, mode: "lost"}, nil)
		if err := w.Handle(context.Background(), bulkMessage(t, e, b.Data.ID)); err != nil {
			t.Fatalf("worker: %v", err)
		}
		got := getBulk(t, e, b.Data.ID)
		if got.Data.Status != "completed" {
			t.Fatalf("%s %v", got.Data.Status, statuses(got))
		}
		for i, id := range items {
			if oh, v := itemState(t, e, id); oh != int64(10*(i+1)) || v != 2 {
				t.Fatalf("item %d: on_hand %d version %d", i, oh, v)
			}
		}
	})
}

// racingStore lets a buyer's change win the item between the worker's
// checks and its write, once.
type racingStore struct {
	store.Store
	race func()
	once sync.Once
}

func (s *racingStore) Transact(ctx context.Context, ops ...store.Op) error {
	for _, op := range ops {
		if op.Kind == store.OpAdd && strings.HasPrefix(op.Item.SK, datamodel.ProductPrefix) {
			s.once.Do(s.race)
		}
	}
	return s.Store.Transact(ctx, ops...)
}

// TestBulkLostRace: when another change wins the item after the record's
// checks passed, the record fails with INVENTORY_VERSION_CONFLICT (written
// alone) and the batch goes on.
func TestBulkLostRace(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := bulkEnv(t, kind, 1<<20)
		items := seedItems(t, e, 3)
		b := mustSubmit(t, e, e.Token, "bulk-race-1", batch(items, 10, 20, 30))
		race := func() {
			if r := adjust(e, items[0], "bulk-race-adjust", map[string]any{"target_on_hand": 99, "expected_version": 1}); r.Status != 200 {
				t.Errorf("competing adjustment: %d %s", r.Status, r.Body)
			}
		}
		w := bulkWorker(e, &racingStore{Store: e.App.Store, race: race}, nil)
		if err := w.Handle(context.Background(), bulkMessage(t, e, b.Data.ID)); err != nil {
			t.Fatalf("worker: %v", err)
		}
		got := getBulk(t, e, b.Data.ID)
		if got.Data.Status != "completed_with_errors" || !slices.Equal(statuses(got), []string{"failed", "succeeded", "succeeded"}) {
			t.Fatalf("%s %v", got.Data.Status, statuses(got))
		}
		if r := got.Data.Results[0]; *r.Code != "INVENTORY_VERSION_CONFLICT" || !strings.Contains(*r.Detail, "version 2") {
			t.Fatalf("record 1: %s %s", *r.Code, *r.Detail)
		}
		if oh, v := itemState(t, e, items[0]); oh != 99 || v != 2 {
			t.Fatalf("the competing change: on_hand %d version %d", oh, v)
		}
	})
}

// TestBulkRoundTrips pins the sequential store round trips of the two
// routes, as TestRoundTripBudgets does for the others: the token, vendor
// (and for GET the job) in one batch read, the rate window beside it, then
// for POST the job with its receipt in one transaction.
func TestBulkRoundTrips(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		rt := &roundTrips{last: map[string]int64{}}
		e := apitest.New(t, apitest.Options{Store: kind, Observe: rt.observe})
		items := seedItems(t, e, 2)
		b := mustSubmit(t, e, e.Token, "bulk-budget-1", batch(items, 1, 2))
		if got := rt.of("createBulkOperation"); got != 2 {
			t.Errorf("createBulkOperation made %d store round trips, budget 2", got)
		}
		getBulk(t, e, b.Data.ID)
		if got := rt.of("getBulkOperation"); got != 1 {
			t.Errorf("getBulkOperation made %d store round trips, budget 1", got)
		}
	})
}

// bulkWorker is the bulk worker over st, a test's store in front of the
// app's, with its services built over st as the root builds them, and
// paced by no window; it sends continuations to q.
func bulkWorker(e *apitest.Env, st store.Store, q queue.Sender) bulk.Worker {
	svc := app.NewServices(e.App, st).Bulk
	svc.Limiter.Writes = 1 << 20
	return bulk.NewWorker(svc, st, e.Clock, q, nil)
}
