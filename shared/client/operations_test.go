package client_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/moku/sellerapi/shared/client"
	"github.com/moku/sellerapi/shared/openapi"
)

// docOperation is what this test reads of an operation of the document.
type docOperation struct {
	OperationID string `json:"operationId"`
	Parameters  []struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
		In   string `json:"in"`
	} `json:"parameters"`
	RequestBody *struct {
		Content map[string]json.RawMessage `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema struct {
				Properties map[string]struct {
					Ref   string `json:"$ref"`
					Items *struct {
						Ref string `json:"$ref"`
					} `json:"items"`
				} `json:"properties"`
			} `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

// aliasable is what this test reads of a component schema.
type aliasable struct {
	AllOf []struct {
		Ref string `json:"$ref"`
	} `json:"allOf"`
	Properties map[string]any `json:"properties"`
}

// TestEveryOperationHasAMethod walks every operation of the document and
// fails when the client has no method named for its operationId, when
// the method's request lacks a field for one of its parameters or its
// body, when its result is not the type the answer's data names, or when
// a list with a page has no walker.
func TestEveryOperationHasAMethod(t *testing.T) {
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
			Schemas map[string]aliasable `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	c := reflect.TypeFor[*client.Client]()
	count := 0
	for path, item := range doc.Paths {
		var shared []json.RawMessage
		if raw, ok := item["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				t.Fatal(err)
			}
		}
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var o docOperation
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatal(err)
			}
			for _, p := range shared {
				var one struct {
					Ref  string `json:"$ref"`
					Name string `json:"name"`
					In   string `json:"in"`
				}
				if err := json.Unmarshal(p, &one); err != nil {
					t.Fatal(err)
				}
				o.Parameters = append(o.Parameters, one)
			}
			count++
			where := strings.ToUpper(method) + " " + path + " (" + o.OperationID + ")"
			r := []rune(o.OperationID)
			r[0] = unicode.ToUpper(r[0])
			name := string(r)
			m, ok := c.MethodByName(name)
			if !ok {
				t.Errorf("%s: the client has no method %s", where, name)
				continue
			}
			// func(*Client, context.Context[, <Name>Request]) (T, *Response, error)
			ft := m.Type
			if ft.NumOut() != 3 || ft.Out(1) != reflect.TypeFor[*client.Response]() || ft.Out(2) != reflect.TypeFor[error]() {
				t.Errorf("%s: %s returns %v", where, name, ft)
				continue
			}
			var fields map[string]bool
			if ft.NumIn() == 3 {
				req := ft.In(2)
				if req.Name() != name+"Request" || req.Kind() != reflect.Struct {
					t.Errorf("%s: %s takes a %v", where, name, req)
					continue
				}
				fields = map[string]bool{}
				for f := range req.Fields() {
					fields[f.Tag.Get("param")] = true
				}
			}
			for _, p := range o.Parameters {
				if p.Ref != "" {
					ref := doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
					p.Name, p.In = ref.Name, ref.In
				}
				if !fields[p.In+","+p.Name] {
					t.Errorf("%s: %sRequest has no field for the %s parameter %s", where, name, p.In, p.Name)
				}
			}
			if o.RequestBody != nil && !fields["body"] {
				// Only a body that is always {} needs no field.
				var empty struct {
					Schema struct {
						Ref        string         `json:"$ref"`
						Type       string         `json:"type"`
						Properties map[string]any `json:"properties"`
					} `json:"schema"`
				}
				raw, ok := o.RequestBody.Content["application/json"]
				if !ok || json.Unmarshal(raw, &empty) != nil || empty.Schema.Ref != "" || empty.Schema.Type != "object" || len(empty.Schema.Properties) > 0 {
					t.Errorf("%s: %sRequest has no field for its body", where, name)
				}
			}
			checkResult(t, c, doc.Components.Schemas, where, name, o, ft.Out(0))
		}
	}
	if count < 89 {
		t.Fatalf("read %d operations of the document", count)
	}
}

// checkResult checks a method's result against the success answer's
// data, and that a paged list has its walker.
func checkResult(t *testing.T, c reflect.Type, schemas map[string]aliasable, where, name string, o docOperation, out reflect.Type) {
	t.Helper()
	for code, res := range o.Responses {
		if code[0] != '2' {
			continue
		}
		body, ok := res.Content["application/json"]
		if !ok {
			if out != reflect.TypeFor[[]byte]() {
				t.Errorf("%s: an answer that is not JSON read as %v", where, out)
			}
			continue
		}
		data, ok := body.Schema.Properties["data"]
		if !ok {
			continue
		}
		_, paged := body.Schema.Properties["page"]
		want := strings.TrimPrefix(data.Ref, "#/components/schemas/")
		got := out
		if data.Items != nil {
			want = strings.TrimPrefix(data.Items.Ref, "#/components/schemas/")
			if paged {
				f, ok := out.FieldByName("Data")
				if !ok {
					t.Errorf("%s: a page read as %v", where, out)
					continue
				}
				got = f.Type
			}
			if got.Kind() != reflect.Slice {
				t.Errorf("%s: a list read as %v", where, out)
				continue
			}
			got = got.Elem()
		}
		// A schema that is only an allOf of another is a Go alias of it.
		for i := 0; i < 8 && got.Name() != want; i++ {
			if s := schemas[want]; len(s.AllOf) == 1 && len(s.Properties) == 0 {
				want = strings.TrimPrefix(s.AllOf[0].Ref, "#/components/schemas/")
			}
		}
		if got.Name() != want {
			t.Errorf("%s: data of %s read as %v", where, want, got)
		}
		if paged {
			walker := "All" + strings.TrimPrefix(name, "List")
			w, ok := c.MethodByName(walker)
			if !ok || !strings.HasPrefix(w.Type.Out(0).String(), "iter.Seq2[") {
				t.Errorf("%s: no page walker %s", where, walker)
			}
		}
	}
}
