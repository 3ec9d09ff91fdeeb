package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func filters(t *testing.T, patterns ...string) Filters {
	t.Helper()
	var fl []any
	for _, p := range patterns {
		fl = append(fl, map[string]any{"Pattern": p})
	}
	f, err := parseFilters(map[string]any{"Filters": fl})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFilters: Lambda's filter patterns on a stream record and on an SQS
// message with a JSON body.
func TestFilters(t *testing.T) {
	insert := doc(t, `{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"V#ven_1"},"sk":{"S":"EVT#0001"}},"NewImage":{"n":{"N":"7"}}}}`)
	modify := doc(t, `{"eventName":"MODIFY","dynamodb":{"Keys":{"pk":{"S":"V#ven_1"},"sk":{"S":"PRD#1"}}}}`)
	msg := asDoc(map[string]any{"messageId": "m1", "body": `{"kind":"delivery","attempt":3,"tags":["a","b"]}`})
	for _, c := range []struct {
		name    string
		pattern []string
		doc     map[string]any
		want    bool
	}{
		{"no filters", nil, modify, true},
		{"value", []string{`{"eventName":["INSERT"]}`}, insert, true},
		{"value, other", []string{`{"eventName":["INSERT"]}`}, modify, false},
		{"either filter", []string{`{"eventName":["REMOVE"]}`, `{"eventName":["MODIFY"]}`}, modify, true},
		{"nested prefix", []string{`{"dynamodb":{"Keys":{"sk":{"S":[{"prefix":"EVT#"}]}}}}`}, insert, true},
		{"nested prefix, other", []string{`{"dynamodb":{"Keys":{"sk":{"S":[{"prefix":"EVT#"}]}}}}`}, modify, false},
		{"exists", []string{`{"dynamodb":{"NewImage":[{"exists":true}]}}`}, insert, true},
		{"exists false", []string{`{"dynamodb":{"NewImage":[{"exists":false}]}}`}, modify, true},
		{"anything-but", []string{`{"eventName":[{"anything-but":["REMOVE","MODIFY"]}]}`}, insert, true},
		{"body field", []string{`{"body":{"kind":["delivery"]}}`}, msg, true},
		{"body numeric", []string{`{"body":{"attempt":[{"numeric":[">",2,"<=",5]}]}}`}, msg, true},
		{"body numeric, out of range", []string{`{"body":{"attempt":[{"numeric":[">",3]}]}}`}, msg, false},
		{"array value", []string{`{"body":{"tags":["b"]}}`}, msg, true},
		{"suffix and case", []string{`{"body":{"kind":[{"equals-ignore-case":"DELIVERY"}]}}`}, msg, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := filters(t, c.pattern...).Match(c.doc); got != c.want {
				t.Fatalf("match = %v, want %v", got, c.want)
			}
		})
	}
	if _, err := parseFilters(map[string]any{"Filters": []any{map[string]any{"Pattern": `{"a":[{"wildcard":"x*"}]}`}}}); err == nil || !strings.Contains(err.Error(), `operator "wildcard"`) {
		t.Fatalf("an unknown operator: %v", err)
	}
	if _, err := parseFilters(map[string]any{"Filters": []any{map[string]any{"Pattern": `{"a":"INSERT"}`}}}); err == nil {
		t.Fatal("a leaf that is not an array was accepted")
	}
}

// FuzzFilters: any pattern either fails to parse or matches without
// panicking.
func FuzzFilters(f *testing.F) {
	f.Add(`{"eventName":["INSERT"]}`, `{"eventName":"INSERT"}`)
	f.Add(`{"body":{"attempt":[{"numeric":[">",2]}]}}`, `{"body":{"attempt":3}}`)
	f.Add(`{"a":[{"anything-but":{"prefix":"x"}}]}`, `{"a":"y"}`)
	f.Fuzz(func(t *testing.T, pattern, record string) {
		fs, err := parseFilters(map[string]any{"Filters": []any{map[string]any{"Pattern": pattern}}})
		if err != nil {
			return
		}
		var d map[string]any
		if json.Unmarshal([]byte(record), &d) != nil {
			return
		}
		fs.Match(d)
	})
}
