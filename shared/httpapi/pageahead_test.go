package httpapi_test

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// TestPageAheadRefusals: a list page whose query started beside the
// admission batch (Route.PageAhead) is refused exactly as before by
// another vendor's token, a forged one, one without the scope, a spent
// window, a malformed limit and a cursor that is not this token's for
// this list, and nothing the query read reaches the refusal.
func TestPageAheadRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := apitest.New(t, apitest.Options{Store: kind, Config: func(c *config.Config) { c.RateReads = 40 }})
		a := mustCreate(t, e, "refusal-product-a", simpleProduct("refusal-a"))
		b := mustCreate(t, e, "refusal-product-b", simpleProduct("refusal-b"))
		list := "/vendors/" + e.Vendor.ID + "/products"
		other, err := account.Service{Store: e.Store, Clock: e.Clock}.Create(context.Background(), "Other", "other")
		if err != nil {
			t.Fatal(err)
		}
		theirs := e.NewToken(other.ID, auth.AllScopes()...)
		second := e.NewToken(e.Vendor.ID, auth.AllScopes()...)
		var page struct{ Page httpapi.Page }
		e.Do(apitest.Req{Path: list + "?limit=1", Token: second}).JSON(t, &page)
		if page.Page.NextCursor == nil {
			t.Fatal("no second page")
		}
		secondsCursor := url.QueryEscape(*page.Page.NextCursor)
		forged := "mkpat_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52)
		for _, c := range []struct {
			name, token, path string
			status            int
			code              string
		}{
			{"another vendor's token", theirs, list, 404, "NOT_FOUND"},
			{"another vendor's token with a cursor of this list", theirs, list + "?limit=1&page_after=" + secondsCursor, 404, "NOT_FOUND"},
			{"a forged token", forged, list, 401, "UNAUTHENTICATED"},
			{"a token without the scope", e.NewToken(e.Vendor.ID, auth.VendorsRead), list, 403, "INSUFFICIENT_SCOPE"},
			{"a limit of 0", e.Token, list + "?limit=0", 400, "INVALID_PARAMETER"},
			{"two limits", e.Token, list + "?limit=1&limit=2", 400, "INVALID_PARAMETER"},
			{"another token's cursor", e.Token, list + "?limit=1&page_after=" + secondsCursor, 400, "INVALID_CURSOR"},
			{"another list's cursor", second, "/vendors/" + e.Vendor.ID + "/connections?limit=1&page_after=" + secondsCursor, 400, "INVALID_CURSOR"},
			{"two cursors", second, list + "?page_after=" + secondsCursor + "&page_after=" + secondsCursor, 400, "INVALID_CURSOR"},
		} {
			res := e.Do(apitest.Req{Path: c.path, Token: c.token})
			res.WantProblem(t, c.status, c.code)
			if bytes.Contains(res.Body, []byte(a.Data.ID)) || bytes.Contains(res.Body, []byte(b.Data.ID)) {
				t.Errorf("%s: the refusal carries a product: %s", c.name, res.Body)
			}
		}
		// The cursor still continues the list for the token it was made for.
		if res := e.Do(apitest.Req{Path: list + "?limit=1&page_after=" + secondsCursor, Token: second}); res.Status != 200 || !bytes.Contains(res.Body, []byte(a.Data.ID)) && !bytes.Contains(res.Body, []byte(b.Data.ID)) {
			t.Errorf("second page: %d %s", res.Status, res.Body)
		}
		// A spent window: the page read beside the batch is not answered.
		for {
			res := e.Get(list)
			if res.Status == 200 {
				continue
			}
			res.WantProblem(t, 429, "RATE_LIMITED")
			if bytes.Contains(res.Body, []byte(a.Data.ID)) {
				t.Errorf("the 429 carries a product: %s", res.Body)
			}
			break
		}
	})
}
