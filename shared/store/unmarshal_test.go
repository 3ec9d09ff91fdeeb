package store_test

import (
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/store"
)

type record struct {
	Name    string `json:"name"`
	Version int64  `json:"-"`
}

func version(r *record) *int64 { return &r.Version }

// TestUnmarshal: the document's fields and the item's version; a document
// that does not decode is an error naming the record and its key.
func TestUnmarshal(t *testing.T) {
	r, err := store.Unmarshal(store.Item{SK: "REC#1", Version: 7, Data: []byte(`{"name":"a"}`)}, "rec", version)
	if err != nil || r != (record{Name: "a", Version: 7}) {
		t.Fatalf("%+v, %v", r, err)
	}
	r, err = store.Unmarshal(store.Item{SK: "REC#2", Version: 7, Data: []byte(`{"name":`)}, "rec", version)
	if err == nil || !strings.HasPrefix(err.Error(), "rec: decode REC#2: ") || r != (record{}) {
		t.Fatalf("broken document: %+v, %v", r, err)
	}
}
