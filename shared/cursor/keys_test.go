package cursor

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

var start = clocktest.Date(2026, 3, 4, 10, 0, 0)

// stores runs f on the embedded store and on DynamoDB Local.
func stores(t *testing.T, f func(t *testing.T, st store.Store, c *clock.Fake)) {
	t.Run("sqlite", func(t *testing.T) {
		c := clock.NewFake(start)
		st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		f(t, st, c)
	})
	t.Run("dynamodb", func(t *testing.T) {
		c := clock.NewFake(start)
		client, table := ddbtest.NewTable(t)
		f(t, dynamodb.New(client, table, dynamodb.WithClock(c.Now)), c)
	})
}

// boxes returns a function making a box per process, all over one local
// master key (the processes of one data directory).
func boxes(t *testing.T) func() *envelope.Box {
	path := filepath.Join(t.TempDir(), "master.key")
	return func() *envelope.Box { return envelope.New(envelope.NewKeyFile(path)) }
}

var binding = Binding{Resource: "products", VendorID: "ven_1", TokenID: "tok_1"}

func encode(t *testing.T, c Codec, after string) string {
	t.Helper()
	cur, err := c.Encode(binding, after)
	if err != nil {
		t.Fatal(err)
	}
	return cur
}

func wantDecodes(t *testing.T, c Codec, cur, after string) {
	t.Helper()
	if got, err := c.Decode(binding, cur); err != nil || got != after {
		t.Fatalf("Decode = %q, %v; want %q", got, err, after)
	}
}

func wantRefused(t *testing.T, c Codec, cur string) {
	t.Helper()
	if _, err := c.Decode(binding, cur); !errs.Is(err, errs.CodeInvalidCursor) {
		t.Fatalf("Decode: %v, want INVALID_CURSOR", err)
	}
}

// rawItem is the keyring item's stored bytes.
func rawItem(t *testing.T, st store.Store) []byte {
	t.Helper()
	it, err := st.Get(context.Background(), datamodel.CursorSigningKey())
	if err != nil {
		t.Fatal(err)
	}
	return it.Data
}

// The keyring is created once, whoever asks first; every process reads the
// same key, and the item holds it sealed, never in the clear.
func TestKeyringIsSharedAndSealed(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store, c *clock.Fake) {
		ctx := context.Background()
		box := boxes(t)
		codecs := make([]Codec, 6)
		errors := make([]error, len(codecs))
		var wg sync.WaitGroup
		for i := range codecs {
			wg.Go(func() { codecs[i], errors[i] = Keyring{Store: st, Box: box(), Clock: c}.Codec(ctx) })
		}
		wg.Wait()
		cur := ""
		for i, cd := range codecs {
			if errors[i] != nil {
				t.Fatal(errors[i])
			}
			if len(cd.keys) != 1 {
				t.Fatalf("process %d reads %d keys, want 1", i, len(cd.keys))
			}
			if cur == "" {
				cur = encode(t, cd, "PRODUCT#1")
			}
			wantDecodes(t, cd, cur, "PRODUCT#1")
		}
		raw := rawItem(t, st)
		secret := codecs[0].keys[0]
		for _, form := range [][]byte{secret, []byte(base64.StdEncoding.EncodeToString(secret)), []byte(base64.RawURLEncoding.EncodeToString(secret))} {
			if bytes.Contains(raw, form) {
				t.Fatalf("the stored item holds the key in the clear: %s", raw)
			}
		}
	})
}

// A cursor outlives one rotation and is refused after the second; a
// cursor signed after a rotation is signed with the new key.
func TestRotationKeepsTwoKeysLive(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store, c *clock.Fake) {
		ctx := context.Background()
		box := boxes(t)
		ring := Keyring{Store: st, Box: box(), Clock: c}
		c0, err := ring.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old := encode(t, c0, "PRODUCT#1")

		if _, err := ring.Rotate(ctx); !errs.Is(err, errs.CodeConflict) {
			t.Fatalf("a rotation right after the key was made: %v, want CONFLICT", err)
		}
		c.Advance(MinRotationInterval)
		rot, err := Keyring{Store: st, Box: box(), Clock: c}.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rot.Live) != 2 || rot.Live[0] != rot.Key || len(rot.Retired) != 0 {
			t.Fatalf("first rotation: %+v, want the new key and the first live, none retired", rot)
		}
		c1, err := ring.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantDecodes(t, c1, old, "PRODUCT#1")
		fresh := encode(t, c1, "PRODUCT#2")
		wantRefused(t, c0, fresh) // signed with the new key

		c.Advance(MinRotationInterval)
		rot2, err := ring.Rotate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rot2.Retired) != 1 || rot2.Retired[0] != rot.Live[1] {
			t.Fatalf("second rotation retired %+v, want the first key %+v", rot2.Retired, rot.Live[1])
		}
		c2, err := ring.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, c2, old)
		wantDecodes(t, c2, fresh, "PRODUCT#2")
	})
}

// Rotations racing from several processes add one key: the first written
// wins, the others are refused, and no key is lost.
func TestRacingRotationsLoseNoKey(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store, c *clock.Fake) {
		ctx := context.Background()
		box := boxes(t)
		c0, err := Keyring{Store: st, Box: box(), Clock: c}.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old := encode(t, c0, "PRODUCT#1")
		c.Advance(MinRotationInterval)
		const n = 6
		rots := make([]Rotation, n)
		errors := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { rots[i], errors[i] = Keyring{Store: st, Box: box(), Clock: c}.Rotate(ctx) })
		}
		wg.Wait()
		var won []Rotation
		for i, err := range errors {
			switch {
			case err == nil:
				won = append(won, rots[i])
			case !errs.Is(err, errs.CodeConflict):
				t.Fatalf("rotation %d: %v", i, err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("%d rotations succeeded, want 1", len(won))
		}
		rg, err := Keyring{Store: st, Box: box(), Clock: c}.read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rg.keys) != 2 || rg.keys[0].Key != won[0].Key {
			t.Fatalf("keyring %+v, want the winner's key and the first", rg.keys)
		}
		c1, _ := NewCodec(rg.secrets...)
		wantDecodes(t, c1, old, "PRODUCT#1")
	})
}

// A store written before keys were sealed holds its key in the clear: the
// first read seals it, cursors signed with it keep working, and it can be
// rotated away at once.
func TestPlaintextKeyIsSealedOnRead(t *testing.T) {
	stores(t, func(t *testing.T, st store.Store, c *clock.Fake) {
		ctx := context.Background()
		legacy := []byte(strings.Repeat("L", 32))
		data, _ := json.Marshal(struct{ Key []byte }{legacy})
		k := datamodel.CursorSigningKey()
		if err := st.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent())); err != nil {
			t.Fatal(err)
		}
		before, _ := NewCodec(legacy)
		old := encode(t, before, "PRODUCT#1")

		ring := Keyring{Store: st, Box: boxes(t)(), Clock: c}
		cd, err := ring.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantDecodes(t, cd, old, "PRODUCT#1")
		if raw := rawItem(t, st); bytes.Contains(raw, []byte(base64.StdEncoding.EncodeToString(legacy))) || bytes.Contains(raw, legacy) {
			t.Fatalf("the key is still stored in the clear: %s", raw)
		}
		if _, err := ring.Rotate(ctx); err != nil {
			t.Fatalf("rotating a key sealed from the clear: %v", err)
		}
		cd, err = ring.Codec(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantDecodes(t, cd, old, "PRODUCT#1")
	})
}

// A process's view signs with what it read until it reads again, and
// accepts a cursor signed with a key it has not seen by reading at once.
func TestLiveFollowsRotations(t *testing.T) {
	ctx := context.Background()
	c := clock.NewFake(start)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	box := boxes(t)
	stale, err := Keyring{Store: st, Box: box(), Clock: c}.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(MinRotationInterval)
	stale.loaded = c.Now() // it read the keys just before the rotation
	if _, err := (Keyring{Store: st, Box: box(), Clock: c}).Rotate(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, err := Keyring{Store: st, Box: box(), Clock: c}.Live(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := fresh.Encode(ctx, binding, "PRODUCT#9")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := stale.Decode(ctx, binding, cur); err != nil || got != "PRODUCT#9" {
		t.Fatalf("a process that had not seen the rotation: %q, %v", got, err)
	}
	if signed, _ := stale.Encode(ctx, binding, "PRODUCT#9"); signed != cur {
		t.Fatal("after reading the rotated keys, the process does not sign with the new key")
	}
	// A forged cursor reads the keyring at most once per missReload.
	c.Advance(missReload)
	var reads int
	counting := countingStore{Store: st, gets: &reads}
	stale.ring.Store = counting
	for range 5 {
		if _, err := stale.Decode(ctx, binding, "UFJPRFVDVCM5.AAAAAAAAAAAAAAAAAAAAAA"); !errs.Is(err, errs.CodeInvalidCursor) {
			t.Fatalf("forged cursor: %v", err)
		}
	}
	if reads != 1 {
		t.Fatalf("five forged cursors read the keyring %d times, want 1", reads)
	}
	c.Advance(RefreshEvery - time.Second)
	_, _ = stale.Encode(ctx, binding, "x")
	if reads != 1 {
		t.Fatalf("the keyring was read again before RefreshEvery: %d reads", reads)
	}
	c.Advance(time.Second)
	_, _ = stale.Encode(ctx, binding, "x")
	if reads != 2 {
		t.Fatalf("the keyring was not read again after RefreshEvery: %d reads", reads)
	}
}

type countingStore struct {
	store.Store
	gets *int
}

func (s countingStore) Get(ctx context.Context, k store.Key) (store.Item, error) {
	*s.gets++
	return s.Store.Get(ctx, k)
}
