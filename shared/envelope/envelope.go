// Package envelope keeps secrets encrypted at rest: each value is sealed
// with AES-256-GCM under a data key, and the stored value carries that data
// key wrapped by a key source (KMS in a deployed stage, a local key file
// otherwise). A process makes one data key, on its first seal, and unwraps
// each wrapped key it meets once, keeping the result in memory: a secret
// costs one call to the key source per execution environment, not one per
// read. Plaintext data keys and secrets are never logged or stored.
package envelope

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
)

// Source makes data keys and unwraps them.
type Source interface {
	// GenerateDataKey returns a new 32-byte data key in the clear and
	// wrapped.
	GenerateDataKey(ctx context.Context) (plain, wrapped []byte, err error)
	// Decrypt unwraps a data key GenerateDataKey wrapped.
	Decrypt(ctx context.Context, wrapped []byte) ([]byte, error)
}

// Sealed is a value as it is stored: the wrapped data key, the nonce and
// the AES-GCM ciphertext (with its tag).
type Sealed struct {
	Key   []byte `json:"key"`
	Nonce []byte `json:"nonce"`
	Data  []byte `json:"data"`
}

// maxKeys bounds the unwrapped data keys a Box keeps: every execution
// environment that wrote a secret wrapped a key of its own.
const maxKeys = 1024

// Box seals and opens values with data keys from one source. It is safe
// for concurrent use; make one per process (New).
type Box struct {
	src Source

	mu   sync.Mutex
	own  *dataKey
	keys map[string]cipher.AEAD
}

type dataKey struct {
	wrapped []byte
	aead    cipher.AEAD
}

// New returns a box over src.
func New(src Source) *Box { return &Box{src: src, keys: map[string]cipher.AEAD{}} }

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("envelope: data key of %d bytes, want 32", len(key))
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("envelope: %w", err)
	}
	return cipher.NewGCM(b)
}

// Seal encrypts plain, binding it to aad (what the value belongs to, e.g.
// its item's key): opening it with other aad fails.
func (b *Box) Seal(ctx context.Context, plain, aad []byte) (Sealed, error) {
	k, err := b.ownKey(ctx)
	if err != nil {
		return Sealed{}, err
	}
	nonce := make([]byte, k.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return Sealed{}, fmt.Errorf("envelope: nonce: %w", err)
	}
	return Sealed{Key: k.wrapped, Nonce: nonce, Data: k.aead.Seal(nil, nonce, plain, aad)}, nil
}

// ownKey is this process's data key, made on first use. A failure is not
// kept: the next seal asks the source again.
func (b *Box) ownKey(ctx context.Context) (*dataKey, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.own != nil {
		return b.own, nil
	}
	plain, wrapped, err := b.src.GenerateDataKey(ctx)
	if err != nil {
		return nil, fmt.Errorf("envelope: generate data key: %w", err)
	}
	aead, err := newAEAD(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	b.own = &dataKey{wrapped: wrapped, aead: aead}
	b.keys[string(wrapped)] = aead
	return b.own, nil
}

// ErrOpen is a sealed value that does not open: altered, bound to other
// aad, or wrapped by another key.
var ErrOpen = errors.New("envelope: sealed value does not open")

// Open decrypts s, which must have been sealed with aad.
func (b *Box) Open(ctx context.Context, s Sealed, aad []byte) ([]byte, error) {
	aead, err := b.unwrapped(ctx, s.Key)
	if err != nil {
		return nil, err
	}
	if len(s.Nonce) != aead.NonceSize() {
		return nil, ErrOpen
	}
	plain, err := aead.Open(nil, s.Nonce, s.Data, aad)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// unwrapped is the cipher of a wrapped data key, unwrapped once. The lock
// is not held while the source is asked, so that one slow unwrap does not
// hold up opens under keys already known; two opens of a new key may both
// ask, and agree.
func (b *Box) unwrapped(ctx context.Context, wrapped []byte) (cipher.AEAD, error) {
	if len(wrapped) == 0 {
		return nil, ErrOpen
	}
	b.mu.Lock()
	aead, ok := b.keys[string(wrapped)]
	b.mu.Unlock()
	if ok {
		return aead, nil
	}
	plain, err := b.src.Decrypt(ctx, wrapped)
	if err != nil {
		return nil, fmt.Errorf("envelope: unwrap data key: %w", err)
	}
	aead, err = newAEAD(plain)
	clear(plain)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if len(b.keys) >= maxKeys {
		clear(b.keys)
		if b.own != nil {
			b.keys[string(b.own.wrapped)] = b.own.aead
		}
	}
	b.keys[string(wrapped)] = aead
	b.mu.Unlock()
	return aead, nil
}
