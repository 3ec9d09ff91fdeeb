package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
)

// TestHeaderKey: required where marked; 8..128 of the pattern's characters.
func TestHeaderKey(t *testing.T) {
	if _, err := idempotency.HeaderKey(nil, idempotency.ProductKeyPattern); !errs.Is(err, errs.CodeIdempotencyKeyMissing) {
		t.Errorf("missing key: %v", err)
	}
	for _, c := range []struct {
		key     string
		product bool // valid for products
		conn    bool // valid for connections
	}{
		{strings.Repeat("k", 7), false, false},
		{strings.Repeat("k", 8), true, true},
		{strings.Repeat("k", 128), true, true},
		{strings.Repeat("k", 129), false, false},
		{"order-42_ab", true, true},
		{"order.42:ab", false, true},
		{"order 42 ab", false, false},
		{"order#42ab", false, false},
	} {
		_, err := idempotency.HeaderKey([]string{c.key}, idempotency.ProductKeyPattern)
		if c.product != (err == nil) {
			t.Errorf("product key %q: %v", c.key, err)
		}
		if err != nil && !errs.Is(err, errs.CodeIdempotencyKeyInvalid) {
			t.Errorf("product key %q: %v, want IDEMPOTENCY_KEY_INVALID", c.key, err)
		}
		if _, err := idempotency.HeaderKey([]string{c.key}, idempotency.ConnectionKeyPattern); c.conn != (err == nil) {
			t.Errorf("connection key %q: %v", c.key, err)
		}
	}
}

// TestFingerprint: the same input, however formatted, has one fingerprint;
// any other operation, target or body has another.
func TestFingerprint(t *testing.T) {
	base := idempotency.Fingerprint("adjust", "inv_1", []byte(`{"target_on_hand":5,"expected_version":2}`))
	if got := idempotency.Fingerprint("adjust", "inv_1", []byte("{ \"expected_version\" : 2,\n \"target_on_hand\": 5 }")); got != base {
		t.Error("key order and whitespace changed the fingerprint")
	}
	for name, other := range map[string]string{
		"operation": idempotency.Fingerprint("create", "inv_1", []byte(`{"target_on_hand":5,"expected_version":2}`)),
		"target":    idempotency.Fingerprint("adjust", "inv_2", []byte(`{"target_on_hand":5,"expected_version":2}`)),
		"body":      idempotency.Fingerprint("adjust", "inv_1", []byte(`{"target_on_hand":6,"expected_version":2}`)),
		"raw body":  idempotency.Fingerprint("adjust", "inv_1", []byte(`not json`)),
	} {
		if other == base {
			t.Errorf("another %s, same fingerprint", name)
		}
	}
	if idempotency.Fingerprint("put", "x", []byte("abc")) == idempotency.Fingerprint("put", "x", []byte("abd")) {
		t.Error("raw bodies that differ share a fingerprint")
	}
}

type fixture struct {
	dt.Env
	keeper idempotency.Keeper
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	e := dt.New(t, 2026, 12, 10, 18, 0, 0)
	return fixture{Env: e, keeper: idempotency.Keeper{Store: e.Store, Clock: e.Clock}}
}

// counter is a mutation that adds one to a counter item and answers with
// its new value; like a real create, it conflicts once its work is done
// (the item it creates exists).
type counter struct {
	f        fixture
	name     string
	prepared int
}

func (c *counter) prepare(ctx context.Context) (idempotency.Mutation, error) {
	c.prepared++
	k := store.Key{PK: "VENDOR#ven_1", SK: "THING#" + c.name}
	return idempotency.Mutation{
		Ops:    []store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{}`)}, store.IfAbsent())},
		Status: 201, Body: map[string]string{"name": c.name},
		Explain: func(*store.ConditionError) error {
			return errs.E(errs.CodeConflict, "the thing exists")
		},
	}, nil
}

func scope(token, key string) idempotency.Scope {
	return idempotency.Scope{VendorID: "ven_1", TokenID: token, Operation: "create_thing", Key: key}
}

// TestReplayAndReuse: same key and same input returns the original result
// without doing the work again; same key and different input is 409
// IDEMPOTENCY_KEY_REUSED; the key belongs to its credential.
func TestReplayAndReuse(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	fp := idempotency.Fingerprint("create_thing", "", []byte(`{"name":"a"}`))
	c := &counter{f: f, name: "a"}
	first, err := f.keeper.Run(ctx, scope("tok_1", "key-00001"), fp, c.prepare)
	if err != nil || first.Replayed || first.Status != 201 {
		t.Fatalf("first run: %+v %v", first, err)
	}
	again, err := f.keeper.Run(ctx, scope("tok_1", "key-00001"), fp, c.prepare)
	if err != nil || !again.Replayed || again.Status != 201 || string(again.Body) != string(first.Body) {
		t.Fatalf("replay: %+v %v, want the original %s", again, err, first.Body)
	}
	var body map[string]string
	if json.Unmarshal(again.Body, &body) != nil || body["name"] != "a" {
		t.Fatalf("replayed body %s", again.Body)
	}

	other := idempotency.Fingerprint("create_thing", "", []byte(`{"name":"b"}`))
	_, err = f.keeper.Run(ctx, scope("tok_1", "key-00001"), other, (&counter{f: f, name: "b"}).prepare)
	if !errs.Is(err, errs.CodeIdempotencyKeyReused) {
		t.Fatalf("same key, other input: %v", err)
	}
	if _, err := f.Store.Get(ctx, store.Key{PK: "VENDOR#ven_1", SK: "THING#b"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a reused key did the other work: %v", err)
	}

	// Another token's key is another receipt: the work is evaluated anew
	// (here it conflicts, since the thing exists).
	_, err = f.keeper.Run(ctx, scope("tok_2", "key-00001"), fp, (&counter{f: f, name: "a"}).prepare)
	if !errs.Is(err, errs.CodeConflict) {
		t.Fatalf("same key under another token: %v", err)
	}
}

// TestFailuresLeaveNoReceipt: a rejected request changed nothing, so a
// retry with the same key re-evaluates it.
func TestFailuresLeaveNoReceipt(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	fp := idempotency.Fingerprint("op", "", []byte(`{}`))
	_, err := f.keeper.Run(ctx, scope("tok_1", "key-00002"), fp, func(context.Context) (idempotency.Mutation, error) {
		return idempotency.Mutation{}, errs.E(errs.CodeInvalidRequest, "bad")
	})
	if !errs.Is(err, errs.CodeInvalidRequest) {
		t.Fatalf("invalid input: %v", err)
	}
	c := &counter{f: f, name: "c"}
	res, err := f.keeper.Run(ctx, scope("tok_1", "key-00002"), fp, c.prepare)
	if err != nil || res.Replayed {
		t.Fatalf("retry after a rejection: %+v %v", res, err)
	}
}

// TestReceiptRetention: an exact replay answers for at least 30 days.
func TestReceiptRetention(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	fp := idempotency.Fingerprint("op", "", []byte(`{"name":"d"}`))
	c := &counter{f: f, name: "d"}
	if _, err := f.keeper.Run(ctx, scope("tok_1", "key-00003"), fp, c.prepare); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(30*24*time.Hour + time.Hour)
	res, err := f.keeper.Run(ctx, scope("tok_1", "key-00003"), fp, c.prepare)
	if err != nil || !res.Replayed {
		t.Fatalf("replay after 30 days: %+v %v", res, err)
	}
	if idempotency.Retention < 30*24*time.Hour {
		t.Fatalf("Retention %v is below the contract's 30 days", idempotency.Retention)
	}
}

// TestRetryOnLostRace: a conflict marked Retry prepares again; one that
// keeps losing ends after MaxAttempts with its explanation.
func TestRetryOnLostRace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	k := store.Key{PK: "VENDOR#ven_1", SK: "COUNTER"}
	if err := f.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{}`)}, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	attempts := 0
	res, err := f.keeper.Run(ctx, scope("tok_1", "key-00004"), "fp", func(ctx context.Context) (idempotency.Mutation, error) {
		attempts++
		it, err := f.Store.Get(ctx, k)
		if err != nil {
			return idempotency.Mutation{}, err
		}
		if attempts < 3 { // a concurrent writer moves the version after our read
			if err := f.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: it.Version + 1, Data: []byte(`{}`)}, store.IfVersion(it.Version))); err != nil {
				return idempotency.Mutation{}, err
			}
		}
		return idempotency.Mutation{
			Ops:    []store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: it.Version + 1, Data: []byte(`{"mine":true}`)}, store.IfVersion(it.Version))},
			Status: 200, Body: map[string]int{"attempt": attempts},
			Explain: func(*store.ConditionError) error {
				return idempotency.Retry(errs.E(errs.CodeConflict, "lost"))
			},
		}, nil
	})
	if err != nil || attempts != 3 || res.Status != 200 {
		t.Fatalf("after two lost races: %+v %v, %d attempts", res, err, attempts)
	}

	attempts = 0
	_, err = f.keeper.Run(ctx, scope("tok_1", "key-00005"), "fp", func(context.Context) (idempotency.Mutation, error) {
		attempts++
		return idempotency.Mutation{
			Ops:    []store.Op{store.Check(store.Key{PK: "VENDOR#ven_1", SK: "ABSENT"}, store.Cond{Exists: true})},
			Status: 200, Body: nil,
			Explain: func(*store.ConditionError) error {
				return idempotency.Retry(errs.E(errs.CodeInventoryVersion, "always lost"))
			},
		}, nil
	})
	if !errs.Is(err, errs.CodeInventoryVersion) || attempts != idempotency.MaxAttempts {
		t.Fatalf("always losing: %v after %d attempts, want the explanation after %d", err, attempts, idempotency.MaxAttempts)
	}
	if !errors.Is(idempotency.Retry(errs.E(errs.CodeConflict, "x")), idempotency.ErrRetry) {
		t.Fatal("Retry does not wrap ErrRetry")
	}
}

// TestFingerprintKeepsEveryDigit: two bodies whose integers differ only
// beyond float64's 53 bits are different input (expected_version accepts
// any int64), so the same key with the second is a reuse, not a replay.
func TestFingerprintKeepsEveryDigit(t *testing.T) {
	a := idempotency.Fingerprint("adjust", "inv_1", []byte(`{"target_on_hand":1,"expected_version":9007199254740993}`))
	b := idempotency.Fingerprint("adjust", "inv_1", []byte(`{"target_on_hand":1,"expected_version":9007199254740992}`))
	if a == b {
		t.Fatal("expected_version 9007199254740993 and 9007199254740992 share a fingerprint")
	}
}

// One Idempotency-Key header, not two: two values are refused, whatever
// they are.
func TestHeaderKeyOnce(t *testing.T) {
	if _, err := idempotency.HeaderKey([]string{"key-00000001", "key-00000001"}, idempotency.ProductKeyPattern); err == nil {
		t.Error("two Idempotency-Key headers were accepted")
	}
}
