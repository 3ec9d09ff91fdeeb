package catalog_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/catalog"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
)

// body returns completeSimple with the named fields replaced (nil deletes).
func body(t *testing.T, base string, set map[string]any) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(base), &m); err != nil {
		t.Fatal(err)
	}
	return dt.Body(m, set)
}

// TestCreateBodyRules: the product create body's constraints, from the
// SPEC's table and conditional rules.
func TestCreateBodyRules(t *testing.T) {
	simple, variable := completeSimple("mug"), variableBody("shirt")
	for _, c := range []struct {
		name string
		base string
		set  map[string]any
		ok   bool
	}{
		{"complete simple", simple, nil, true},
		{"complete variable", variable, nil, true},
		{"unknown property", simple, map[string]any{"colour": "red"}, false},
		{"kind missing", simple, map[string]any{"kind": nil}, false},
		{"kind other", simple, map[string]any{"kind": "bundle"}, false},
		{"name too long", simple, map[string]any{"name": strings.Repeat("n", 121)}, false},
		{"name at limit", simple, map[string]any{"name": strings.Repeat("n", 120)}, true},
		{"description at limit", simple, map[string]any{"description": strings.Repeat("d", 5000)}, true},
		{"description too long", simple, map[string]any{"description": strings.Repeat("d", 5001)}, false},
		{"price negative", simple, map[string]any{"price": -1}, false},
		{"price at max", simple, map[string]any{"price": 1000000000}, true},
		{"price above max", simple, map[string]any{"price": 1000000001}, false},
		{"original_price above price", simple, map[string]any{"original_price": 1201}, true},
		{"original_price equal to price", simple, map[string]any{"original_price": 1200}, false},
		{"original_price below price", simple, map[string]any{"original_price": 100}, false},
		{"original_price null", simple, map[string]any{"original_price": json.RawMessage("null")}, true},
		{"original_price zero", simple, map[string]any{"price": 0, "original_price": 0}, false},
		{"13 images", simple, map[string]any{"image_urls": repeatURLs(13)}, false},
		{"12 images", simple, map[string]any{"image_urls": repeatURLs(12)}, true},
		{"duplicate images", simple, map[string]any{"image_urls": []string{"https://a.example/x", "https://a.example/x"}}, false},
		{"badge sale", simple, map[string]any{"badge": "sale"}, true},
		{"badge other", simple, map[string]any{"badge": "hot"}, false},
		{"weight above max", simple, map[string]any{"weight_kg": 2500.5}, false},
		{"weight negative", simple, map[string]any{"weight_kg": -0.1}, false},
		{"sku 101 chars", simple, map[string]any{"sku": strings.Repeat("s", 101)}, false},
		{"simple with options", simple, map[string]any{"options": map[string][]string{"size": {"S"}}}, false},
		{"simple with variations", simple, map[string]any{"variations": []any{map[string]any{"options": map[string]string{}, "price": 1}}}, false},
		{"variable with sku", variable, map[string]any{"sku": "SKU-1"}, false},
		{"option value with comma", variable, map[string]any{"options": map[string][]string{"size": {"S,M"}}}, false},
		{"duplicate variation options", variable, map[string]any{"variations": []any{
			map[string]any{"options": map[string]string{"size": "S"}, "price": 1},
			map[string]any{"options": map[string]string{"size": "S"}, "price": 2}}}, false},
		{"variation option not declared", variable, map[string]any{"variations": []any{
			map[string]any{"options": map[string]string{"size": "XL"}, "price": 1}}}, false},
		{"variation original_price not above its price", variable, map[string]any{"variations": []any{
			map[string]any{"options": map[string]string{"size": "S"}, "price": 10, "original_price": 10}}}, false},
		{"variation extra property", variable, map[string]any{"variations": []any{
			map[string]any{"options": map[string]string{"size": "S"}, "price": 10, "status": "active"}}}, false},
		{"default option not an option", variable, map[string]any{"default_options": map[string]string{"colour": "red"}}, false},
		{"default option value unknown", variable, map[string]any{"default_options": map[string]string{"size": "XL"}}, false},
		{"default option known", variable, map[string]any{"default_options": map[string]string{"size": "M"}}, true},
		{"bad authority id", simple, map[string]any{"catalog_authority_connection_id": "has space"}, false},
		{"good authority id", simple, map[string]any{"catalog_authority_connection_id": "conn_a:1.b-c"}, true},
		{"expected_revision on create", simple, map[string]any{"expected_revision": 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := catalog.ParseCreate(body(t, c.base, c.set))
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok {
				if err == nil {
					t.Fatal("accepted")
				}
				if k := errs.As(err).Kind; k != errs.Invalid {
					t.Fatalf("got kind %v (%v), want Invalid", k, err)
				}
			}
		})
	}
}

func repeatURLs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "https://img.example/" + strings.Repeat("x", i+1)
	}
	return out
}

// TestUpdateBodyRules: the update body adds a required expected_revision,
// and a variable product's update needs the variations field.
func TestUpdateBodyRules(t *testing.T) {
	simple := completeSimple("mug")
	if _, err := catalog.ParseUpdate(body(t, simple, nil)); err == nil {
		t.Error("update without expected_revision accepted")
	}
	if _, err := catalog.ParseUpdate(body(t, simple, map[string]any{"expected_revision": -1})); err == nil {
		t.Error("negative expected_revision accepted")
	}
	in, err := catalog.ParseUpdate(body(t, simple, map[string]any{"expected_revision": 4}))
	if err != nil || in.ExpectedRevision != 4 {
		t.Errorf("expected_revision 4: %v %d", err, in.ExpectedRevision)
	}
	if _, err := catalog.ParseUpdate(body(t, variableBody("s"), map[string]any{"expected_revision": 1, "variations": nil})); err == nil {
		t.Error("variable update without variations accepted")
	}
	// An existing variation names its status; two of them cannot share an id.
	twice := []any{
		map[string]any{"id": "var_1", "status": "active", "options": map[string]string{"size": "S"}, "price": 1},
		map[string]any{"id": "var_1", "status": "active", "options": map[string]string{"size": "M"}, "price": 1},
	}
	if _, err := catalog.ParseUpdate(body(t, variableBody("s"), map[string]any{"expected_revision": 1, "variations": twice})); err == nil {
		t.Error("a variation id twice accepted")
	}
	noStatus := []any{map[string]any{"id": "var_1", "options": map[string]string{"size": "S"}, "price": 1}}
	if _, err := catalog.ParseUpdate(body(t, variableBody("s"), map[string]any{"expected_revision": 1, "variations": noStatus})); err == nil {
		t.Error("an existing variation without status accepted")
	}
	// A retired variation does not block an active one with its options.
	reuse := []any{
		map[string]any{"id": "var_1", "status": "retired", "options": map[string]string{"size": "S"}, "price": 1},
		map[string]any{"options": map[string]string{"size": "S"}, "price": 1},
	}
	if _, err := catalog.ParseUpdate(body(t, variableBody("s"), map[string]any{"expected_revision": 1, "variations": reuse})); err != nil {
		t.Errorf("an active variation beside a retired one with the same options: %v", err)
	}
}

// TestTransitionBody: expected_revision required, the two bindings
// optional, no other properties.
func TestTransitionBody(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"expected_revision":3}`, true},
		{`{"expected_revision":3,"catalog_authority_connection_id":"conn_a","base_price_authority_connection_id":null}`, true},
		{`{}`, false},
		{`{"expected_revision":-1}`, false},
		{`{"expected_revision":"3"}`, false},
		{`{"expected_revision":3,"status":"published"}`, false},
		{`{"expected_revision":3,"catalog_authority_connection_id":""}`, false},
		{`[]`, false},
	} {
		tr, err := catalog.ParseTransition([]byte(c.body))
		if c.ok != (err == nil) {
			t.Errorf("%s: got %v", c.body, err)
		}
		if c.ok && tr.ExpectedRevision != 3 {
			t.Errorf("%s: expected_revision %d", c.body, tr.ExpectedRevision)
		}
	}
}
