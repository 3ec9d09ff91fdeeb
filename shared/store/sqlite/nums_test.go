package sqlite

import (
	"encoding/json"
	"maps"
	"testing"
)

// FuzzDecodeNums: the numeric attributes column decodes as encoding/json
// decodes it, whatever its bytes.
func FuzzDecodeNums(f *testing.F) {
	for _, s := range []string{`{}`, `{"n":1}`, `{"a":-2,"b_1":0,"c9":9223372036854775807}`, `{"a":01}`, `{"a":+1}`,
		`{"a":1,}`, `{"a":1,"a":2}`, `{"A":1}`, `{"a\u0062":1}`, `{"a":1.5}`, `{"a":1e3}`, `{ "a": 1 }`, `{"a":-}`,
		`{"a":99999999999999999999}`, `{"":1}`, `{"a"1}`, `{"a":1"b":2}`, `[1]`, `{`, `null`, `{"a":-0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := decodeNums(s)
		var want map[string]int64
		wantErr := json.Unmarshal([]byte(s), &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, encoding/json %v", s, err, wantErr)
		}
		if err == nil && !maps.Equal(got, want) {
			t.Fatalf("%q: %v, encoding/json %v", s, got, want)
		}
	})
}

// TestNumsRoundTrip: what encodeNums writes, parseNums reads itself.
func TestNumsRoundTrip(t *testing.T) {
	in := map[string]int64{"n": 1, "on_hand_3": -7, "v": 1 << 62, "z": 0}
	s, err := encodeNums(in)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := parseNums(s.(string))
	if !ok || !maps.Equal(got, in) {
		t.Fatalf("%v %v from %s", got, ok, s)
	}
}
