package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/openapi"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

type operation struct {
	OperationID string            `json:"operationId"`
	Scopes      []string          `json:"x-scopes"`
	Security    *[]any            `json:"security"`
	Responses   map[string]any    `json:"responses"`
	Parameters  []json.RawMessage `json:"parameters"`
}

func document(t *testing.T) map[string]any {
	var doc map[string]any
	if err := json.Unmarshal(openapi.Raw(), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

func TestDocumentHeader(t *testing.T) {
	doc := document(t)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	if v := doc["info"].(map[string]any)["version"]; v != "1.0.0-beta.2" || openapi.Version != "1.0.0-beta.2" {
		t.Fatalf("info.version = %v", v)
	}
	b, err := openapi.Document("https://api.example.com/v1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"url": "https://api.example.com/v1"`) || !strings.HasPrefix(string(b), "{\n  \"openapi\": \"3.1.0\"") {
		t.Fatal("servers not set to the base URL")
	}
}

// TestEveryRouteDocumented fails when a mounted route is missing from the
// document, when the document lists a route that is not mounted, or when
// their operation ids or scopes disagree.
func TestEveryRouteDocumented(t *testing.T) {
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := app.New(context.Background(), config.Default(), app.WithStore(st), app.WithClock(clock.System{}))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := a.Handler(context.Background(), app.AllGroups()...)
	if err != nil {
		t.Fatal(err)
	}
	var paths map[string]map[string]json.RawMessage
	raw, _ := json.Marshal(document(t)["paths"])
	json.Unmarshal(raw, &paths)

	documented := map[string]operation{}
	for path, item := range paths {
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			var o operation
			if err := json.Unmarshal(op, &o); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			documented[strings.ToUpper(method)+" "+path] = o
		}
	}
	mounted := map[string]bool{}
	for _, r := range srv.Routes() {
		key := r.Method + " " + r.Path
		mounted[key] = true
		o, ok := documented[key]
		if !ok {
			t.Errorf("route %s is not in openapi.json", key)
			continue
		}
		if o.OperationID != r.Operation {
			t.Errorf("%s: operationId %q, route says %q", key, o.OperationID, r.Operation)
		}
		var scopes []string
		for _, s := range r.Scopes {
			scopes = append(scopes, string(s))
		}
		if !slices.Equal(o.Scopes, scopes) {
			t.Errorf("%s: x-scopes %v, route requires %v", key, o.Scopes, scopes)
		}
		public := r.Scopes == nil
		if public != (o.Security != nil && len(*o.Security) == 0) {
			t.Errorf("%s: public=%v but the document's security says otherwise", key, public)
		}
		if _, ok := o.Responses["503"]; !public && !ok {
			t.Errorf("%s: authenticated route does not document 503", key)
		}
	}
	for key := range documented {
		if !mounted[key] {
			t.Errorf("openapi.json lists %s, which no group mounts", key)
		}
	}
}

func TestErrorCodesDocumented(t *testing.T) {
	schemas := document(t)["components"].(map[string]any)["schemas"].(map[string]any)
	var enum []string
	for _, v := range schemas["ErrorCode"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	var catalog []string
	for _, i := range errs.Catalog() {
		catalog = append(catalog, string(i.Code))
	}
	sort.Strings(enum)
	sort.Strings(catalog)
	if !slices.Equal(enum, catalog) {
		t.Fatalf("ErrorCode enum %v differs from the catalog %v", enum, catalog)
	}
}

func TestEventTypesDocumented(t *testing.T) {
	schemas := document(t)["components"].(map[string]any)["schemas"].(map[string]any)
	var enum []string
	for _, v := range schemas["EventType"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	types := event.Types()
	sort.Strings(enum)
	sort.Strings(types)
	if !slices.Equal(enum, types) {
		t.Fatalf("EventType enum %v differs from event.Types() %v", enum, types)
	}
}

// TestDocumentValid: the document is valid OpenAPI 3.1 and every $ref
// resolves, as the validator the HTTP tests use reads it.
func TestDocumentValid(t *testing.T) {
	if _, err := apitest.NewContract(openapi.Raw()); err != nil {
		t.Fatal(err)
	}
}

// TestDocumentHasNoDuplicateKeys walks the document's tokens: JSON allows
// an object to name a member twice and decoders keep one silently, but a
// validator that renders the schema refuses it (two branches that each
// added the same property merged into such a document once).
func TestDocumentHasNoDuplicateKeys(t *testing.T) {
	dec := json.NewDecoder(bytes.NewReader(openapi.Raw()))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token of an object is a key
	}
	var stack []*frame
	var path []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		top := func() *frame {
			if len(stack) == 0 {
				return nil
			}
			return stack[len(stack)-1]
		}
		if f := top(); f != nil && f.object && f.key {
			if k, ok := tok.(string); ok {
				if f.keys[k] {
					t.Errorf("%s names %q twice", strings.Join(path, "/"), k)
				}
				f.keys[k] = true
				f.key = false
				path = append(path, k)
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: its member's key leaves the path.
		if f := top(); f != nil && f.object {
			path = path[:len(path)-1]
			f.key = true
		}
	}
}
