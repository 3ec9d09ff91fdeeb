package decoded_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/decoded"
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
	c := decoded.New[doc](2)
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
	var nilCache *decoded.Cache[doc]
	if d, err := nilCache.Decode(it, decode); err != nil || d.Name != "z" || calls != 5 {
		t.Fatalf("nil cache: %+v %v after %d decodes", d, err, calls)
	}
	failing := func(store.Item) (doc, error) { return doc{}, errors.New("boom") }
	if _, err := decoded.New[doc](2).Decode(it, failing); err == nil {
		t.Fatal("a failure was not returned")
	}
}

// TestDecodedStaysBounded: past its size, new documents evict old ones.
func TestDecodedStaysBounded(t *testing.T) {
	c := decoded.New[doc](3)
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

// TestDecodedHoldsBoundedBytes: however large the documents or however
// many views a tenant's writes leave behind, a cache holds at most 16 MiB
// of documents and views (beside the entry being added), and its count of
// bytes follows replacements and evictions.
func TestDecodedHoldsBoundedBytes(t *testing.T) {
	const limit = 16 << 20
	decode := func(it store.Item) (doc, error) { return doc{Name: string(it.Data[:1])}, nil }
	c := decoded.New[doc](4096)
	big := make([]byte, 1<<20)
	for i := range 64 {
		it := store.Item{PK: "P", SK: fmt.Sprint("S", i), Version: 1, Data: big}
		if _, err := c.Decode(it, decode); err != nil {
			t.Fatal(err)
		}
		if c.Bytes() > limit {
			t.Fatalf("after %d documents of 1 MiB the cache holds %d bytes", i+1, c.Bytes())
		}
	}
	if c.Len() < 8 || c.Len() > 16 {
		t.Fatalf("%d documents of 1 MiB held, want 8-16", c.Len())
	}

	// Views keyed by counters that keep changing: one document's views
	// start over at 256, and all of them together stay within the bound.
	c = decoded.New[doc](4096)
	view := make([]byte, 64<<10)
	encode := func(doc) ([]byte, error) { return view, nil }
	for i := range 2000 {
		it := store.Item{PK: "P", SK: fmt.Sprint("S", i%8), Version: 1, Data: []byte("d")}
		if _, err := c.View(it, decode, i, encode); err != nil {
			t.Fatal(err)
		}
		if c.Bytes() > limit+len(view) {
			t.Fatalf("after %d views of 64 KiB the cache holds %d bytes", i+1, c.Bytes())
		}
	}
	// Rewriting a document drops its views from the count.
	c = decoded.New[doc](4096)
	it := store.Item{PK: "P", SK: "S", Version: 1, Data: []byte("d")}
	c.View(it, decode, 1, encode)
	c.View(it, decode, 2, encode)
	if got, want := c.Bytes(), 1+2*len(view); got != want {
		t.Fatalf("one document with two views counts %d bytes, want %d", got, want)
	}
	it.Version, it.Data = 2, []byte("dd")
	c.Decode(it, decode)
	if got := c.Bytes(); got != 2 {
		t.Fatalf("the rewritten document counts %d bytes, want 2 (its old views gone)", got)
	}
}
