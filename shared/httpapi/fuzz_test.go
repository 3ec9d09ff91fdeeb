package httpapi

import (
	"bytes"
	"encoding/json"
	"mime"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/bulk"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/conflict"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/inventory"
	"github.com/moku/sellerapi/shared/listing"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/sellerorder"
	"github.com/moku/sellerapi/shared/syncjob"
	"github.com/moku/sellerapi/shared/webhook"
	"github.com/moku/sellerapi/shared/webhook/signature"
)

// bodyParsers are every operation group's body decoders, as the handlers
// call them after Call.Body.
var bodyParsers = map[string]func([]byte) error{
	"products.create":        func(b []byte) error { _, err := catalog.ParseCreate(b); return err },
	"products.update":        func(b []byte) error { _, err := catalog.ParseUpdate(b); return err },
	"products.transition":    func(b []byte) error { _, err := catalog.ParseTransition(b); return err },
	"inventory.adjust":       func(b []byte) error { _, err := inventory.ParseAdjustment(b); return err },
	"connections.create":     func(b []byte) error { _, err := connection.ParseCreate(b); return err },
	"connections.roles":      func(b []byte) error { _, err := connection.ParseRoles(b); return err },
	"connections.health":     func(b []byte) error { _, err := connection.ParseHealth(b); return err },
	"reservations.create":    func(b []byte) error { _, err := reservation.ParseCreate(b); return err },
	"reservations.version":   func(b []byte) error { _, err := reservation.ParseVersion(b); return err },
	"reservations.renew":     func(b []byte) error { _, err := reservation.ParseRenew(b); return err },
	"listings.create":        func(b []byte) error { _, err := listing.ParseCreate(b); return err },
	"listings.update":        func(b []byte) error { _, err := listing.ParseUpdate(b); return err },
	"version":                func(b []byte) error { _, err := fields.ParseVersion(b); return err },
	"external_orders.import": func(b []byte) error { _, err := extorder.ParseImport(b); return err },
	"external_orders.plugin": func(b []byte) error { _, err := extorder.ParsePluginImport(b, "conn_fuzz"); return err },
	"seller_orders.ship":     func(b []byte) error { _, err := sellerorder.ParseInput(b, sellerorder.MarkShipped); return err },
	"seller_orders.other":    func(b []byte) error { _, err := sellerorder.ParseInput(b, "cancel"); return err },
	"conflicts.close":        func(b []byte) error { _, err := conflict.ParseClosing(b); return err },
	"pairings.create":        func(b []byte) error { return pairing.ParseCreate(b) },
	"pairings.exchange":      func(b []byte) error { _, err := pairing.ParseExchange(b); return err },
	"pairings.discovery":     func(b []byte) error { _, err := pairing.ParseDiscovery(b); return err },
	"pairings.accept":        func(b []byte) error { _, err := pairing.ParseAccept(b); return err },
	"bulk.create":            func(b []byte) error { _, err := bulk.Parse(b); return err },
	"sync_jobs.create":       func(b []byte) error { _, err := syncjob.Parse(b, true); return err },
	"sync_jobs.plugin":       func(b []byte) error { _, err := syncjob.Parse(b, false); return err },
	"webhooks.create":        func(b []byte) error { _, err := webhook.ParseCreate(b, webhook.Policy{}); return err },
	"webhooks.create.local": func(b []byte) error {
		_, err := webhook.ParseCreate(b, webhook.Policy{AllowLoopback: true})
		return err
	},
	"webhooks.update": func(b []byte) error { _, err := webhook.ParseUpdate(b, webhook.Policy{}); return err },
	"webhooks.replay": func(b []byte) error { _, err := webhook.ParseReplay(b); return err },
	"webhooks.recover": func(b []byte) error {
		in, err := webhook.ParseRecover(b)
		if err != nil {
			return err
		}
		_, err = webhook.CheckWindow("since", in.Since, in.Until, clocktest.Date(2026, 3, 4, 10, 0, 0))
		return err
	},
	"strict": func(b []byte) error { return DecodeStrict(b, &struct{ A, B string }{}) },
}

// FuzzJSONBodies drives every group's body decoder with the bytes a client
// sends, through the check every JSON body passes first. Whatever the
// bytes, nothing panics, and a refusal is a 400 (errs kind Invalid) with a
// detail, never an internal error.
func FuzzJSONBodies(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"simple","name":"Linen shirt","slug":"linen","description":"x","price":4500,"original_price":6000,"category":"apparel","subcategory":"shirts","image_urls":["https://cdn.example.com/a.jpg"],"options":{},"features":[],"related_product_ids":[],"weight_kg":0.3,"sku":"S-1"}`,
		`{"kind":"variable","name":"T","slug":"t","price":1,"category":"c","options":{"size":["s","m"]},"variations":[{"options":{"size":"s"},"price":1},{"options":{"size":"m"},"price":2,"original_price":3}],"weight_kg":1}`,
		`{"expected_revision":1}`,
		`{"target_on_hand":10,"expected_version":1}`,
		`{"target_on_hand":1,"expected_version":1,"target_on_hand":9}`,
		`{"target_on_hand":1,"expected_version":1,"authority_connection_id":"a\u0000b"}`,
		"{\"a\":\"caf\xe9\"}",
		`{"a":"\ud800"}`,
		`{"a":"\ud83d\ude00","A":1}`,
		`{"provider":"marketplace_a","display_name":"Shop","roles":{"inventory":"destination"}}`,
		`{"connection_id":"conn_1","inventory_item_id":"inv_x_000","quantity":2,"expires_in_seconds":900}`,
		`{"expected_version":3}`,
		`{"connection_id":"c","kind":"inventory","items":[{"inventory_item_id":"inv_a","on_hand":1}]}`,
		`{"kind":"inventory_adjustment","items":[{"key":"k1","inventory_item_id":"inv_a","body":{"target_on_hand":1,"expected_version":1}}]}`,
		`{"url":"https://hooks.example.com/x","event_types":["product.created"],"description":"d"}`,
		`{"url":"http://127.0.0.1:8080/x","event_types":["*"]}`,
		`{"destination":{"type":"sqs","queue_url":"https://sqs.eu-west-1.amazonaws.com/123456789012/orders"},"event_types":["*"]}`,
		`{"destination":{"type":"sqs","queue_url":"http://127.0.0.1:9324/000000000000/q"},"event_types":["*"]}`,
		`{"destination":{"type":"eventbridge","event_bus_arn":"arn:aws:events:us-east-1:123456789012:event-bus/default"},"event_types":["product.created"]}`,
		`{"destination":{"type":"https","url":"https://hooks.example.com/x"},"event_types":["*"],"expected_version":1}`,
		`{"destination":{"type":"sqs","event_bus_arn":"x"},"url":"https://hooks.example.com/x","event_types":["*"]}`,
		`{"code":"ABCD-EFGH"}`,
		`{"reason":"fixed","resolution":"resolved"}`,
		`{"carrier":"UPS","tracking_number":"1Z","expected_version":2}`,
		`{"since":"2026-03-04T08:00:00Z","until":"2026-03-04T10:00:00.5+01:00"}`,
		`{"since":"2025-12-01T00:00:00Z","until":null}`,
		`{"expected_version":2,"status":"enabled","recover_since":"2026-03-04T08:00:00Z"}`,
		`[]`, `null`, `{}`, `{"a":{"b":{"c":[1,2,{"d":"e"}]}}}`, `{"a":1e999}`, `{"a":-0}`, `  {"a" : "b" }  `,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := checkBody(b); err != nil {
			wantBadRequest(t, "body", err)
			return
		}
		// What passed is valid UTF-8 with distinct names and no NUL, as a
		// second, independent reading confirms.
		if !utf8.Valid(b) {
			t.Fatalf("invalid UTF-8 passed: %q", b)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("checked body does not decode: %v", err)
		}
		if strings.ContainsRune(jsonStrings(v), 0) {
			t.Fatalf("NUL passed: %q", b)
		}
		for name, parse := range bodyParsers {
			if err := parse(b); err != nil {
				wantBadRequest(t, name, err)
			}
		}
	})
}

// jsonStrings concatenates every string and name of a decoded value.
func jsonStrings(v any) string {
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			sb.WriteString(x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				sb.WriteString(k)
				walk(e)
			}
		}
	}
	walk(v)
	return sb.String()
}

func wantBadRequest(t *testing.T, what string, err error) {
	t.Helper()
	e := errs.As(err)
	if e.Kind != errs.Invalid || e.Detail == "" || StatusOf(e.Kind) != 400 {
		t.Fatalf("%s: %v (kind %v), want a 400 with a detail", what, err, e.Kind)
	}
}

// FuzzHeaders drives the parsers of header and path values a client
// controls: bearer credentials, Idempotency-Key (once or repeated),
// Content-Type, the media digest, webhook signatures, token scopes and the
// path's canonical form. Nothing panics; refusals are 4xx errors.
func FuzzHeaders(f *testing.F) {
	for _, seed := range []string{
		"Bearer mkpat_abc", "bearer  x ", "Basic abc", "", "Bearer", "key-12345678", "key:with.dots-1234", "k\x00ey12345",
		"application/json; charset=utf-8", "image/jpeg", "multipart/form-data; boundary=x", "text/plain; a=\"b",
		"t=1700000000,v1=abc,v1=def", "t=1,t=2", "v1=x", "products.read products.write", "/v1/vendors/x/../y", "/v1//a", "/v1/a/",
		strings.Repeat("a", 64), strings.Repeat("0", 63) + "G",
	} {
		f.Add(seed, seed)
	}
	patterns := []*regexp.Regexp{idempotency.ProductKeyPattern, idempotency.ConnectionKeyPattern}
	f.Fuzz(func(t *testing.T, a, b string) {
		if tok, ok := bearer(a); ok && (tok == "" || strings.TrimSpace(tok) != tok) {
			t.Fatalf("bearer(%q) = %q", a, tok)
		}
		for _, p := range patterns {
			for _, values := range [][]string{{a}, {a, b}, nil} {
				key, err := idempotency.HeaderKey(values, p)
				if err != nil {
					wantBadRequest(t, "Idempotency-Key", err)
					continue
				}
				if len(values) != 1 || key != a || !p.MatchString(key) {
					t.Fatalf("HeaderKey(%q) = %q", values, key)
				}
			}
		}
		if mt, _, err := mime.ParseMediaType(a); err == nil && media.AcceptedType(mt) && mt != media.TypeJPEG && mt != media.TypePNG && mt != media.TypeWebP {
			t.Fatalf("accepted type %q", mt)
		}
		if err := media.ValidDigest(a); err != nil {
			wantBadRequest(t, "digest", err)
		} else if len(a) != 64 || strings.ToLower(a) != a {
			t.Fatalf("digest %q accepted", a)
		}
		if p, err := signature.Parse(a); err == nil && len(p.V1) == 0 {
			t.Fatalf("signature %q parsed without v1", a)
		}
		auth.ParseScopes(a)
		if canonicalPath(a) {
			for _, seg := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(a, "/"), "/"), "/") {
				if (seg == "" && a != "/") || seg == "." || seg == ".." {
					t.Fatalf("canonicalPath(%q) with segment %q", a, seg)
				}
			}
		}
	})
}
