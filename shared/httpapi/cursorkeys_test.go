package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// TestCursorKeyRotation: a cursor the API gave out before the admin
// command rotated the cursor key reads the same page after one rotation,
// and is refused as a bad cursor after the second; a cursor given out
// between the two is signed with the new key and outlives the second.
func TestCursorKeyRotation(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		ctx := context.Background()
		e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.RateReads = 1000 }})
		seedEvents(t, e, event.ProductUpdated, 8)
		list := "/vendors/" + e.Vendor.ID + "/events?limit=2"
		type page struct {
			Data []json.RawMessage `json:"data"`
			Page struct {
				NextCursor *string `json:"next_cursor"`
			} `json:"page"`
		}
		get := func(cur string) page {
			t.Helper()
			r := e.Get(list + "&page_after=" + url.QueryEscape(cur))
			if r.Status != http.StatusOK {
				t.Fatalf("GET with a cursor: %d %s", r.Status, r.Body)
			}
			var p page
			r.JSON(t, &p)
			if p.Page.NextCursor == nil || len(p.Data) != 2 {
				t.Fatalf("a middle page of %d items without a next cursor", len(p.Data))
			}
			return p
		}
		var first page
		e.Get(list).JSON(t, &first)
		old := *first.Page.NextCursor
		want := get(old)

		ops := e.App.Services.Admin
		rotate := func() {
			t.Helper()
			e.Clock.Advance(cursor.MinRotationInterval) // also past the server's RefreshEvery
			res, err := ops.Do(ctx, admin.Request{Action: admin.CursorKeyRotate})
			if err != nil || res.Error != nil {
				t.Fatalf("rotate: %v %+v", err, res.Error)
			}
		}
		rotate()
		got := get(old)
		if len(got.Data) != len(want.Data) || string(got.Data[0]) != string(want.Data[0]) || string(got.Data[1]) != string(want.Data[1]) {
			t.Fatalf("after one rotation the old cursor reads %s, want %s", got.Data, want.Data)
		}
		between := *got.Page.NextCursor
		if between == *want.Page.NextCursor {
			t.Fatal("after the rotation the API still signs with the old key")
		}
		rotate()
		e.Get(list+"&page_after="+url.QueryEscape(old)).WantProblem(t, http.StatusBadRequest, "INVALID_CURSOR")
		get(between)
		// A rotation within the hour of the last is refused.
		res, err := ops.Do(ctx, admin.Request{Action: admin.CursorKeyRotate})
		if err != nil || res.Error == nil || res.Error.Code != "CONFLICT" {
			t.Fatalf("a second rotation at once: %v %+v, want CONFLICT", err, res)
		}
	})
}

// TestWebhookSecretsAtRest: a signing secret the API answers with (on
// creation, again on a replay of that request, and on rotation) is in no
// stored item of the vendor in the clear: not the subscription, not the
// creation's idempotency receipt.
func TestWebhookSecretsAtRest(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := webhookEnv(t, kind, false)
		body := map[string]any{"url": "https://hooks.example.com/moku", "event_types": []string{"product.created"}}
		r, s := createSubscription(t, e, "sub.key:0001", body)
		if r.Status != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		again, replayed := createSubscription(t, e, "sub.key:0001", body)
		if again.Status != http.StatusCreated || replayed.Data.Secret != s.Data.Secret {
			t.Fatalf("the replay answered %d with secret %q, want the original %q", again.Status, replayed.Data.Secret, s.Data.Secret)
		}
		rot := e.Do(apitest.Req{Method: http.MethodPost, Path: subsPath(e) + "/" + s.Data.ID + "/rotate-secret", Token: e.Token})
		var rotated subscriptionBody
		rot.JSON(t, &rotated)
		if rot.Status != http.StatusOK || rotated.Data.Secret == "" || rotated.Data.Secret == s.Data.Secret {
			t.Fatalf("rotate: %d %s", rot.Status, rot.Body)
		}
		items, err := e.Store.Query(context.Background(), store.Query{PK: datamodel.VendorPartition(e.Vendor.ID), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		receipts := 0
		for _, it := range items {
			for _, secret := range []string{s.Data.Secret, rotated.Data.Secret} {
				if strings.Contains(string(it.Data), secret) {
					t.Errorf("item %s holds a signing secret in the clear: %s", it.SK, it.Data)
				}
			}
			if strings.HasPrefix(it.SK, "IDEM#") {
				receipts++
			}
		}
		if receipts == 0 {
			t.Fatal("no idempotency receipt was stored: the check above saw none")
		}
	})
}
