package readahead_test

import (
	"context"
	"errors"
	"testing"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/readahead"
	"github.com/moku/sellerapi/shared/store/roundtrip"
	"github.com/moku/sellerapi/shared/store/sqlite/sqlitetest"
)

// TestPendingLookupAnswersOnlyItsRange reads keys inside and outside the
// range a query started ahead covered, walking up and down, cut by its
// limit or running to the end of its prefix: inside, a key is what the
// query read or absent; outside, it is not answered.
func TestPendingLookupAnswersOnlyItsRange(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
	var ops []store.Op
	for _, sk := range []string{"A#1", "A#3", "A#5", "A#7", "B#4"} {
		ops = append(ops, store.Put(store.Item{PK: "P", SK: sk, Version: 1, Data: []byte(`{}`)}, store.IfAbsent()))
	}
	ops = append(ops, store.Put(store.Item{PK: "Q", SK: "A#4", Version: 1, Data: []byte(`{}`)}, store.IfAbsent()))
	if err := s.Transact(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	// found: read and present; absent: answered as absent; "": not answered.
	const found, absent, no = "found", "absent", ""
	for _, c := range []struct {
		name string
		q    store.Query
		want map[string]string
	}{
		{"up, cut by its limit", store.Query{PK: "P", Prefix: "A#", After: "A#1", Limit: 2},
			map[string]string{"A#1": no, "A#2": absent, "A#3": found, "A#4": absent, "A#5": found, "A#6": no, "B#4": no, "A#": no}},
		{"up, to the end", store.Query{PK: "P", Prefix: "A#", Limit: 10},
			map[string]string{"A#0": absent, "A#1": found, "A#7": found, "A#9": absent, "B#4": no}},
		{"down, cut by its limit", store.Query{PK: "P", Prefix: "A#", After: "A#7", Limit: 2, Desc: true},
			map[string]string{"A#7": no, "A#6": absent, "A#5": found, "A#4": absent, "A#3": found, "A#2": no, "A#8": no}},
		{"down, to the end", store.Query{PK: "P", Prefix: "A#", After: "A#4", Limit: 5, Desc: true},
			map[string]string{"A#3": found, "A#2": absent, "A#1": found, "A#0": absent, "A#5": no}},
	} {
		ctx, rts := roundtrip.With(ctx)
		p := readahead.Start(ctx, s, c.q)
		if !p.Answers(c.q) {
			t.Errorf("%s: does not answer its own query", c.name)
		}
		other := c.q
		other.Limit++
		if p.Answers(other) {
			t.Errorf("%s: answers another limit", c.name)
		}
		for sk, want := range c.want {
			got := no
			if it, ok := p.Lookup(store.Key{PK: "P", SK: sk}); ok {
				got = absent
				if it.PK != "" {
					got = found
				}
			}
			if got != want {
				t.Errorf("%s: %s is %q, want %q", c.name, sk, got, want)
			}
		}
		if _, ok := p.Lookup(store.Key{PK: "Q", SK: "A#4"}); ok {
			t.Errorf("%s: answers another partition", c.name)
		}
		// The query counted as one call, and a wait.
		if rts.N() != 1 || rts.Waits() != 1 {
			t.Errorf("%s: %d calls, %d waits; want 1 and 1", c.name, rts.N(), rts.Waits())
		}
	}
}

// gatedQuery is a store whose queries wait for release, or fail.
type gatedQuery struct {
	store.Store
	release chan struct{}
	err     error
}

func (g gatedQuery) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	defer roundtrip.Start(ctx)()
	<-g.release
	if g.err != nil {
		return nil, g.err
	}
	return []store.Item{{PK: q.PK, SK: q.Prefix + "1"}}, nil
}

// TestPendingOverlapsTheCallsMadeMeanwhile: a call made while a query
// started ahead is in flight costs no wait of its own, even when the
// query's goroutine has not yet begun its call; one made after it does.
func TestPendingOverlapsTheCallsMadeMeanwhile(t *testing.T) {
	ctx, rts := roundtrip.With(context.Background())
	s := gatedQuery{release: make(chan struct{})}
	p := readahead.Start(ctx, s, store.Query{PK: "P", Prefix: "A#", Limit: 2})
	roundtrip.Count(ctx) // the admission batch, meanwhile
	p.Join()
	close(s.release)
	items, err := p.Result()
	if err != nil || len(items) != 1 {
		t.Fatalf("result %v, %v", items, err)
	}
	if rts.N() != 2 || rts.Waits() != 1 {
		t.Errorf("%d calls, %d waits; want 2 and 1", rts.N(), rts.Waits())
	}
	// The caller's copy is its own.
	items[0].SK = "changed"
	if again, _ := p.Result(); again[0].SK != "A#1" {
		t.Errorf("a caller's change reached the pending result: %v", again)
	}
	roundtrip.Count(ctx)
	if rts.Waits() != 2 {
		t.Errorf("a call after the query: %d waits, want 2", rts.Waits())
	}
}

// TestPendingOverlapsACallMadeAfterItsQueryEnded: a query whose goroutine
// finishes before the caller's call beside it begins (a fast store, a
// busy scheduler) still overlaps that call until the caller joins it:
// the count is the request's shape, not the scheduler's timing.
func TestPendingOverlapsACallMadeAfterItsQueryEnded(t *testing.T) {
	ctx, rts := roundtrip.With(context.Background())
	s := gatedQuery{release: make(chan struct{})}
	close(s.release)
	p := readahead.Start(ctx, s, store.Query{PK: "P", Prefix: "A#", Limit: 2})
	if _, err := p.Result(); err != nil {
		t.Fatal(err)
	}
	roundtrip.Count(ctx) // the admission batch, after the query ended
	p.Join()
	p.Join() // again: nothing more
	if rts.N() != 2 || rts.Waits() != 1 {
		t.Errorf("%d calls, %d waits; want 2 and 1", rts.N(), rts.Waits())
	}
	roundtrip.Count(ctx)
	if rts.Waits() != 2 {
		t.Errorf("a call after the join: %d waits, want 2", rts.Waits())
	}
}

// TestPendingFailureAnswersNothingByKey: a failed query hands its error
// to the identical query, as the store would, and answers no key.
func TestPendingFailureAnswersNothingByKey(t *testing.T) {
	boom := errors.New("boom")
	s := gatedQuery{release: make(chan struct{}), err: boom}
	close(s.release)
	p := readahead.Start(context.Background(), s, store.Query{PK: "P", Prefix: "A#", Limit: 2})
	if _, err := p.Result(); !errors.Is(err, boom) {
		t.Errorf("result error %v, want %v", err, boom)
	}
	if _, ok := p.Lookup(store.Key{PK: "P", SK: "A#1"}); ok {
		t.Error("a failed query answered a key")
	}
}

// TestLookupAnswersACopy: a reader changing an item it looked up changes
// neither the query's answer nor the next lookup, as with Store.Get.
func TestLookupAnswersACopy(t *testing.T) {
	ctx := context.Background()
	s := sqlitetest.Open(t, clock.System{}.Now)
	it := store.Item{PK: "P", SK: "A#1", Version: 1, Data: []byte(`{}`), Nums: map[string]int64{"n": 1}}
	if err := s.Transact(ctx, store.Put(it, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	q := store.Query{PK: "P", Prefix: "A#", Limit: 10}
	p := readahead.Start(ctx, s, q)
	got, ok := p.Lookup(it.Key())
	if !ok || got.Nums["n"] != 1 {
		t.Fatalf("lookup %+v %v", got, ok)
	}
	got.Nums["n"] = 99
	if again, _ := p.Lookup(it.Key()); again.Nums["n"] != 1 {
		t.Errorf("a change to one lookup's item reached the next: %v", again.Nums)
	}
	if items, err := p.Result(); err != nil || len(items) != 1 || items[0].Nums["n"] != 1 {
		t.Errorf("a change to a lookup's item reached the query's answer: %+v %v", items, err)
	}
}
