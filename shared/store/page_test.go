package store_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestPageWalksAFilteredPrefixOnce walks every third record in pages of
// several sizes: each kept record comes exactly once, in order, no page is
// empty while more follow, and the last page says there is no more.
func TestPageWalksAFilteredPrefixOnce(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(t.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ops []store.Op
	for i := 0; i < 40; i++ {
		ops = append(ops, store.Put(store.Item{PK: "V", SK: fmt.Sprintf("REC#%02d", i), Version: 1, Data: []byte(strconv.Itoa(i))}, store.Cond{}))
	}
	ops = append(ops, store.Put(store.Item{PK: "V", SK: "ZZZ", Version: 1, Data: []byte("99")}, store.Cond{}))
	if err := s.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	decode := func(it store.Item) (int, error) { return strconv.Atoi(string(it.Data)) }
	keep := func(n int) bool { return n%3 == 0 }
	for _, limit := range []int{1, 2, 5, 14, 50} {
		var got []int
		after := ""
		for pages := 0; ; pages++ {
			page, last, more, err := store.Page(ctx, s, store.Query{PK: "V", Prefix: "REC#", After: after}, limit, decode, keep)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > limit || (more && len(page) == 0) || pages > 40 {
				t.Fatalf("limit %d: bad page %v more=%v", limit, page, more)
			}
			got = append(got, page...)
			if !more {
				break
			}
			after = last
		}
		if len(got) != 14 || got[0] != 0 || got[13] != 39 {
			t.Fatalf("limit %d: walked %v", limit, got)
		}
	}
}
