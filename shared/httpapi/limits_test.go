package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/openapi"
)

// TestSchemaLimitsMatchFieldRules ties the two sources of truth for string
// lengths: the maxLength of each request-schema property in the OpenAPI
// document, and the fields rule of the parser that validates it. For every
// string a valid body holds where the schema sets a maxLength, a value of
// exactly that length must pass the route's parser and one a character
// longer must be refused naming the field.
func TestSchemaLimitsMatchFieldRules(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openapi.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	valid := map[string]struct{ parser, body string }{
		"createProduct":             {"products.create", `{"kind":"simple","name":"Linen shirt","slug":"linen","description":"x","price":4500,"original_price":6000,"category":"apparel","subcategory":"shirts","image_urls":["https://cdn.example.com/a.jpg"],"options":{},"features":["washed"],"related_product_ids":[],"weight_kg":0.3,"sku":"S-1","badge":"new","source_region":"EU"}`},
		"createConnection":          {"connections.create", `{"provider":"marketplace_a","external_account_id":"acct-1","display_name":"Shop","roles":{"catalog":"destination","base_price":"destination","inventory":"destination","order_ingress":"enabled","external_order_fulfillment":"moku"}}`},
		"createReservation":         {"reservations.create", `{"connection_id":"conn_1","inventory_item_id":"inv_x_000","quantity":2,"expires_in_seconds":900}`},
		"createListing":             {"listings.create", `{"connection_id":"conn_1","product_id":"prd_1","channel_price":100}`},
		"updateListing":             {"listings.update", `{"expected_version":1,"external_listing_id":"ext-1"}`},
		"createWebhookSubscription": {"webhooks.create", `{"url":"https://hooks.example.com/x","event_types":["product.created"],"description":"d"}`},
		"updateWebhookSubscription": {"webhooks.update", `{"expected_version":1,"description":"d"}`},
		"markSellerOrderShipped":    {"seller_orders.ship", `{"carrier":"UPS","tracking_number":"1Z","expected_version":2}`},
		"resolveConflict":           {"conflicts.close", `{"expected_version":1,"reason":"fixed"}`},
		"createSyncJob":             {"sync_jobs.create", `{"connection_id":"c","kind":"inventory","items":[{"inventory_item_id":"inv_a","on_hand":1}]}`},
		"createBulkOperation":       {"bulk.create", `{"kind":"inventory_adjustment","items":[{"key":"k1","inventory_item_id":"inv_a","body":{"target_on_hand":1,"expected_version":1}}]}`},
		"importExternalOrder":       {"external_orders.import", `{"connection_id":"conn_1","external_order_id":"ext-1","lines":[{"line_id":"l1","inventory_item_id":"inv_a","quantity":1,"unit_price":100}]}`},
		"exchangeStorePairingCode":  {"pairings.exchange", `{"code":"ABCD-EFGH"}`},
		"acceptStorePairing":        {"pairings.accept", `{"expected_version":1,"preset":"store_source","connection_id":"conn_1"}`},
		"postStorePairingDiscovery": {"pairings.discovery", `{"store":{"domain":"shop.example.com","name":"Shop","platform":"woo","platform_version":"8.0","currency":"EUR"},"plugin_version":"1.0","catalog":{"product_count":1,"published_count":1,"variation_count":0,"in_stock_count":1}}`},
		"adjustInventoryItem":       {"inventory.adjust", `{"target_on_hand":10,"expected_version":1,"authority_connection_id":"conn_1"}`},
	}
	ops := operations(doc)
	checked := 0
	for op, v := range valid {
		schema, ok := ops[op]
		if !ok {
			t.Errorf("%s: no such operation with a JSON body", op)
			continue
		}
		parse := bodyParsers[v.parser]
		if err := parse([]byte(v.body)); err != nil {
			t.Errorf("%s: the valid body is refused: %v", op, err)
			continue
		}
		var body any
		if err := json.Unmarshal([]byte(v.body), &body); err != nil {
			t.Fatal(err)
		}
		for _, f := range limited(doc, schema, body, nil) {
			checked++
			for _, n := range []int{f.max, f.max + 1} {
				b := mutate(t, v.body, f.path, pad(f.value, n))
				err := parse(b)
				name := f.name()
				switch {
				case n == f.max && err != nil && strings.Contains(errs.As(err).Detail, name):
					t.Errorf("%s %s: the schema allows %d characters, the parser refuses them: %v", op, name, n, err)
				case n > f.max && (err == nil || !strings.Contains(errs.As(err).Detail, name)):
					t.Errorf("%s %s: the schema allows at most %d characters, the parser accepts %d (%v)", op, name, f.max, n, err)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d limited fields checked", checked)
	}
	t.Logf("%d limited string fields checked", checked)
}

// operations maps operation ids to the JSON schema of their request body.
func operations(doc map[string]any) map[string]any {
	out := map[string]any{}
	for _, item := range doc["paths"].(map[string]any) {
		for _, o := range item.(map[string]any) {
			op, ok := o.(map[string]any)
			if !ok || op["requestBody"] == nil {
				continue
			}
			content := op["requestBody"].(map[string]any)["content"].(map[string]any)
			if j, ok := content["application/json"].(map[string]any); ok {
				out[op["operationId"].(string)] = j["schema"]
			}
		}
	}
	return out
}

// field is a string of a valid body whose schema sets a maxLength.
type field struct {
	path  []any // property names and array indexes
	value string
	max   int
}

// name is how a parser's detail names the field: a.b[0].c.
func (f field) name() string {
	var sb strings.Builder
	for i, p := range f.path {
		switch p := p.(type) {
		case string:
			if i > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(p)
		case int:
			fmt.Fprintf(&sb, "[%d]", p)
		}
	}
	return sb.String()
}

// limited walks body beside its schema and lists its limited strings.
func limited(doc map[string]any, schema, body any, path []any) []field {
	s := resolve(doc, schema)
	if s == nil {
		return nil
	}
	var out []field
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := s[k].([]any); ok {
			for _, sub := range subs {
				out = append(out, limited(doc, sub, body, path)...)
			}
		}
	}
	switch b := body.(type) {
	case string:
		if max, ok := s["maxLength"].(float64); ok {
			out = append(out, field{path: append([]any(nil), path...), value: b, max: int(max)})
		}
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for k, v := range b {
			if ps, ok := props[k]; ok {
				out = append(out, limited(doc, ps, v, append(path, k))...)
			}
		}
	case []any:
		if len(b) > 0 && s["items"] != nil {
			out = append(out, limited(doc, s["items"], b[0], append(path, 0))...)
		}
	}
	return out
}

func resolve(doc map[string]any, schema any) map[string]any {
	s, _ := schema.(map[string]any)
	for s != nil && s["$ref"] != nil {
		ref := strings.TrimPrefix(s["$ref"].(string), "#/")
		var cur any = doc
		for _, part := range strings.Split(ref, "/") {
			cur = cur.(map[string]any)[part]
		}
		s, _ = cur.(map[string]any)
	}
	return s
}

// pad stretches a valid value to n characters, keeping its start so that
// patterns (slugs, URLs, ids) still match.
// A host name grows by labels in front, each at most 63 characters.
func pad(v string, n int) string {
	if len(v) >= n {
		return v[:n]
	}
	if !strings.Contains(v, ".") || strings.Contains(v, "/") {
		return v + strings.Repeat("a", n-len(v))
	}
	for len(v) < n {
		if n-len(v) == 1 {
			return "a" + v // the first label added is at most 62 long
		}
		v = strings.Repeat("a", min(62, n-len(v)-1)) + "." + v
	}
	return v
}

// mutate returns body with the string at path replaced by v.
func mutate(t *testing.T, body string, path []any, v string) []byte {
	var root any
	if err := json.Unmarshal([]byte(body), &root); err != nil {
		t.Fatal(err)
	}
	cur := root
	for i, p := range path {
		last := i == len(path)-1
		switch p := p.(type) {
		case string:
			m := cur.(map[string]any)
			if last {
				m[p] = v
			}
			cur = m[p]
		case int:
			a := cur.([]any)
			if last {
				a[p] = v
			}
			cur = a[p]
		}
	}
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
