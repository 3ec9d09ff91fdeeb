package openapi_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/openapi"
)

var update = flag.Bool("update", false, "rewrite docs/events.md's generated table from the document")

const (
	eventsDoc   = "../../docs/events.md"
	tableBegin  = "<!-- BEGIN events table: generated from shared/openapi/openapi.json by `go test ./shared/openapi -run TestEventsTable -update` -->"
	tableFinish = "<!-- END events table -->"
)

type eventSchema struct {
	Description string `json:"description"`
	Properties  struct {
		Type     struct{ Const string } `json:"type"`
		Resource struct {
			Properties map[string]struct{ Const string }
		}
		Data struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"data"`
	} `json:"properties"`
}

// TestEventsTable: docs/events.md's table of event types is rendered from
// the document's one schema per type, so the prose cannot drift from the
// schemas the responses are checked against.
func TestEventsTable(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.Raw(), &doc); err != nil {
		t.Fatal(err)
	}
	var event struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Discriminator struct {
			PropertyName string            `json:"propertyName"`
			Mapping      map[string]string `json:"mapping"`
		} `json:"discriminator"`
	}
	if err := json.Unmarshal(doc.Components.Schemas["Event"], &event); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("| type | resource | when | data |\n|---|---|---|---|\n")
	for _, o := range event.OneOf {
		name := strings.TrimPrefix(o.Ref, "#/components/schemas/")
		var s eventSchema
		if err := json.Unmarshal(doc.Components.Schemas[name], &s); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		typ := s.Properties.Type.Const
		if event.Discriminator.Mapping[typ] != o.Ref {
			t.Errorf("discriminator maps %q to %q, oneOf has %q", typ, event.Discriminator.Mapping[typ], o.Ref)
		}
		var fields []string
		for k := range s.Properties.Data.Properties {
			f := "`" + k + "`"
			if !slices.Contains(s.Properties.Data.Required, k) {
				f += " (optional)"
			}
			fields = append(fields, f)
		}
		slices.SortFunc(fields, func(a, c string) int {
			ra, rc := strings.HasSuffix(a, "(optional)"), strings.HasSuffix(c, "(optional)")
			if ra != rc {
				if ra {
					return 1
				}
				return -1
			}
			return strings.Compare(a, c)
		})
		when := strings.TrimSuffix(strings.TrimPrefix(s.Description, "Written when "), ".")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", typ, s.Properties.Resource.Properties["type"].Const, when, strings.Join(fields, ", "))
	}
	if len(event.OneOf) != len(event.Discriminator.Mapping) {
		t.Errorf("%d schemas in oneOf, %d in the discriminator", len(event.OneOf), len(event.Discriminator.Mapping))
	}
	raw, err := os.ReadFile(eventsDoc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i, j := strings.Index(text, tableBegin), strings.Index(text, tableFinish)
	if i < 0 || j < i {
		t.Fatalf("docs/events.md lacks the markers %q … %q", tableBegin, tableFinish)
	}
	want := text[:i+len(tableBegin)] + "\n" + b.String() + text[j:]
	if want == text {
		return
	}
	if *update {
		if err := os.WriteFile(eventsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatal("docs/events.md's table differs from the document's event schemas; run go test ./shared/openapi -run TestEventsTable -update")
}
