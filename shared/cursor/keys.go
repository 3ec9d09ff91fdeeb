package cursor

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// LiveKeys is how many keys check cursors: the newest, which signs, and
// the one before it, so that a cursor outlives one rotation.
const LiveKeys = 2

// MinRotationInterval is the least time between two rotations. A process
// learns of a rotation within RefreshEvery and signs with the old key
// until then; a second rotation sooner would retire what it signed.
const MinRotationInterval = time.Hour

// Keyring is the item holding the cursor keys, each sealed
// (package envelope): it is created with one key on first use, and
// Rotate adds a key and retires the oldest.
type Keyring struct {
	Store store.Store
	Box   *envelope.Box
	Clock clock.Clock
}

// Key is one cursor key as the keyring shows it: never its secret.
type Key struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"created_at"`
}

// stored is the item's document. Legacy is the one plaintext key of a
// store written before keys were sealed (issue 29); it is sealed into
// Keys the first time it is read.
type stored struct {
	Keys   []storedKey `json:"keys,omitempty"`
	Legacy []byte      `json:"Key,omitempty"`
}

type storedKey struct {
	Key
	Sealed envelope.Sealed `json:"sealed"`
}

// ring is the keyring as read: its keys in the clear, newest first, and
// the item's version.
type ring struct {
	keys    []storedKey
	secrets [][]byte
	version int64
}

func aad(id string) []byte {
	k := datamodel.CursorSigningKey()
	return []byte(k.PK + "/" + k.SK + "/" + id)
}

// newKey makes and seals a key.
func (r Keyring) newKey(ctx context.Context) (storedKey, []byte, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return storedKey{}, nil, fmt.Errorf("cursor: make key: %w", err)
	}
	now := r.Clock.Now()
	k := Key{ID: ids.Sortable("ck", now), CreatedAt: now}
	sealed, err := r.Box.Seal(ctx, secret, aad(k.ID))
	if err != nil {
		return storedKey{}, nil, fmt.Errorf("cursor: seal key: %w", err)
	}
	return storedKey{Key: k, Sealed: sealed}, secret, nil
}

// write stores keys at version, created when version is 1 and conditioned
// on the version before otherwise.
func (r Keyring) write(ctx context.Context, keys []storedKey, version int64) error {
	data, err := json.Marshal(stored{Keys: keys})
	if err != nil {
		return fmt.Errorf("cursor: encode keys: %w", err)
	}
	k := datamodel.CursorSigningKey()
	if version == 1 {
		return r.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent()))
	}
	return r.Store.Transact(ctx, store.Update(k, data, version, nil, store.IfVersion(version-1)))
}

// read reads the keyring, creating it when absent and sealing a legacy
// plaintext key; of writers racing, each agrees on whichever write won.
func (r Keyring) read(ctx context.Context) (ring, error) {
	for range 4 {
		it, err := r.Store.Get(ctx, datamodel.CursorSigningKey())
		if errors.Is(err, store.ErrNotFound) {
			k, secret, err := r.newKey(ctx)
			if err != nil {
				return ring{}, err
			}
			if err := r.write(ctx, []storedKey{k}, 1); err == nil {
				return ring{keys: []storedKey{k}, secrets: [][]byte{secret}, version: 1}, nil
			} else if !store.IsCondition(err) {
				return ring{}, fmt.Errorf("cursor: store key: %w", err)
			}
			continue
		}
		if err != nil {
			return ring{}, fmt.Errorf("cursor: load keys: %w", err)
		}
		var doc stored
		if err := json.Unmarshal(it.Data, &doc); err != nil {
			return ring{}, fmt.Errorf("cursor: stored keys are unreadable: %w", err)
		}
		if len(doc.Keys) == 0 && len(doc.Legacy) >= 32 {
			if err := r.migrate(ctx, doc.Legacy, it.Version); err != nil && !store.IsCondition(err) {
				return ring{}, err
			}
			continue
		}
		out := ring{keys: doc.Keys, version: it.Version}
		for _, k := range doc.Keys {
			secret, err := r.Box.Open(ctx, k.Sealed, aad(k.ID))
			if err != nil {
				return ring{}, fmt.Errorf("cursor: open key %s: %w", k.ID, err)
			}
			out.secrets = append(out.secrets, secret)
		}
		if len(out.secrets) == 0 {
			return ring{}, errors.New("cursor: the stored keyring holds no key")
		}
		return out, nil
	}
	return ring{}, errors.New("cursor: keys could not be loaded: the item kept changing")
}

// migrate replaces a plaintext key by the same key sealed, so that cursors
// signed before keep working. Its creation time is unknown (zero), so that
// it may be rotated away at once: it was readable in every backup.
func (r Keyring) migrate(ctx context.Context, legacy []byte, version int64) error {
	k := Key{ID: ids.Sortable("ck", r.Clock.Now())}
	sealed, err := r.Box.Seal(ctx, legacy, aad(k.ID))
	if err != nil {
		return fmt.Errorf("cursor: seal the plaintext key: %w", err)
	}
	if err := r.write(ctx, []storedKey{{Key: k, Sealed: sealed}}, version+1); err != nil {
		return fmt.Errorf("cursor: seal the plaintext key: %w", err)
	}
	return nil
}

// Codec reads the keyring (creating it on first use) and returns a codec
// of its live keys.
func (r Keyring) Codec(ctx context.Context) (Codec, error) {
	rg, err := r.read(ctx)
	if err != nil {
		return Codec{}, err
	}
	return NewCodec(rg.secrets...)
}

// Rotation is what Rotate did: the new key, and the keys live after it,
// newest first.
type Rotation struct {
	Key     Key   `json:"key"`
	Live    []Key `json:"live"`
	Retired []Key `json:"retired"`
}

// Rotate makes a new key that signs from now on; the key that signed
// until now still checks cursors, and the one before it is retired. A
// rotation within MinRotationInterval of the last one is refused
// (CONFLICT), and so is the loser of two rotations racing: each key
// written is kept until a later rotation.
func (r Keyring) Rotate(ctx context.Context) (Rotation, error) {
	for range 4 {
		rg, err := r.read(ctx)
		if err != nil {
			return Rotation{}, err
		}
		if last := rg.keys[0].CreatedAt; r.Clock.Now().Before(last.Add(MinRotationInterval)) {
			return Rotation{}, errs.Ef(errs.CodeConflict, "the cursor key was rotated at %s; rotate again from %s, when every process has signed with it for a while",
				last.Format(time.RFC3339), last.Add(MinRotationInterval).Format(time.RFC3339))
		}
		k, _, err := r.newKey(ctx)
		if err != nil {
			return Rotation{}, err
		}
		keys := append([]storedKey{k}, rg.keys...)
		var retired []storedKey
		if len(keys) > LiveKeys {
			keys, retired = keys[:LiveKeys], keys[LiveKeys:]
		}
		err = r.write(ctx, keys, rg.version+1)
		if store.IsCondition(err) {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return Rotation{}, fmt.Errorf("cursor: store rotated keys: %w", err)
		}
		return Rotation{Key: k.Key, Live: shown(keys), Retired: shown(retired)}, nil
	}
	return Rotation{}, errs.E(errs.CodeConflict, "the cursor keys kept changing during the rotation; retry")
}

func shown(keys []storedKey) []Key {
	out := make([]Key, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.Key)
	}
	return out
}

// RefreshEvery is how long a process signs with the keys it read before it
// reads them again.
const RefreshEvery = 5 * time.Minute

// missReload is the least time between two reads of the keyring caused by
// a cursor that none of the process's keys checks (a rotation this
// process has not seen yet, or a forgery).
const missReload = 10 * time.Second

// Live is a process's view of the keyring: it signs with the newest key it
// read, reads the keyring again every RefreshEvery, and at once (at most
// every ten seconds) when a well-formed cursor matches none of its keys,
// so that a cursor another process signed with a newer key is accepted.
// A failed read keeps the keys it has.
type Live struct {
	ring Keyring

	mu             sync.Mutex
	codec          Codec
	loaded, missed time.Time
}

// Live reads the keyring and returns the process's view of it.
func (r Keyring) Live(ctx context.Context) (*Live, error) {
	c, err := r.Codec(ctx)
	if err != nil {
		return nil, err
	}
	return &Live{ring: r, codec: c, loaded: r.Clock.Now()}, nil
}

// current is the codec to use, read again when it is older than
// RefreshEvery (or, with miss, than missReload since the last miss).
func (l *Live) current(ctx context.Context, miss bool) (c Codec, reread bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.ring.Clock.Now()
	stale := now.Sub(l.loaded) >= RefreshEvery
	if miss && now.Sub(l.missed) >= missReload {
		stale, l.missed = true, now
	}
	if !stale {
		return l.codec, false
	}
	if c, err := l.ring.Codec(ctx); err == nil {
		l.codec, l.loaded = c, now
		return c, true
	}
	return l.codec, false
}

// Signer signs and checks cursors: a process's Live view of the keyring,
// or Fixed keys.
type Signer interface {
	Encode(ctx context.Context, b Binding, after string) (string, error)
	Decode(ctx context.Context, b Binding, cursor string) (string, error)
}

// Fixed signs and checks cursors with keys that never change: for a
// server that only lists its routes, never serving them (infra's route
// table).
type Fixed struct{ Codec Codec }

// Encode is Codec.Encode.
func (f Fixed) Encode(_ context.Context, b Binding, after string) (string, error) {
	return f.Codec.Encode(b, after)
}

// Decode is Codec.Decode.
func (f Fixed) Decode(_ context.Context, b Binding, cursor string) (string, error) {
	return f.Codec.Decode(b, cursor)
}

// Encode makes a cursor signed with the newest key.
func (l *Live) Encode(ctx context.Context, b Binding, after string) (string, error) {
	c, _ := l.current(ctx, false)
	return c.Encode(b, after)
}

// Decode checks a cursor against the live keys (Codec.Decode).
func (l *Live) Decode(ctx context.Context, b Binding, cursor string) (string, error) {
	c, _ := l.current(ctx, false)
	after, err := c.Decode(b, cursor)
	if err == nil {
		return after, nil
	}
	if _, ok := Position(cursor); !ok {
		return "", err
	}
	if c, reread := l.current(ctx, true); reread {
		return c.Decode(b, cursor)
	}
	return "", err
}
