package store_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite/sqlitetest"
)

// TestPageWalksAFilteredPrefixOnce walks every third record in pages of
// several sizes: each kept record comes exactly once, in order, and the
// last page says there is no more.
func TestPageWalksAFilteredPrefixOnce(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
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
			page, err := store.Page(ctx, s, store.Query{PK: "V", Prefix: "REC#", After: after}, limit, decode, keep)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > limit || pages > 40 {
				t.Fatalf("limit %d: bad page %v more=%v", limit, page.Items, page.More)
			}
			got = append(got, page.Items...)
			if !page.More {
				break
			}
			after = page.Last
		}
		if len(got) != 14 || got[0] != 0 || got[13] != 39 {
			t.Fatalf("limit %d: walked %v", limit, got)
		}
	}
}

// countingStore counts the queries a Page call sends.
type countingStore struct {
	store.Store
	queries, items int
}

func (c *countingStore) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	its, err := c.Store.Query(ctx, q)
	c.queries++
	c.items += len(its)
	return its, err
}

// TestPageScanIsBounded: a filter that matches nothing among thousands of
// records reads at most MaxScan items in a few round trips per page,
// whatever the limit, and answers an empty page with a key to go on; the
// walk still ends, and the one match at the far end is found.
func TestPageScanIsBounded(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
	const n = 2400
	for i := 0; i < n; i += store.MaxTransactOps {
		var ops []store.Op
		for j := i; j < i+store.MaxTransactOps; j++ {
			ops = append(ops, store.Put(store.Item{PK: "V", SK: fmt.Sprintf("REC#%05d", j), Version: 1, Data: []byte(strconv.Itoa(j))}, store.Cond{}))
		}
		if err := s.Transact(ctx, ops...); err != nil {
			t.Fatal(err)
		}
	}
	decode := func(it store.Item) (int, error) { return strconv.Atoi(string(it.Data)) }
	keep := func(v int) bool { return v == n-1 }
	for _, limit := range []int{1, 10, 100} {
		cs := &countingStore{Store: s}
		var found []int
		after := ""
		pages := 0
		for ; ; pages++ {
			before := *cs
			page, err := store.Page(ctx, cs, store.Query{PK: "V", Prefix: "REC#", After: after}, limit, decode, keep)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.items - before.items; got > store.MaxScan+limit+1 {
				t.Fatalf("limit %d: one page read %d items", limit, got)
			}
			if got := cs.queries - before.queries; got > 7 {
				t.Fatalf("limit %d: one page took %d queries", limit, got)
			}
			found = append(found, page.Items...)
			if !page.More {
				break
			}
			if page.Last <= after {
				t.Fatalf("limit %d: the key to go on did not move: %q after %q", limit, page.Last, after)
			}
			after = page.Last
		}
		if len(found) != 1 || found[0] != n-1 {
			t.Fatalf("limit %d: found %v", limit, found)
		}
		if pages < n/store.MaxScan-1 {
			t.Fatalf("limit %d: %d pages cannot have read %d items within the bound", limit, pages, n)
		}
	}
}

// TestPageUntilStopsAtItsEnd walks records oldest first up to an end that
// lies inside the prefix, with a filter: nothing at or past the end is
// returned or stepped over, and the walk resumed from the last key after
// the end has moved on finds exactly the rest.
func TestPageUntilStopsAtItsEnd(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
	var ops []store.Op
	for i := 0; i < 30; i++ {
		ops = append(ops, store.Put(store.Item{PK: "V", SK: fmt.Sprintf("REC#%02d", i), Version: 1, Data: []byte(strconv.Itoa(i))}, store.Cond{}))
	}
	if err := s.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	decode := func(it store.Item) (int, error) { return strconv.Atoi(string(it.Data)) }
	keep := func(n int) bool { return n%2 == 0 }
	walk := func(after, end string, limit int) (got []int, last string) {
		last = after
		for pages := 0; ; pages++ {
			page, err := store.PageUntil(ctx, s, store.Query{PK: "V", Prefix: "REC#", After: last}, limit, decode, keep, end)
			if err != nil || pages > 30 {
				t.Fatal(err, pages)
			}
			got = append(got, page.Items...)
			if page.Last != "" {
				last = page.Last
			}
			if !page.More {
				return got, last
			}
		}
	}
	for _, limit := range []int{1, 3, 50} {
		got, last := walk("", "REC#15", limit)
		if fmt.Sprint(got) != "[0 2 4 6 8 10 12 14]" || last != "REC#14" {
			t.Fatalf("limit %d: walked %v to %q before the end", limit, got, last)
		}
		rest, _ := walk(last, "", limit)
		if fmt.Sprint(rest) != "[16 18 20 22 24 26 28]" {
			t.Fatalf("limit %d: resumed with %v", limit, rest)
		}
	}
	desc, err := store.PageUntil(ctx, s, store.Query{PK: "V", Prefix: "REC#", Desc: true}, 50, decode, nil, "REC#27")
	if err != nil || desc.More || fmt.Sprint(desc.Items) != "[29 28]" {
		t.Fatalf("newest first to REC#27: %v more=%v err=%v", desc.Items, desc.More, err)
	}
}

// TestUnfilteredPageDecodesNoMore: without a filter, a full page costs one
// query of limit+1 and the record after it only says that more follow: it
// is not decoded, so a bad record there does not fail the page before it.
func TestUnfilteredPageDecodesNoMore(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
	if err := s.Transact(ctx,
		store.Put(store.Item{PK: "V", SK: "REC#1", Version: 1, Data: []byte("1")}, store.Cond{}),
		store.Put(store.Item{PK: "V", SK: "REC#2", Version: 1, Data: []byte("2")}, store.Cond{}),
		store.Put(store.Item{PK: "V", SK: "REC#3", Version: 1, Data: []byte("not a number")}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	decode := func(it store.Item) (int, error) { return strconv.Atoi(string(it.Data)) }
	cs := &countingStore{Store: s}
	page, err := store.Page(ctx, cs, store.Query{PK: "V", Prefix: "REC#"}, 2, decode, nil)
	if err != nil || fmt.Sprint(page.Items) != "[1 2]" || !page.More || page.Last != "REC#2" || cs.queries != 1 {
		t.Fatalf("page %+v err %v after %d queries", page, err, cs.queries)
	}
	if _, err := store.Page(ctx, s, store.Query{PK: "V", Prefix: "REC#", After: page.Last}, 2, decode, nil); err == nil {
		t.Fatal("the bad record decoded")
	}
	views := store.MapPage(page, func(n int) string { return strconv.Itoa(n * 10) })
	if fmt.Sprint(views.Items) != "[10 20]" || views.Last != page.Last || views.More != page.More {
		t.Fatalf("mapped %+v", views)
	}
}
