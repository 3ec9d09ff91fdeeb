package decoded_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/decoded"
)

// TestDecodedViewAnswersOnlyForTheSameBytesAndKey: an encoded view is
// reused for the same document bytes, version and view key, and built
// again when any of them changes.
func TestDecodedViewAnswersOnlyForTheSameBytesAndKey(t *testing.T) {
	decodes, encodes := 0, 0
	decode := func(it store.Item) (doc, error) {
		decodes++
		var d doc
		err := json.Unmarshal(it.Data, &d)
		return d, err
	}
	view := func(n int) func(doc) ([]byte, error) {
		return func(d doc) ([]byte, error) {
			encodes++
			return json.Marshal(map[string]any{"name": d.Name, "n": n})
		}
	}
	c := decoded.New[doc](2)
	it := store.Item{PK: "P", SK: "S", Version: 1, Data: []byte(`{"Name":"a"}`)}
	want := func(n int, body string, wantEncodes int) {
		t.Helper()
		b, err := c.View(it, decode, n, view(n))
		if err != nil || string(b) != body || encodes != wantEncodes {
			t.Fatalf("view %d: %s %v after %d encodes, want %s after %d", n, b, err, encodes, body, wantEncodes)
		}
	}
	want(1, `{"n":1,"name":"a"}`, 1)
	want(1, `{"n":1,"name":"a"}`, 1)
	want(2, `{"n":2,"name":"a"}`, 2)
	want(1, `{"n":1,"name":"a"}`, 2)
	if decodes != 1 {
		t.Fatalf("%d decodes of one unchanged item, want 1", decodes)
	}
	// Bytes rewritten under the same version, then a new version.
	it.Data = []byte(`{"Name":"b"}`)
	want(1, `{"n":1,"name":"b"}`, 3)
	it.Version = 2
	want(1, `{"n":1,"name":"b"}`, 4)
	want(1, `{"n":1,"name":"b"}`, 4)
	// Decode sees the same entry the views hang on.
	if d, err := c.Decode(it, decode); err != nil || d.Name != "b" || decodes != 3 {
		t.Fatalf("decode beside views: %+v %v after %d decodes", d, err, decodes)
	}
	var nilCache *decoded.Cache[doc]
	if b, err := nilCache.View(it, decode, 1, view(1)); err != nil || string(b) != `{"n":1,"name":"b"}` {
		t.Fatalf("nil cache: %s %v", b, err)
	}
	if _, err := c.View(store.Item{PK: "P", SK: "bad", Data: []byte(`{`)}, decode, 1, view(1)); err == nil {
		t.Fatal("a broken document was encoded")
	}
	failing := func(doc) ([]byte, error) { return nil, errors.New("boom") }
	if _, err := c.View(it, decode, 3, failing); err == nil {
		t.Fatal("an encoding failure was not returned")
	}
	if b, err := c.View(it, decode, 3, view(3)); err != nil || string(b) != `{"n":3,"name":"b"}` {
		t.Fatalf("after a failure: %s %v", b, err)
	}
}

// TestDecodedViewsStayBounded: a document keeps a bounded number of views
// however many keys ask for one.
func TestDecodedViewsStayBounded(t *testing.T) {
	c := decoded.New[doc](1)
	decode := func(it store.Item) (doc, error) { return doc{Name: it.SK}, nil }
	it := store.Item{PK: "P", SK: "S", Version: 1, Data: []byte(`{}`)}
	for i := range 10_000 {
		b, err := c.View(it, decode, i, func(d doc) ([]byte, error) { return json.Marshal(i) })
		if err != nil || string(b) != string(must(json.Marshal(i))) {
			t.Fatalf("view %d: %s %v", i, b, err)
		}
	}
	if got := c.ViewCount(it.Key()); got > 256 {
		t.Fatalf("one document holds %d views", got)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestDecodedViewsUnderConcurrency: goroutines reading views of documents
// that change under them each get the view of the bytes they passed.
func TestDecodedViewsUnderConcurrency(t *testing.T) {
	c := decoded.New[doc](4)
	decode := func(it store.Item) (doc, error) {
		var d doc
		err := json.Unmarshal(it.Data, &d)
		return d, err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				name := strconv.Itoa((g + i) % 5)
				it := store.Item{PK: "P", SK: strconv.Itoa(i % 6), Version: int64(i % 3), Data: []byte(`{"Name":"` + name + `"}`)}
				b, err := c.View(it, decode, i%2, func(d doc) ([]byte, error) { return []byte(d.Name + "/" + strconv.Itoa(i%2)), nil })
				if want := name + "/" + strconv.Itoa(i%2); err != nil || string(b) != want {
					errs <- fmt.Errorf("view of %s: %q %v, want %q", it.Data, b, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestDecodedViewIsNotKeptForANewerDocument: a view encoded while another
// reader replaced the document's entry is answered to its caller but not
// kept for the newer bytes.
func TestDecodedViewIsNotKeptForANewerDocument(t *testing.T) {
	c := decoded.New[doc](4)
	decode := func(it store.Item) (doc, error) {
		var d doc
		err := json.Unmarshal(it.Data, &d)
		return d, err
	}
	old := store.Item{PK: "P", SK: "S", Version: 1, Data: []byte(`{"Name":"old"}`)}
	newer := store.Item{PK: "P", SK: "S", Version: 2, Data: []byte(`{"Name":"new"}`)}
	view := func(d doc) ([]byte, error) { return []byte(d.Name), nil }
	b, err := c.View(old, decode, 0, func(d doc) ([]byte, error) {
		if _, err := c.Decode(newer, decode); err != nil { // another reader, meanwhile
			return nil, err
		}
		return view(d)
	})
	if err != nil || string(b) != "old" {
		t.Fatalf("the racing view: %q %v", b, err)
	}
	if b, err := c.View(newer, decode, 0, view); err != nil || string(b) != "new" {
		t.Fatalf("the newer document answered %q %v", b, err)
	}
}
