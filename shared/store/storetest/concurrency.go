package storetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

func testIncrement(t *testing.T, s store.Store, clock *Clock) {
	ctx := context.Background()
	k := store.Key{PK: "V", SK: "RATE#r#1"}
	exp := clock.Now().Add(2 * time.Minute).Unix()
	for want := int64(1); want <= 3; want++ {
		n, err := s.Increment(ctx, k, "n", 1, 3, exp)
		if err != nil || n != want {
			t.Fatalf("Increment #%d = %d, %v", want, n, err)
		}
	}
	if _, err := s.Increment(ctx, k, "n", 1, 3, exp); !store.IsCondition(err) {
		t.Fatalf("Increment past the bound = %v, want condition failure", err)
	}
	got, _ := s.Get(ctx, k)
	if got.Nums["n"] != 3 || got.ExpiresAt != exp {
		t.Fatalf("counter item = %+v", got)
	}
	// Once the window expires the counter starts over.
	clock.Advance(3 * time.Minute)
	n, err := s.Increment(ctx, k, "n", 1, 3, clock.Now().Add(2*time.Minute).Unix())
	if err != nil || n != 1 {
		t.Fatalf("Increment after expiry = %d, %v; want 1", n, err)
	}
}

func testConcurrentIncrement(t *testing.T, s store.Store, _ *Clock) {
	k := store.Key{PK: "V", SK: "RATE#w#1"}
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Increment(context.Background(), k, "n", 1, 12, 0)
			switch {
			case err == nil:
				ok.Add(1)
			case store.IsCondition(err):
				refused.Add(1)
			default:
				t.Errorf("Increment: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 12 || refused.Load() != 18 {
		t.Fatalf("%d admitted and %d refused, want 12 and 18", ok.Load(), refused.Load())
	}
}

func testConcurrentCreate(t *testing.T, s store.Store, _ *Clock) {
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := s.Transact(context.Background(),
				store.Put(item("V", "IDEM#k", 1, fmt.Sprintf(`{"i":%d}`, i)), store.IfAbsent()),
				store.Put(item("V", fmt.Sprintf("PRODUCT#%02d", i), 1, `{}`), store.IfAbsent()),
			)
			switch {
			case err == nil:
				wins.Add(1)
			case store.IsCondition(err):
			default:
				t.Errorf("Transact: %v", err)
			}
		}(i)
	}
	wg.Wait()
	got, err := s.Query(context.Background(), store.Query{PK: "V", Prefix: "PRODUCT#", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if wins.Load() != 1 || len(got) != 1 {
		t.Fatalf("%d winners and %d products, want exactly one of each", wins.Load(), len(got))
	}
}

func testConcurrentVersioned(t *testing.T, s store.Store, _ *Clock) {
	mustTx(t, s, store.Put(item("V", "ITEM", 1, `{}`), store.IfAbsent()))
	var wins atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Transact(context.Background(), store.Put(item("V", "ITEM", 2, `{}`), store.IfVersion(1)))
			if err == nil {
				wins.Add(1)
			} else if !store.IsCondition(err) {
				t.Errorf("Transact: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d updates won on one version, want 1", wins.Load())
	}
}
