package store_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/moku/sellerapi/shared/store"
)

type doc struct{ Name string }

// TestDecodedAnswersOnlyForTheSameBytes: a cached decoding is reused for
// the same version and bytes, and never for other bytes, even under the
// same version (a document rewritten without a version bump).
func TestDecodedAnswersOnlyForTheSameBytes(t *testing.T) {
	calls := 0
	decode := func(it store.Item) (doc, error) {
		calls++
		var d doc
		err := json.Unmarshal(it.Data, &d)
		return d, err
	}
	c := store.NewDecoded[doc](2)
	it := store.Item{PK: "P", SK: "S", Version: 1, Data: []byte(`{"Name":"a"}`)}
	for range 3 {
		if d, err := c.Decode(it, decode); err != nil || d.Name != "a" {
			t.Fatalf("got %+v %v", d, err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d decodes of one unchanged item, want 1", calls)
	}
	// The caller reusing its buffer does not change what the entry holds.
	it.Data[9] = 'z'
	if d, _ := c.Decode(it, decode); d.Name != "z" || calls != 2 {
		t.Fatalf("rewritten bytes answered %+v after %d decodes", d, calls)
	}
	it.Version = 2
	if d, _ := c.Decode(it, decode); d.Name != "z" || calls != 3 {
		t.Fatalf("a new version answered from the cache (%+v, %d decodes)", d, calls)
	}
	if _, err := c.Decode(store.Item{PK: "P", SK: "bad", Data: []byte(`{`)}, decode); err == nil {
		t.Fatal("a broken document decoded")
	}
	var nilCache *store.Decoded[doc]
	if d, err := nilCache.Decode(it, decode); err != nil || d.Name != "z" || calls != 5 {
		t.Fatalf("nil cache: %+v %v after %d decodes", d, err, calls)
	}
	failing := func(store.Item) (doc, error) { return doc{}, errors.New("boom") }
	if _, err := store.NewDecoded[doc](2).Decode(it, failing); err == nil {
		t.Fatal("a failure was not returned")
	}
}

// TestDecodedStaysBounded: past its size, new documents evict old ones.
func TestDecodedStaysBounded(t *testing.T) {
	c := store.NewDecoded[doc](3)
	decode := func(it store.Item) (doc, error) { return doc{Name: it.SK}, nil }
	for i := range 100 {
		sk := string(rune('a'+i%26)) + string(rune('a'+i/26))
		if d, _ := c.Decode(store.Item{PK: "P", SK: sk, Data: []byte(sk)}, decode); d.Name != sk {
			t.Fatalf("got %q for %q", d.Name, sk)
		}
	}
	if n := c.Len(); n != 3 {
		t.Fatalf("%d entries held, at most 3", n)
	}
}
