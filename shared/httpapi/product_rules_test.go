package httpapi_test

// Boundary tests of the request bodies of the OpenAPI document's schemas
// ProductCreate, ProductUpdate (PATCH), ProductTransition and Adjustment
// (shared/openapi/openapi.json), run over real HTTP on the embedded store.
//
// Every constraint is probed on both sides of its boundary: the largest (or
// smallest) value the spec accepts succeeds, and one step past it is a 400
// INVALID_REQUEST whose detail starts with the path of the offending field.
// Rejected requests must change nothing, so each test reads back what is
// stored after its rejections.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// ---------------------------------------------------------------------------
// The API under test

// jsonObj is a JSON object as a request body or a nested value.
type jsonObj = map[string]any

// rulesAPI is a running API whose rate limits never get in the way, with
// counters that give every create a unique slug and every mutation a unique
// Idempotency-Key.
type rulesAPI struct {
	*apitest.Env
	slugs, keys int
}

func newRulesAPI(t *testing.T) *rulesAPI {
	e := apitest.New(t, apitest.Options{Config: func(c *config.Config) { c.RateReads, c.RateWrites = 100000, 100000 }})
	return &rulesAPI{Env: e}
}

// vendorPath is a path under the test vendor.
func (a *rulesAPI) vendorPath(format string, args ...any) string {
	return "/vendors/" + a.Vendor.ID + fmt.Sprintf(format, args...)
}

func (a *rulesAPI) nextSlug() string { a.slugs++; return fmt.Sprintf("rule-%03d", a.slugs) }
func (a *rulesAPI) nextKey() string  { a.keys++; return fmt.Sprintf("rules-key-%05d", a.keys) }

// send makes a request with the test token; key "" sends no Idempotency-Key.
func (a *rulesAPI) send(method, path string, body any, key string) *apitest.Resp {
	req := apitest.Req{Method: method, Path: path, Token: a.Token, Body: body}
	if key != "" {
		req.Headers = map[string]string{"Idempotency-Key": key}
	}
	return a.Do(req)
}

func (a *rulesAPI) createProduct(body jsonObj) *apitest.Resp {
	return a.send(http.MethodPost, a.vendorPath("/products"), body, a.nextKey())
}

// mustCreate creates a product that the test needs to exist.
func (a *rulesAPI) mustCreate(t *testing.T, body jsonObj) ruleProduct {
	t.Helper()
	r := a.createProduct(body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", body["slug"], r.Status, r.Body)
	}
	return decodeProduct(t, r)
}

// storedProduct is GET /vendors/{id}/products/{id} as a JSON object.
func (a *rulesAPI) storedProduct(t *testing.T, id string) jsonObj {
	t.Helper()
	r := a.Get(a.vendorPath("/products/%s", id))
	if r.Status != http.StatusOK {
		t.Fatalf("GET product %s: %d %s", id, r.Status, r.Body)
	}
	var one struct{ Data jsonObj }
	r.JSON(t, &one)
	return one.Data
}

// productIDs walks GET /vendors/{id}/products to its end.
func (a *rulesAPI) productIDs(t *testing.T) []string {
	t.Helper()
	var ids []string
	pages, _ := a.Walk(t, a.vendorPath("/products?limit=100"))
	for _, page := range pages {
		ids = append(ids, page...)
	}
	return ids
}

// inventoryItem finds the inventory item of a simple product in the
// vendor-wide list (the only way to learn its id).
func (a *rulesAPI) inventoryItem(t *testing.T, productID string) ruleItem {
	t.Helper()
	r := a.Get(a.vendorPath("/inventory-items?limit=100"))
	if r.Status != http.StatusOK {
		t.Fatalf("GET inventory-items: %d %s", r.Status, r.Body)
	}
	var page struct{ Data []ruleItem }
	r.JSON(t, &page)
	for _, it := range page.Data {
		if it.ProductID == productID {
			return it
		}
	}
	t.Fatalf("no inventory item for product %s in %s", productID, r.Body)
	return ruleItem{}
}

func (a *rulesAPI) getItem(t *testing.T, id string) ruleItem {
	t.Helper()
	r := a.Get(a.vendorPath("/inventory-items/%s", id))
	if r.Status != http.StatusOK {
		t.Fatalf("GET inventory item: %d %s", r.Status, r.Body)
	}
	var one struct{ Data ruleItem }
	r.JSON(t, &one)
	return one.Data
}

// ruleProduct is the part of a product response these tests look at.
type ruleProduct struct {
	ID         string          `json:"id"`
	Slug       string          `json:"slug"`
	Name       string          `json:"name"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	Revision   int64           `json:"revision"`
	Variations []ruleVariation `json:"variations"`
}

type ruleVariation struct {
	ID            string            `json:"id"`
	Status        string            `json:"status"`
	Options       map[string]string `json:"options"`
	Price         int64             `json:"price"`
	OriginalPrice *int64            `json:"original_price"`
	SKU           *string           `json:"sku"`
}

type ruleItem struct {
	ID        string `json:"id"`
	ProductID string `json:"product_id"`
	OnHand    int64  `json:"on_hand"`
	Reserved  int64  `json:"reserved"`
	Available int64  `json:"available"`
	Version   int64  `json:"version"`
}

func decodeProduct(t *testing.T, r *apitest.Resp) ruleProduct {
	t.Helper()
	var one struct{ Data ruleProduct }
	r.JSON(t, &one)
	return one.Data
}

// wantRejected checks a problem of status and code whose detail starts with
// the field path the rule is about.
func wantRejected(t *testing.T, r *apitest.Resp, status int, code, field string) apitest.Problem {
	t.Helper()
	p := r.WantProblem(t, status, code)
	if !strings.HasPrefix(p.Detail, field) {
		t.Errorf("detail %q does not start with %q", p.Detail, field)
	}
	return p
}

// ---------------------------------------------------------------------------
// Bodies

// bodyMaker makes a fresh create body for a slug.
type bodyMaker func(slug string) jsonObj

// bodyEdit changes one thing in a body.
type bodyEdit func(b jsonObj)

// validSimple is a valid simple product with edits applied. Optional
// fields are left out; the cases add them.
func validSimple(edits ...bodyEdit) bodyMaker {
	return func(slug string) jsonObj {
		b := jsonObj{
			"kind":                "simple",
			"name":                "Linen tea towel",
			"slug":                slug,
			"description":         "A woven linen towel.",
			"price":               1500,
			"category":            "Home",
			"subcategory":         "Kitchen",
			"image_urls":          []any{"https://img.example.com/towel.jpg"},
			"options":             jsonObj{},
			"features":            []any{"Woven linen"},
			"related_product_ids": []any{},
			"tags":                []any{"linen"},
			"sku":                 "TOWEL-1",
			"weight_kg":           0.25,
		}
		for _, e := range edits {
			e(b)
		}
		return b
	}
}

// validVariable is a valid variable product with options
// {"size": ["s", "m"]} and one variation per size, with edits applied.
func validVariable(edits ...bodyEdit) bodyMaker {
	return func(slug string) jsonObj {
		b := validSimple()(slug)
		b["kind"] = "variable"
		b["name"] = "Cotton shirt"
		b["sku"] = nil
		b["options"] = jsonObj{"size": []any{"s", "m"}}
		b["variations"] = []any{
			jsonObj{"options": jsonObj{"size": "s"}, "price": 2000, "original_price": nil, "sku": "SHIRT-S"},
			jsonObj{"options": jsonObj{"size": "m"}, "price": 2200, "original_price": 2500, "sku": "SHIRT-M"},
		}
		for _, e := range edits {
			e(b)
		}
		return b
	}
}

func withField(name string, v any) bodyEdit { return func(b jsonObj) { b[name] = v } }
func withoutField(name string) bodyEdit     { return func(b jsonObj) { delete(b, name) } }

func withVariationField(i int, name string, v any) bodyEdit {
	return func(b jsonObj) { b["variations"].([]any)[i].(jsonObj)[name] = v }
}

func withoutVariationField(i int, name string) bodyEdit {
	return func(b jsonObj) { delete(b["variations"].([]any)[i].(jsonObj), name) }
}

// withOptionsOnly sets the product options and drops the variations, so an
// option rule can be probed on its own.
func withOptionsOnly(options jsonObj) bodyEdit {
	return func(b jsonObj) { b["options"] = options; b["variations"] = []any{} }
}

// withSlugOfLength pads the body's unique slug to n characters.
func withSlugOfLength(n int) bodyEdit {
	return func(b jsonObj) {
		s := b["slug"].(string) + "-"
		b["slug"] = s + strings.Repeat("x", n-len(s))
	}
}

// chars is n characters of s (one code point each in these tests).
func chars(n int, s string) string { return strings.Repeat(s, n) }

// letters is n ASCII letters.
func letters(n int) string { return chars(n, "a") }

// items is n distinct strings prefix0, prefix1, ...
func items(n int, prefix string) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// imageURLs is n distinct image URLs.
func imageURLs(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("https://img.example.com/%d.jpg", i)
	}
	return out
}

// urlOfLength is an https URL of exactly n characters.
func urlOfLength(n int) string {
	const prefix = "https://img.example.com/"
	return prefix + letters(n-len(prefix))
}

// optionNames is n options o0, o1, ... each with the single value "x".
func optionNames(n int) jsonObj {
	out := jsonObj{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("o%d", i)] = []any{"x"}
	}
	return out
}

// defaultsFor picks "x" for n options o0, o1, ...
func defaultsFor(n int) jsonObj {
	out := jsonObj{}
	for i := 0; i < n; i++ {
		out[fmt.Sprintf("o%d", i)] = "x"
	}
	return out
}

// hundredVariations sets options {"n": 50 values, "c": 2 values} and one
// variation per combination (100), plus extra more.
func hundredVariations(extra int) bodyEdit {
	return func(b jsonObj) {
		ns := items(50, "n")
		b["options"] = jsonObj{"n": ns, "c": []any{"a", "b"}}
		var vs []any
		for _, n := range ns {
			for _, c := range []string{"a", "b"} {
				vs = append(vs, jsonObj{"options": jsonObj{"n": n, "c": c}, "price": 100})
			}
		}
		for i := 0; i < extra; i++ {
			vs = append(vs, jsonObj{"options": jsonObj{"n": "n0", "c": "a"}, "price": 100})
		}
		b["variations"] = vs
	}
}

// ---------------------------------------------------------------------------
// Product create body

// createCase is one create request and the answer the spec gives it.
type createCase struct {
	name   string
	body   bodyMaker
	status int    // 201, 400 or 409
	code   string // problem code of a rejection
	field  string // how the rejection's detail starts
}

func accepts(name string, b bodyMaker) createCase {
	return createCase{name: name, body: b, status: http.StatusCreated}
}

func rejects(name, field string, b bodyMaker) createCase {
	return createCase{name: name, body: b, status: http.StatusBadRequest, code: "INVALID_REQUEST", field: field}
}

func conflicts(name, code, field string, b bodyMaker) createCase {
	return createCase{name: name, body: b, status: http.StatusConflict, code: code, field: field}
}

var scalarCases = []createCase{
	// kind: string, required, simple or variable.
	accepts("kind simple", validSimple()),
	accepts("kind variable", validVariable()),
	rejects("kind other", "kind:", validSimple(withField("kind", "bundle"))),
	rejects("kind in capitals", "kind:", validSimple(withField("kind", "Simple"))),

	// name: max 120, counted in characters.
	accepts("name of 120 characters", validSimple(withField("name", letters(120)))),
	accepts("name of 120 two-byte characters", validSimple(withField("name", chars(120, "é")))),
	accepts("name of 120 four-byte characters", validSimple(withField("name", chars(120, "😀")))),
	rejects("name of 121 characters", "name:", validSimple(withField("name", letters(121)))),
	rejects("name of 121 two-byte characters", "name:", validSimple(withField("name", chars(121, "é")))),
	rejects("name not a string", "name:", validSimple(withField("name", 5))),

	// slug: max 120, lowercase words joined by hyphens.
	accepts("slug of 120 characters", validSimple(withSlugOfLength(120))),
	rejects("slug of 121 characters", "slug:", validSimple(withSlugOfLength(121))),
	rejects("slug with capitals", "slug:", validSimple(withField("slug", "Rule-Upper"))),
	rejects("slug with a space", "slug:", validSimple(withField("slug", "rule space"))),
	rejects("slug with a double hyphen", "slug:", validSimple(withField("slug", "rule--double"))),
	rejects("slug with a leading hyphen", "slug:", validSimple(withField("slug", "-rule"))),
	rejects("slug empty", "slug:", validSimple(withField("slug", ""))),

	// description: max 5000.
	accepts("description of 5000 characters", validSimple(withField("description", letters(5000)))),
	accepts("description empty", validSimple(withField("description", ""))),
	rejects("description of 5001 characters", "description:", validSimple(withField("description", letters(5001)))),

	// price: integer 0..1000000000.
	accepts("price 0", validSimple(withField("price", 0))),
	accepts("price 1000000000", validSimple(withField("price", 1000000000))),
	rejects("price -1", "price:", validSimple(withField("price", -1))),
	rejects("price 1000000001", "price:", validSimple(withField("price", 1000000001))),
	rejects("price 1.5", "price:", validSimple(withField("price", 1.5))),
	rejects("price as a string", "price:", validSimple(withField("price", "1"))),

	// original_price: integer or null, 1..1000000000, greater than price.
	accepts("original_price null", validSimple(withField("original_price", nil))),
	accepts("original_price 1 over price 0", validSimple(withField("price", 0), withField("original_price", 1))),
	accepts("original_price 1000000000", validSimple(withField("original_price", 1000000000))),
	accepts("original_price one above price", validSimple(withField("price", 1500), withField("original_price", 1501))),
	rejects("original_price equal to price", "original_price:", validSimple(withField("price", 1500), withField("original_price", 1500))),
	rejects("original_price below price", "original_price:", validSimple(withField("price", 1500), withField("original_price", 1499))),
	rejects("original_price 0", "original_price:", validSimple(withField("price", 0), withField("original_price", 0))),
	rejects("original_price 1000000001", "original_price:", validSimple(withField("original_price", 1000000001))),
	rejects("original_price 1.5", "original_price:", validSimple(withField("price", 0), withField("original_price", 1.5))),

	// category, subcategory: max 120 each.
	accepts("category of 120 characters", validSimple(withField("category", letters(120)))),
	rejects("category of 121 characters", "category:", validSimple(withField("category", letters(121)))),
	accepts("subcategory of 120 characters", validSimple(withField("subcategory", letters(120)))),
	rejects("subcategory of 121 characters", "subcategory:", validSimple(withField("subcategory", letters(121)))),

	// badge: sale, new or null.
	accepts("badge sale", validSimple(withField("badge", "sale"))),
	accepts("badge new", validSimple(withField("badge", "new"))),
	accepts("badge null", validSimple(withField("badge", nil))),
	rejects("badge other", "badge:", validSimple(withField("badge", "hot"))),
	rejects("badge empty", "badge:", validSimple(withField("badge", ""))),

	// sku: string or null, max 100.
	accepts("sku of 100 characters", validSimple(withField("sku", letters(100)))),
	accepts("sku null", validSimple(withField("sku", nil))),
	rejects("sku of 101 characters", "sku:", validSimple(withField("sku", letters(101)))),

	// weight_kg: number 0..2500.
	accepts("weight_kg 0", validSimple(withField("weight_kg", 0))),
	accepts("weight_kg 2500", validSimple(withField("weight_kg", 2500))),
	accepts("weight_kg 2499.5", validSimple(withField("weight_kg", 2499.5))),
	rejects("weight_kg 2500.5", "weight_kg:", validSimple(withField("weight_kg", 2500.5))),
	rejects("weight_kg -0.1", "weight_kg:", validSimple(withField("weight_kg", -0.1))),
	rejects("weight_kg as a string", "weight_kg:", validSimple(withField("weight_kg", "1"))),

	// source_region: string or null.
	accepts("source_region null", validSimple(withField("source_region", nil))),
	accepts("source_region a string", validSimple(withField("source_region", "EU"))),
}

var listCases = []createCase{
	// image_urls: max 12 items, unique, each a uri of max 2048 chars.
	accepts("image_urls of 12 items", validSimple(withField("image_urls", imageURLs(12)))),
	accepts("image_urls empty", validSimple(withField("image_urls", []any{}))),
	accepts("image_url of 2048 characters", validSimple(withField("image_urls", []any{urlOfLength(2048)}))),
	rejects("image_urls of 13 items", "image_urls:", validSimple(withField("image_urls", imageURLs(13)))),
	rejects("image_urls repeated", "image_urls:", validSimple(withField("image_urls", []any{"https://img.example.com/a.jpg", "https://img.example.com/a.jpg"}))),
	rejects("image_url of 2049 characters", "image_urls[1]:", validSimple(withField("image_urls", []any{"https://img.example.com/a.jpg", urlOfLength(2049)}))),
	rejects("image_url not a URL", "image_urls[0]:", validSimple(withField("image_urls", []any{"not a url"}))),
	rejects("image_url a relative path", "image_urls[0]:", validSimple(withField("image_urls", []any{"/img/a.jpg"}))),
	rejects("image_url not a string", "image_urls[0]:", validSimple(withField("image_urls", []any{5}))),

	// features: max 30, unique, each 1..200 chars, single line.
	accepts("features of 30 items", validSimple(withField("features", items(30, "feature ")))),
	accepts("feature of 200 characters", validSimple(withField("features", []any{letters(200)}))),
	rejects("features of 31 items", "features:", validSimple(withField("features", items(31, "feature ")))),
	rejects("features repeated", "features:", validSimple(withField("features", []any{"Soft", "Soft"}))),
	rejects("feature of 201 characters", "features[0]:", validSimple(withField("features", []any{letters(201)}))),
	rejects("feature empty", "features[0]:", validSimple(withField("features", []any{""}))),
	rejects("feature with a line break", "features[0]:", validSimple(withField("features", []any{"soft\nwarm"}))),

	// related_product_ids: max 30, unique, each 1..128 chars.
	accepts("related_product_ids of 30 items", validSimple(withField("related_product_ids", items(30, "prd_")))),
	accepts("related_product_id of 128 characters", validSimple(withField("related_product_ids", []any{letters(128)}))),
	rejects("related_product_ids of 31 items", "related_product_ids:", validSimple(withField("related_product_ids", items(31, "prd_")))),
	rejects("related_product_ids repeated", "related_product_ids:", validSimple(withField("related_product_ids", []any{"prd_1", "prd_1"}))),
	rejects("related_product_id of 129 characters", "related_product_ids[0]:", validSimple(withField("related_product_ids", []any{letters(129)}))),
	rejects("related_product_id empty", "related_product_ids[0]:", validSimple(withField("related_product_ids", []any{""}))),

	// tags: optional, max 30, unique, each 1..64 chars, no comma or line break.
	accepts("tags left out", validSimple(withoutField("tags"))),
	accepts("tags of 30 items", validSimple(withField("tags", items(30, "tag")))),
	accepts("tag of 64 characters", validSimple(withField("tags", []any{letters(64)}))),
	rejects("tags of 31 items", "tags:", validSimple(withField("tags", items(31, "tag")))),
	rejects("tags repeated", "tags:", validSimple(withField("tags", []any{"linen", "linen"}))),
	rejects("tag of 65 characters", "tags[0]:", validSimple(withField("tags", []any{letters(65)}))),
	rejects("tag with a comma", "tags[0]:", validSimple(withField("tags", []any{"linen,cotton"}))),
	rejects("tag with a line break", "tags[0]:", validSimple(withField("tags", []any{"linen\ncotton"}))),
	rejects("tag empty", "tags[0]:", validSimple(withField("tags", []any{""}))),
	rejects("tags null", "tags:", validSimple(withField("tags", nil))),
}

var optionCases = []createCase{
	// options: max 8 names of max 64 chars, single line; each value an
	// array of max 50 unique strings of 1..64 chars, no comma, no line break.
	accepts("options of 8 names", validVariable(withOptionsOnly(optionNames(8)))),
	accepts("option name of 64 characters", validVariable(withOptionsOnly(jsonObj{letters(64): []any{"x"}}))),
	accepts("option of 50 values", validVariable(withOptionsOnly(jsonObj{"size": items(50, "v")}))),
	accepts("option value of 64 characters", validVariable(withOptionsOnly(jsonObj{"size": []any{letters(64)}}))),
	rejects("options of 9 names", "options:", validVariable(withOptionsOnly(optionNames(9)))),
	rejects("option name of 65 characters", "options:", validVariable(withOptionsOnly(jsonObj{letters(65): []any{"x"}}))),
	rejects("option name with a line break", "options:", validVariable(withOptionsOnly(jsonObj{"si\nze": []any{"x"}}))),
	rejects("option of 51 values", "options:", validVariable(withOptionsOnly(jsonObj{"size": items(51, "v")}))),
	rejects("option values repeated", "options:", validVariable(withOptionsOnly(jsonObj{"size": []any{"s", "s"}}))),
	rejects("option value of 65 characters", "options:", validVariable(withOptionsOnly(jsonObj{"size": []any{letters(65)}}))),
	rejects("option value with a comma", "options:", validVariable(withOptionsOnly(jsonObj{"size": []any{"s,m"}}))),
	rejects("option value with a line break", "options:", validVariable(withOptionsOnly(jsonObj{"size": []any{"s\nm"}}))),
	rejects("option value empty", "options:", validVariable(withOptionsOnly(jsonObj{"size": []any{""}}))),
	rejects("option value not an array", "options:", validVariable(withOptionsOnly(jsonObj{"size": "s"}))),

	// default_options: object or null, max 8 names (as options), each value
	// 1..64 chars with no comma or line break, naming an option and one of
	// its values.
	accepts("default_options null", validVariable(withField("default_options", nil))),
	accepts("default_options naming a value", validVariable(withField("default_options", jsonObj{"size": "m"}))),
	accepts("default_options of 8 names", validVariable(withOptionsOnly(optionNames(8)), withField("default_options", defaultsFor(8)))),
	accepts("default_options name and value of 64 characters", validVariable(
		withOptionsOnly(jsonObj{letters(64): []any{letters(64)}}), withField("default_options", jsonObj{letters(64): letters(64)}))),
	rejects("default_options of 9 names", "default_options:", validVariable(withOptionsOnly(optionNames(8)), withField("default_options", defaultsFor(9)))),
	rejects("default_options name of 65 characters", "default_options:", validVariable(withField("default_options", jsonObj{letters(65): "s"}))),
	rejects("default_options name with a line break", "default_options:", validVariable(withField("default_options", jsonObj{"si\nze": "s"}))),
	rejects("default_options value of 65 characters", "default_options:", validVariable(withField("default_options", jsonObj{"size": letters(65)}))),
	rejects("default_options value with a comma", "default_options:", validVariable(withField("default_options", jsonObj{"size": "s,m"}))),
	rejects("default_options value with a line break", "default_options:", validVariable(withField("default_options", jsonObj{"size": "s\nm"}))),
	rejects("default_options value empty", "default_options:", validVariable(withField("default_options", jsonObj{"size": ""}))),
	rejects("default_options value not a string", "default_options:", validVariable(withField("default_options", jsonObj{"size": []any{"s"}}))),
	rejects("default_options naming no option", "default_options:", validVariable(withField("default_options", jsonObj{"color": "s"}))),
	rejects("default_options naming no value", "default_options:", validVariable(withField("default_options", jsonObj{"size": "xl"}))),
}

var variationCases = []createCase{
	// variations: max 100 items.
	accepts("variations of 100 items", validVariable(hundredVariations(0))),
	accepts("variations empty", validVariable(withField("variations", []any{}))),
	rejects("variations of 101 items", "variations:", validVariable(hundredVariations(1))),
	rejects("variations null", "variations:", validVariable(withField("variations", nil))),
	rejects("variation not an object", "variations[0]:", validVariable(withField("variations", []any{"s"}))),

	// Each variation: price integer 0..1000000000, required.
	accepts("variation price 0", validVariable(withVariationField(0, "price", 0))),
	accepts("variation price 1000000000", validVariable(withVariationField(0, "price", 1000000000))),
	rejects("variation price -1", "variations[0].price:", validVariable(withVariationField(0, "price", -1))),
	rejects("variation price 1000000001", "variations[1].price:", validVariable(withVariationField(1, "price", 1000000001), withVariationField(1, "original_price", nil))),
	rejects("variation price 1.5", "variations[0].price:", validVariable(withVariationField(0, "price", 1.5))),
	rejects("variation price as a string", "variations[0].price:", validVariable(withVariationField(0, "price", "1"))),
	rejects("variation price left out", "variations[0].price:", validVariable(withoutVariationField(0, "price"))),

	// original_price: integer or null, 1..1000000000, greater than the variation price.
	accepts("variation original_price null", validVariable(withVariationField(1, "original_price", nil))),
	accepts("variation original_price 1 over price 0", validVariable(withVariationField(0, "price", 0), withVariationField(0, "original_price", 1))),
	accepts("variation original_price 1000000000", validVariable(withVariationField(0, "original_price", 1000000000))),
	rejects("variation original_price equal to its price", "variations[0].original_price:", validVariable(withVariationField(0, "original_price", 2000))),
	rejects("variation original_price below its price", "variations[0].original_price:", validVariable(withVariationField(0, "original_price", 1999))),
	rejects("variation original_price 0", "variations[0].original_price:", validVariable(withVariationField(0, "price", 0), withVariationField(0, "original_price", 0))),
	rejects("variation original_price 1000000001", "variations[0].original_price:", validVariable(withVariationField(0, "original_price", 1000000001))),

	// sku: string or null, max 100.
	accepts("variation sku of 100 characters", validVariable(withVariationField(0, "sku", letters(100)))),
	accepts("variation sku null", validVariable(withVariationField(0, "sku", nil))),
	rejects("variation sku of 101 characters", "variations[0].sku:", validVariable(withVariationField(0, "sku", letters(101)))),

	// No additional properties.
	rejects("variation with color", "variations[0].color:", validVariable(withVariationField(0, "color", "red"))),
	rejects("variation with an id", "variations[0].id:", validVariable(withVariationField(0, "id", "var_1"))),
	rejects("variation with a status", "variations[0].status:", validVariable(withVariationField(0, "status", "active"))),

	// options: as default_options, matching the product's options.
	rejects("variation options left out", "variations[0].options:", validVariable(withoutVariationField(0, "options"))),
	rejects("variation options naming no option", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{"color": "s"}))),
	rejects("variation options naming no value", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{"size": "xl"}))),
	rejects("variation options missing an option", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{}))),
	rejects("variation options with an extra option", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{"size": "s", "color": "red"}))),
	rejects("variation options value with a comma", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{"size": "s,m"}))),
	rejects("variation options value of 65 characters", "variations[0].options:", validVariable(withVariationField(0, "options", jsonObj{"size": letters(65)}))),
}

var conditionalCases = []createCase{
	// When kind is simple, options has no keys and variations no items.
	accepts("simple with empty variations", validSimple(withField("variations", []any{}))),
	rejects("simple with an option", "options:", validSimple(withField("options", jsonObj{"size": []any{"s"}}))),
	rejects("simple with a variation", "variations:", validSimple(withField("variations", []any{jsonObj{"options": jsonObj{}, "price": 100}}))),
	// When kind is variable, sku is null.
	accepts("variable with sku left out", validVariable(withoutField("sku"))),
	rejects("variable with a sku", "sku:", validVariable(withField("sku", "SHIRT"))),
	rejects("variable with an empty sku", "sku:", validVariable(withField("sku", ""))),
}

var propertyCases = []createCase{
	// No properties outside those listed.
	rejects("status", "status:", validSimple(withField("status", "draft"))),
	rejects("revision", "revision:", validSimple(withField("revision", 1))),
	rejects("id", "id:", validSimple(withField("id", "prd_1"))),
	rejects("expected_revision", "expected_revision:", validSimple(withField("expected_revision", 0))),
	rejects("discount", "discount:", validSimple(withField("discount", 10))),
	rejects("misspelt field", "weight:", validSimple(withField("weight", 1))),
}

var authorityCases = []createCase{
	// catalog_authority_connection_id and base_price_authority_connection_id:
	// connection id pattern, 1..160 chars; null when the service owns the
	// domain. The service owns both here, so any id is a mismatch.
	accepts("catalog authority null", validSimple(withField("catalog_authority_connection_id", nil))),
	accepts("base-price authority null", validSimple(withField("base_price_authority_connection_id", nil))),
	conflicts("catalog authority of 160 characters", "AUTHORITY_MISMATCH", "catalog_authority_connection_id:",
		validSimple(withField("catalog_authority_connection_id", letters(160)))),
	conflicts("catalog authority with every allowed character", "AUTHORITY_MISMATCH", "catalog_authority_connection_id:",
		validSimple(withField("catalog_authority_connection_id", "conn.A_9:z-1"))),
	rejects("catalog authority of 161 characters", "catalog_authority_connection_id:", validSimple(withField("catalog_authority_connection_id", letters(161)))),
	rejects("catalog authority empty", "catalog_authority_connection_id:", validSimple(withField("catalog_authority_connection_id", ""))),
	rejects("catalog authority with a space", "catalog_authority_connection_id:", validSimple(withField("catalog_authority_connection_id", "conn 1"))),
	rejects("catalog authority with a slash", "catalog_authority_connection_id:", validSimple(withField("catalog_authority_connection_id", "conn/1"))),
	conflicts("base-price authority of 160 characters", "AUTHORITY_MISMATCH", "base_price_authority_connection_id:",
		validSimple(withField("base_price_authority_connection_id", letters(160)))),
	rejects("base-price authority of 161 characters", "base_price_authority_connection_id:", validSimple(withField("base_price_authority_connection_id", letters(161)))),
	rejects("base-price authority with a space", "base_price_authority_connection_id:", validSimple(withField("base_price_authority_connection_id", "conn 1"))),
}

// requiredFields are the create body's required fields.
var requiredFields = []string{"kind", "name", "slug", "description", "price", "category", "subcategory",
	"image_urls", "options", "features", "related_product_ids", "weight_kg"}

// requiredCases: each required field left out is "<field>: is required";
// null is no value either.
func requiredCases() []createCase {
	var out []createCase
	for _, f := range requiredFields {
		out = append(out,
			rejects(f+" left out", f+": is required", validSimple(withoutField(f))),
			rejects(f+" null", f+":", validSimple(withField(f, nil))))
	}
	return out
}

func TestProductRulesCreate(t *testing.T) {
	a := newRulesAPI(t)
	groups := []struct {
		name  string
		cases []createCase
	}{
		{"scalars", scalarCases},
		{"lists", listCases},
		{"options", optionCases},
		{"variations", variationCases},
		{"conditional", conditionalCases},
		{"additional properties", propertyCases},
		{"required", requiredCases()},
		{"authority", authorityCases},
	}
	var accepted []string
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.cases {
				t.Run(tc.name, func(t *testing.T) {
					body := tc.body(a.nextSlug())
					r := a.createProduct(body)
					if tc.status != http.StatusCreated {
						wantRejected(t, r, tc.status, tc.code, tc.field)
						return
					}
					if r.Status != http.StatusCreated {
						t.Fatalf("status %d, want 201; body %s", r.Status, r.Body)
					}
					p := decodeProduct(t, r)
					accepted = append(accepted, p.ID)
					if p.Status != "draft" || p.Revision != 1 {
						t.Errorf("new product is %s at revision %d, want draft at 1", p.Status, p.Revision)
					}
					wantEchoed(t, body, r)
				})
			}
		})
	}

	// A rejected create stores nothing: the list holds exactly the accepted.
	got := a.productIDs(t)
	sort.Strings(got)
	sort.Strings(accepted)
	if !reflect.DeepEqual(got, accepted) {
		t.Fatalf("the vendor lists %d products, want the %d accepted:\n got %v\nwant %v", len(got), len(accepted), got, accepted)
	}
}

// wantEchoed checks that the created product shows each top-level field
// sent as it was sent (variations, which gain ids, and the authority
// assertions, which are not product fields, aside).
func wantEchoed(t *testing.T, sent jsonObj, r *apitest.Resp) {
	t.Helper()
	var got struct{ Data map[string]any }
	r.JSON(t, &got)
	for k, v := range sent {
		switch k {
		case "variations", "catalog_authority_connection_id", "base_price_authority_connection_id":
			continue
		}
		want := roundTrip(t, v)
		if !reflect.DeepEqual(got.Data[k], want) {
			t.Errorf("%s shown as %v, sent %v", k, got.Data[k], want)
		}
	}
	if vs, ok := sent["variations"].([]any); ok {
		shown, _ := got.Data["variations"].([]any)
		if len(shown) != len(vs) {
			t.Errorf("%d variations shown, %d sent", len(shown), len(vs))
		}
	}
}

// roundTrip is v as JSON decoding shows it.
func roundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ---------------------------------------------------------------------------
// Product update body (PATCH)

// updateOf is the full-replacement body of product p created from body:
// the create fields, expected_revision, and each existing variation with
// its id and status.
func updateOf(body jsonObj, p ruleProduct) jsonObj {
	u := jsonObj{}
	for k, v := range body {
		u[k] = v
	}
	u["expected_revision"] = p.Revision
	if p.Kind == "variable" {
		vs := []any{}
		for _, v := range p.Variations {
			vs = append(vs, existingVariation(v))
		}
		u["variations"] = vs
	}
	return u
}

func existingVariation(v ruleVariation) jsonObj {
	return jsonObj{"id": v.ID, "status": v.Status, "options": v.Options, "price": v.Price, "original_price": v.OriginalPrice, "sku": v.SKU}
}

// patchCase is one PATCH body, made from the valid full replacement.
type patchCase struct {
	name   string
	edits  []bodyEdit
	status int
	code   string
	field  string
}

func patchRejects(name, field string, edits ...bodyEdit) patchCase {
	return patchCase{name: name, edits: edits, status: http.StatusBadRequest, code: "INVALID_REQUEST", field: field}
}

func TestPatchRules(t *testing.T) {
	a := newRulesAPI(t)
	simpleBody := validSimple()(a.nextSlug())
	simple := a.mustCreate(t, simpleBody)
	variableBody := validVariable()(a.nextSlug())
	variable := a.mustCreate(t, variableBody)
	before := map[string]jsonObj{simple.ID: a.storedProduct(t, simple.ID), variable.ID: a.storedProduct(t, variable.ID)}
	newVariation := func(b jsonObj) {
		b["options"] = jsonObj{"size": []any{"s", "m", "l"}}
		b["variations"] = append(b["variations"].([]any), jsonObj{"options": jsonObj{"size": "l"}, "price": 2400})
	}

	patch := func(p ruleProduct, body jsonObj, edits ...bodyEdit) *apitest.Resp {
		u := updateOf(body, p)
		for _, e := range edits {
			e(u)
		}
		return a.send(http.MethodPatch, a.vendorPath("/products/%s", p.ID), u, "")
	}

	t.Run("rejections", func(t *testing.T) {
		variableCases := []patchCase{
			// expected_revision: integer >= 0, required.
			patchRejects("expected_revision left out", "expected_revision: is required", withoutField("expected_revision")),
			patchRejects("expected_revision null", "expected_revision:", withField("expected_revision", nil)),
			patchRejects("expected_revision -1", "expected_revision:", withField("expected_revision", -1)),
			patchRejects("expected_revision 1.5", "expected_revision:", withField("expected_revision", 1.5)),
			patchRejects("expected_revision as a string", "expected_revision:", withField("expected_revision", "1")),
			// kind is immutable.
			patchRejects("kind changed to simple", "kind:",
				withField("kind", "simple"), withOptionsOnly(jsonObj{}), withField("sku", "SHIRT")),
			// kind variable requires the variations field.
			patchRejects("variations left out", "variations: is required", withoutField("variations")),
			// Existing variations carry a known id and a status; none may be dropped.
			patchRejects("unknown variation id", "variations[0].id:", withVariationField(0, "id", "var_unknown")),
			patchRejects("variation id of 129 characters", "variations[0].id:", withVariationField(0, "id", letters(129))),
			patchRejects("variation id empty", "variations[0].id:", withVariationField(0, "id", "")),
			patchRejects("existing variation left out", "variations:", func(b jsonObj) { b["variations"] = b["variations"].([]any)[1:] }),
			patchRejects("existing variation without status", "variations[0].status: is required", withoutVariationField(0, "status")),
			patchRejects("existing variation with status deleted", "variations[0].status:", withVariationField(0, "status", "deleted")),
			patchRejects("existing variation with color", "variations[0].color:", withVariationField(0, "color", "red")),
			// A new variation has no id and no status.
			patchRejects("new variation with a status", "variations[2].status:", newVariation, withVariationField(2, "status", "active")),
			patchRejects("new variation over price", "variations[2].price:", newVariation, withVariationField(2, "price", 1000000001)),
			// The create body's constraints and conditional rules apply.
			patchRejects("name of 121 characters", "name:", withField("name", letters(121))),
			patchRejects("slug of 121 characters", "slug:", withSlugOfLength(121)),
			patchRejects("price 1000000001", "price:", withField("price", 1000000001)),
			patchRejects("original_price equal to price", "original_price:", withField("original_price", 1500)),
			patchRejects("image_urls of 13 items", "image_urls:", withField("image_urls", imageURLs(13))),
			patchRejects("options of 9 names", "options:", withOptionsOnly(optionNames(9))),
			patchRejects("weight_kg 2500.5", "weight_kg:", withField("weight_kg", 2500.5)),
			patchRejects("variable with a sku", "sku:", withField("sku", "SHIRT")),
			patchRejects("variation options naming no value", "variations[0].options:", withVariationField(0, "options", jsonObj{"size": "xl"})),
			patchRejects("name left out", "name: is required", withoutField("name")),
			// Not a copy of the read response.
			patchRejects("status", "status:", withField("status", "published")),
			patchRejects("revision", "revision:", withField("revision", 1)),
			patchRejects("id", "id:", withField("id", variable.ID)),
			patchRejects("catalog authority of 161 characters", "catalog_authority_connection_id:", withField("catalog_authority_connection_id", letters(161))),
			// Stale and future revisions are conflicts that state the current one.
			{name: "expected_revision 0 (stale)", edits: []bodyEdit{withField("expected_revision", 0)},
				status: http.StatusConflict, code: "PRODUCT_REVISION_CONFLICT", field: "expected_revision:"},
			{name: "expected_revision 2 (ahead)", edits: []bodyEdit{withField("expected_revision", 2)},
				status: http.StatusConflict, code: "PRODUCT_REVISION_CONFLICT", field: "expected_revision:"},
			{name: "catalog authority not the current one", edits: []bodyEdit{withField("catalog_authority_connection_id", "conn_1")},
				status: http.StatusConflict, code: "AUTHORITY_MISMATCH", field: "catalog_authority_connection_id:"},
		}
		for _, tc := range variableCases {
			t.Run("variable/"+tc.name, func(t *testing.T) {
				p := wantRejected(t, patch(variable, variableBody, tc.edits...), tc.status, tc.code, tc.field)
				if tc.code == "PRODUCT_REVISION_CONFLICT" && !strings.Contains(p.Detail, "revision 1") {
					t.Errorf("detail %q does not state the current revision 1", p.Detail)
				}
			})
		}
		simpleCases := []patchCase{
			patchRejects("kind changed to variable", "kind:", withField("kind", "variable"), withField("sku", nil), withField("variations", []any{})),
			patchRejects("simple with a variation", "variations:", withField("variations", []any{jsonObj{"options": jsonObj{}, "price": 100}})),
			patchRejects("simple with an option", "options:", withField("options", jsonObj{"size": []any{"s"}})),
			patchRejects("expected_revision left out", "expected_revision: is required", withoutField("expected_revision")),
		}
		for _, tc := range simpleCases {
			t.Run("simple/"+tc.name, func(t *testing.T) {
				wantRejected(t, patch(simple, simpleBody, tc.edits...), tc.status, tc.code, tc.field)
			})
		}
	})

	// The rejections changed nothing.
	for _, p := range []ruleProduct{simple, variable} {
		if now := a.storedProduct(t, p.ID); !reflect.DeepEqual(now, before[p.ID]) {
			t.Fatalf("product changed by rejected updates:\n now %v\nwas %v", now, before[p.ID])
		}
	}

	t.Run("accepted", func(t *testing.T) {
		// A simple product needs no variations field.
		r := patch(simple, simpleBody, withField("name", letters(120)), withoutField("variations"))
		if r.Status != http.StatusOK {
			t.Fatalf("simple update: %d %s", r.Status, r.Body)
		}
		if got := decodeProduct(t, r); got.Revision != 2 || got.Name != letters(120) {
			t.Fatalf("simple update gave revision %d name %q", got.Revision, got.Name)
		}

		// A new variation gets a server-generated id; existing ids stay.
		r = patch(variable, variableBody, newVariation)
		if r.Status != http.StatusOK {
			t.Fatalf("adding a variation: %d %s", r.Status, r.Body)
		}
		got := decodeProduct(t, r)
		if got.Revision != 2 || len(got.Variations) != 3 || got.Variations[0].ID != variable.Variations[0].ID ||
			got.Variations[1].ID != variable.Variations[1].ID || got.Variations[2].ID == "" || got.Variations[2].Status != "active" {
			t.Fatalf("after adding a variation: %+v", got)
		}

		// The earlier revision is now stale, and the conflict says so.
		p := wantRejected(t, patch(variable, variableBody, withField("name", "Late")), http.StatusConflict, "PRODUCT_REVISION_CONFLICT", "expected_revision:")
		if !strings.Contains(p.Detail, "revision 2") {
			t.Errorf("detail %q does not state the current revision 2", p.Detail)
		}
	})
}

// ---------------------------------------------------------------------------
// Product transition body

func TestTransitionRules(t *testing.T) {
	a := newRulesAPI(t)
	p := a.mustCreate(t, validSimple()(a.nextSlug()))
	before := a.storedProduct(t, p.ID)
	transition := func(action string, body any) *apitest.Resp {
		return a.send(http.MethodPost, a.vendorPath("/products/%s/%s", p.ID, action), body, "")
	}

	cases := []struct {
		name  string
		body  any
		field string
	}{
		// expected_revision: integer >= 0, required.
		{"expected_revision left out", jsonObj{}, "expected_revision: is required"},
		{"expected_revision null", jsonObj{"expected_revision": nil}, "expected_revision:"},
		{"expected_revision -1", jsonObj{"expected_revision": -1}, "expected_revision:"},
		{"expected_revision 1.5", jsonObj{"expected_revision": 1.5}, "expected_revision:"},
		{"expected_revision as a string", jsonObj{"expected_revision": "1"}, "expected_revision:"},
		// The authority ids: string or null, connection id pattern, 1..160 chars.
		{"catalog authority of 161 characters", jsonObj{"expected_revision": 1, "catalog_authority_connection_id": letters(161)}, "catalog_authority_connection_id:"},
		{"catalog authority empty", jsonObj{"expected_revision": 1, "catalog_authority_connection_id": ""}, "catalog_authority_connection_id:"},
		{"base-price authority with a space", jsonObj{"expected_revision": 1, "base_price_authority_connection_id": "conn 1"}, "base_price_authority_connection_id:"},
		// No other properties.
		{"status", jsonObj{"expected_revision": 1, "status": "published"}, "status:"},
		{"revision", jsonObj{"expected_revision": 1, "revision": 1}, "revision:"},
		{"not an object", `[1]`, "body:"},
	}
	for _, action := range []string{"publish", "unpublish", "archive", "restore"} {
		t.Run(action, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					wantRejected(t, transition(action, tc.body), http.StatusBadRequest, "INVALID_REQUEST", tc.field)
				})
			}
			// 0 is a valid expected_revision: it passes the body rules and
			// is then a stale revision.
			p := wantRejected(t, transition(action, jsonObj{"expected_revision": 0}), http.StatusConflict, "PRODUCT_REVISION_CONFLICT", "expected_revision:")
			if !strings.Contains(p.Detail, "revision 1") {
				t.Errorf("detail %q does not state the current revision 1", p.Detail)
			}
		})
	}
	if now := a.storedProduct(t, p.ID); !reflect.DeepEqual(now, before) {
		t.Fatalf("product changed by rejected transitions:\n now %v\nwas %v", now, before)
	}

	// The smallest complete body, and one with both authority ids null.
	r := transition("publish", jsonObj{"expected_revision": 1})
	if r.Status != http.StatusOK {
		t.Fatalf("publish: %d %s", r.Status, r.Body)
	}
	if got := decodeProduct(t, r); got.Status != "published" || got.Revision != 2 {
		t.Fatalf("published product: %+v", got)
	}
	r = transition("archive", jsonObj{"expected_revision": 2, "catalog_authority_connection_id": nil, "base_price_authority_connection_id": nil})
	if r.Status != http.StatusOK {
		t.Fatalf("archive: %d %s", r.Status, r.Body)
	}
	if got := decodeProduct(t, r); got.Status != "archived" || got.Revision != 3 {
		t.Fatalf("archived product: %+v", got)
	}
	wantRejected(t, transition("restore", jsonObj{"expected_revision": 2}), http.StatusConflict, "PRODUCT_REVISION_CONFLICT", "expected_revision:")
}

// ---------------------------------------------------------------------------
// Adjustment body

func TestAdjustmentRules(t *testing.T) {
	a := newRulesAPI(t)
	p := a.mustCreate(t, validSimple()(a.nextSlug()))
	item := a.inventoryItem(t, p.ID)
	if item.OnHand != 0 || item.Version != 1 {
		t.Fatalf("new item %+v, want on_hand 0 at version 1", item)
	}
	adjust := func(body any, key string) *apitest.Resp {
		return a.send(http.MethodPost, a.vendorPath("/inventory-items/%s/adjustments", item.ID), body, key)
	}

	t.Run("rejections", func(t *testing.T) {
		cases := []struct {
			name  string
			body  any
			field string
		}{
			// target_on_hand: integer 0..1000000000, required.
			{"target_on_hand -1", jsonObj{"target_on_hand": -1, "expected_version": 1}, "target_on_hand:"},
			{"target_on_hand 1000000001", jsonObj{"target_on_hand": 1000000001, "expected_version": 1}, "target_on_hand:"},
			{"target_on_hand 1.5", jsonObj{"target_on_hand": 1.5, "expected_version": 1}, "target_on_hand:"},
			{"target_on_hand as a string", jsonObj{"target_on_hand": "5", "expected_version": 1}, "target_on_hand:"},
			{"target_on_hand left out", jsonObj{"expected_version": 1}, "target_on_hand: is required"},
			{"target_on_hand null", jsonObj{"target_on_hand": nil, "expected_version": 1}, "target_on_hand:"},
			// expected_version: integer >= 0, required.
			{"expected_version left out", jsonObj{"target_on_hand": 5}, "expected_version: is required"},
			{"expected_version null", jsonObj{"target_on_hand": 5, "expected_version": nil}, "expected_version:"},
			{"expected_version -1", jsonObj{"target_on_hand": 5, "expected_version": -1}, "expected_version:"},
			{"expected_version 1.5", jsonObj{"target_on_hand": 5, "expected_version": 1.5}, "expected_version:"},
			// authority_connection_id: string or null, connection id pattern, 1..160 chars.
			{"authority of 161 characters", jsonObj{"target_on_hand": 5, "expected_version": 1, "authority_connection_id": letters(161)}, "authority_connection_id:"},
			{"authority empty", jsonObj{"target_on_hand": 5, "expected_version": 1, "authority_connection_id": ""}, "authority_connection_id:"},
			{"authority with a space", jsonObj{"target_on_hand": 5, "expected_version": 1, "authority_connection_id": "conn 1"}, "authority_connection_id:"},
			// No other properties.
			{"on_hand", jsonObj{"target_on_hand": 5, "expected_version": 1, "on_hand": 5}, "on_hand:"},
			{"reserved", jsonObj{"target_on_hand": 5, "expected_version": 1, "reserved": 0}, "reserved:"},
			{"delta", jsonObj{"target_on_hand": 5, "expected_version": 1, "delta": 5}, "delta:"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wantRejected(t, adjust(tc.body, a.nextKey()), http.StatusBadRequest, "INVALID_REQUEST", tc.field)
			})
		}

		// Idempotency-Key: required, letters, digits, _ and -, 8..128 chars.
		valid := jsonObj{"target_on_hand": 5, "expected_version": 1}
		adjust(valid, "").WantProblem(t, http.StatusBadRequest, "IDEMPOTENCY_KEY_REQUIRED")
		for _, key := range []string{letters(7), letters(129), "rules.key.1", "rules:key:1", "rules key 1"} {
			adjust(valid, key).WantProblem(t, http.StatusBadRequest, "IDEMPOTENCY_KEY_INVALID")
		}

		// A valid id that is not the Stock Pool's authority (the service).
		wantRejected(t, adjust(jsonObj{"target_on_hand": 5, "expected_version": 1, "authority_connection_id": letters(160)}, a.nextKey()),
			http.StatusConflict, "AUTHORITY_MISMATCH", "authority_connection_id:")
		// 0 is a valid expected_version; here it is a stale one.
		wantRejected(t, adjust(jsonObj{"target_on_hand": 5, "expected_version": 0}, a.nextKey()),
			http.StatusConflict, "INVENTORY_VERSION_CONFLICT", "expected_version:")
	})

	if now := a.getItem(t, item.ID); now != item {
		t.Fatalf("item changed by rejected adjustments: %+v, was %+v", now, item)
	}

	t.Run("accepted", func(t *testing.T) {
		// The largest target, under the shortest key.
		r := adjust(jsonObj{"target_on_hand": 1000000000, "expected_version": 1, "authority_connection_id": nil}, "key_-8ch")
		if r.Status != http.StatusOK {
			t.Fatalf("target 1000000000: %d %s", r.Status, r.Body)
		}
		if got := a.getItem(t, item.ID); got.OnHand != 1000000000 || got.Available != 1000000000 || got.Version != 2 {
			t.Fatalf("after target 1000000000: %+v", got)
		}
		// The smallest target, under the longest key.
		r = adjust(jsonObj{"target_on_hand": 0, "expected_version": 2}, "K_-"+letters(125))
		if r.Status != http.StatusOK {
			t.Fatalf("target 0: %d %s", r.Status, r.Body)
		}
		if got := a.getItem(t, item.ID); got.OnHand != 0 || got.Available != 0 || got.Version != 3 {
			t.Fatalf("after target 0: %+v", got)
		}
	})
}
