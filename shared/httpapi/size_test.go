package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
)

// wideProduct is a product of 100 variations over 8 options whose names
// and values are all 64 characters: piece (a character) fills them.
func wideProduct(slug, piece string) map[string]any {
	p := simpleProduct(slug)
	p["kind"], p["sku"] = "variable", nil
	fill := func(prefix string) string { return prefix + strings.Repeat(piece, 64-len(prefix)) }
	names := make([]string, 8)
	options := map[string][]string{}
	for k := range names {
		names[k] = fill(fmt.Sprintf("o%d", k))
		for j := 0; j < 50; j++ {
			options[names[k]] = append(options[names[k]], fill(fmt.Sprintf("v%02d", j)))
		}
	}
	vars := make([]map[string]any, 0, catalog.MaxVariations)
	for i := 0; i < catalog.MaxVariations; i++ {
		o := map[string]string{names[0]: options[names[0]][i%50], names[1]: options[names[1]][i/50]}
		for k := 2; k < 8; k++ {
			o[names[k]] = options[names[k]][(i+k)%50]
		}
		vars = append(vars, map[string]any{"options": o, "price": 4500 + i})
	}
	p["options"], p["variations"] = options, vars
	return p
}

// Records are measured the way DynamoDB measures items, and stored without
// escaping <, > and & (which made each six bytes): a product of 100
// variations of "<"-heavy options and a sync job of 100 long "&" ids are
// stored by both stores; a product that really is past the item limit is
// refused by both with 400 RECORD_TOO_LARGE, and nothing is stored.
func TestRecordSizeLimit(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind apitest.StoreKind) {
		e := catalogEnv(t, kind)
		p := mustCreate(t, e, "size-key-lt", wideProduct("angles", "<"))
		var got struct {
			Data struct {
				Options    map[string][]string
				Variations []struct{ Options map[string]string }
			}
		}
		e.Get("/vendors/"+e.Vendor.ID+"/products/"+p.Data.ID).JSON(t, &got)
		if len(got.Data.Variations) != 100 || len(got.Data.Options) != 8 {
			t.Fatalf("stored product: %d variations, %d options", len(got.Data.Variations), len(got.Data.Options))
		}
		for _, v := range got.Data.Variations[0].Options {
			if !strings.HasSuffix(v, strings.Repeat("<", 61)) {
				t.Fatalf("option value %q", v)
			}
		}

		conn := mustConnection(t, e, "size-conn", connectionBody("marketplace_a", destinationRoles)).Data.ID
		items := make([]any, 100)
		for i := range items {
			items[i] = map[string]any{"inventory_item_id": fmt.Sprintf("%03d", i) + strings.Repeat("&", 997), "on_hand": 1}
		}
		// Sent as a client would write it, "&" as one byte (the test
		// client's json.Marshal would escape it to six).
		raw, err := store.Marshal(map[string]any{"connection_id": conn, "kind": "inventory", "items": items})
		if err != nil {
			t.Fatal(err)
		}
		job := mustSync(t, syncSubmit(e, e.Token, "size-sync-amp", raw))
		if b := getSync(t, e, job.Data.ID); b.Data.ID != job.Data.ID {
			t.Fatalf("stored job: %+v", b.Data)
		}

		// Four-byte characters everywhere: past 400 KB as stored.
		before := eventTypes(t, e)
		r, _ := create(t, e, "size-key-big", wideProduct("emoji", "\U0001F600"))
		pr := r.WantProblem(t, http.StatusBadRequest, "RECORD_TOO_LARGE")
		if !strings.Contains(pr.Detail, "at most 409600 bytes") {
			t.Errorf("detail %q does not name the limit", pr.Detail)
		}
		var list struct{ Data []struct{ ID string } }
		e.Get("/vendors/"+e.Vendor.ID+"/products").JSON(t, &list)
		if len(list.Data) != 1 || list.Data[0].ID != p.Data.ID {
			t.Fatalf("products after the refusal: %+v", list.Data)
		}
		if after := eventTypes(t, e); len(after) != len(before) {
			t.Fatalf("events after the refusal: %v, before %v", after, before)
		}
		// The same request again is refused the same way: not an outage.
		r, _ = create(t, e, "size-key-big", wideProduct("emoji", "\U0001F600"))
		r.WantProblem(t, http.StatusBadRequest, "RECORD_TOO_LARGE")
	})
}
