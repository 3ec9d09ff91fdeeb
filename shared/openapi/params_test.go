package openapi_test

import (
	"reflect"
	"testing"

	"github.com/moku/sellerapi/shared/openapi"
)

// TestParametersGenerated fails when params.gen.go no longer says what
// openapi.json does of the operations' parameters: run go generate in
// shared/openapi after changing the document.
func TestParametersGenerated(t *testing.T) {
	want, err := openapi.ParseParameters(openapi.Raw())
	if err != nil {
		t.Fatal(err)
	}
	if got := openapi.Parameters(); !reflect.DeepEqual(got, want) {
		for op, ps := range want {
			if !reflect.DeepEqual(got[op], ps) {
				t.Errorf("%s: generated %+v, the document says %+v", op, got[op], ps)
			}
		}
		t.Fatal("params.gen.go is stale: run go generate ./shared/openapi")
	}
	if len(want) < 60 {
		t.Fatalf("only %d operations with parameters", len(want))
	}
}

// TestParseParametersRefusesUncheckedKeywords: a parameter schema keyword
// the service does not enforce fails the table rather than being dropped.
func TestParseParametersRefusesUncheckedKeywords(t *testing.T) {
	doc := `{"paths":{"/x":{"get":{"operationId":"x","parameters":[{"name":"q","in":"query","schema":{"type":"string","format":"uuid"}}]}}}}`
	if _, err := openapi.ParseParameters([]byte(doc)); err == nil {
		t.Fatal("format accepted")
	}
	doc = `{"paths":{"/x":{"get":{"operationId":"x","parameters":[{"$ref":"#/components/parameters/Nope"}]}}}}`
	if _, err := openapi.ParseParameters([]byte(doc)); err == nil {
		t.Fatal("unresolved $ref accepted")
	}
}
