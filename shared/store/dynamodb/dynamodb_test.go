package dynamodb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/roundtrip"
	"github.com/moku/sellerapi/shared/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock) store.Store {
		c, table := ddbtest.NewTable(t)
		return dynamodb.New(c, table, dynamodb.WithClock(clock.Now))
	})
}

func TestFailedTransactionIndexes(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	if err := s.Transact(ctx,
		store.Put(store.Item{PK: "P", SK: "a", Version: 1}, store.IfAbsent()),
		store.Put(store.Item{PK: "P", SK: "b", Version: 1}, store.IfAbsent()),
	); err != nil {
		t.Fatal(err)
	}
	err := s.Transact(ctx,
		store.Put(store.Item{PK: "P", SK: "a", Version: 2}, store.IfAbsent()), // fails: exists
		store.Check(store.Key{PK: "P", SK: "b"}, store.IfVersion(1)),          // holds
		store.Delete(store.Key{PK: "P", SK: "c"}, store.Cond{Exists: true}),   // fails: absent
		store.Add(store.Key{PK: "P", SK: "d"}, map[string]int64{"n": 1}, 0, store.Cond{}),
	)
	ce, ok := store.AsCondition(err)
	if !ok {
		t.Fatalf("want a condition error, got %v", err)
	}
	if len(ce.Failed) != 2 || ce.Failed[0] != 0 || ce.Failed[1] != 2 {
		t.Fatalf("failed = %v, want [0 2]", ce.Failed)
	}
	if _, err := s.Get(ctx, store.Key{PK: "P", SK: "d"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("add of a failed transaction applied: %v", err)
	}
}

// An add without a condition on an expired item starts a fresh item, inside
// a transaction as well as alone.
func TestAddOverExpiredItem(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	clock := storetest.NewClock(clocktest.Date(2026, 1, 2, 3, 4, 5))
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.Now))
	ctx := context.Background()
	exp := clock.Now().Add(time.Minute).Unix()
	for _, sk := range []string{"alone", "tx"} {
		old := store.Item{PK: "P", SK: sk, Version: 5, Data: []byte(`{}`), Nums: map[string]int64{"n": 7, "m": 1}, ExpiresAt: exp}
		if err := s.Transact(ctx, store.Put(old, store.Cond{})); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Hour)
	if err := s.Transact(ctx, store.Add(store.Key{PK: "P", SK: "alone"}, map[string]int64{"n": 1}, 0, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx,
		store.Add(store.Key{PK: "P", SK: "tx"}, map[string]int64{"n": 2}, 0, store.Cond{}),
		store.Put(store.Item{PK: "P", SK: "other"}, store.IfAbsent()),
	); err != nil {
		t.Fatal(err)
	}
	for sk, want := range map[string]int64{"alone": 1, "tx": 2} {
		got, err := s.Get(ctx, store.Key{PK: "P", SK: sk})
		if err != nil {
			t.Fatalf("%s: %v", sk, err)
		}
		if got.Version != 0 || got.Data != nil || got.ExpiresAt != 0 || len(got.Nums) != 1 || got.Nums["n"] != want {
			t.Fatalf("%s after add = %+v, want a fresh item with n=%d", sk, got, want)
		}
	}
}

func TestRoundTripMiddleware(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx, rt := roundtrip.With(context.Background())
	if _, err := s.Get(ctx, store.Key{PK: "P", SK: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	if rt.N() != 1 {
		t.Fatalf("one Get counted %d round trips, want 1", rt.N())
	}
}

// Every attempt counts, retries included: a client of a closed port with
// three attempts makes three round trips.
func TestRoundTripMiddlewareCountsRetries(t *testing.T) {
	client := ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials:  aws.AnonymousCredentials{},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = 3
			o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		}),
		APIOptions: []func(*middleware.Stack) error{dynamodb.RoundTripCounter()},
	})
	ctx, rt := roundtrip.With(context.Background())
	if _, err := dynamodb.New(client, "t", dynamodb.WithClock(clock.System{}.Now)).Get(ctx, store.Key{PK: "P", SK: "x"}); err == nil {
		t.Fatal("Get from a closed port succeeded")
	}
	if rt.N() != 3 {
		t.Fatalf("counted %d round trips for 3 attempts", rt.N())
	}
}

// An increment keeps a live counter's expiry, or its lack of one, as the
// embedded store does; only a new counter takes expiresAt.
func TestIncrementKeepsExpiry(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	k := store.Key{PK: "V", SK: "c"}
	if err := s.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Nums: map[string]int64{"n": 1}}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Increment(ctx, k, "n", 2, 10, 4102444800); err != nil || n != 3 {
		t.Fatalf("Increment = %d, %v", n, err)
	}
	if got, _ := s.Get(ctx, k); got.ExpiresAt != 0 || got.Nums["n"] != 3 {
		t.Fatalf("counter = %+v, want n=3 and no expiry", got)
	}
	if _, err := s.Increment(ctx, store.Key{PK: "V", SK: "new"}, "n", 1, 0, 0); !store.IsCondition(err) {
		t.Fatalf("Increment of a new counter below 0 = %v, want condition failure", err)
	}
}

// Query resolves an After beyond the prefix range, which DynamoDB refuses as
// a start key.
func TestQueryAfterOutsidePrefix(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	for _, sk := range []string{"A", "B#1", "B#2", "C"} {
		if err := s.Transact(ctx, store.Put(store.Item{PK: "P", SK: sk}, store.Cond{})); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		after string
		desc  bool
		want  int
	}{{"A", false, 2}, {"Z", false, 0}, {"A", true, 0}, {"Z", true, 2}, {"B#1", false, 1}, {"B#2", true, 1}} {
		got, err := s.Query(ctx, store.Query{PK: "P", Prefix: "B#", After: tc.after, Desc: tc.desc, Limit: 10})
		if err != nil || len(got) != tc.want {
			t.Errorf("after %q desc %v: %d items, %v; want %d", tc.after, tc.desc, len(got), err, tc.want)
		}
	}
}
