package envelope

import (
	"bytes"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// localTag starts every data key a local source wraps, so that a key
// wrapped by KMS (or another kind of source) is refused by name.
var localTag = []byte("local1:")

// Local is the key source of a process without KMS (the embedded runner,
// the deployed shape on one machine, tests): data keys are wrapped with
// AES-256-GCM under a 32-byte master key.
type Local struct{ master cipher.AEAD }

// NewLocal returns a source whose master key is key (32 bytes).
func NewLocal(key []byte) (*Local, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, fmt.Errorf("envelope: local master key: %w", err)
	}
	return &Local{master: aead}, nil
}

// GenerateDataKey makes a random data key and wraps it.
func (l *Local) GenerateDataKey(ctx context.Context) (plain, wrapped []byte, err error) {
	plain = make([]byte, 32)
	nonce := make([]byte, l.master.NonceSize())
	if _, err := rand.Read(plain); err != nil {
		return nil, nil, err
	}
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	wrapped = append(append(bytes.Clone(localTag), nonce...), l.master.Seal(nil, nonce, plain, localTag)...)
	return plain, wrapped, nil
}

// Decrypt unwraps a data key this source's master key wrapped.
func (l *Local) Decrypt(ctx context.Context, wrapped []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(wrapped, localTag)
	n := l.master.NonceSize()
	if !ok || len(rest) < n {
		return nil, errors.New("envelope: the data key was not wrapped by a local key source")
	}
	plain, err := l.master.Open(nil, rest[:n], rest[n:], localTag)
	if err != nil {
		return nil, errors.New("envelope: the data key was wrapped under another local master key")
	}
	return plain, nil
}

// KeyFile is a local source whose master key lives in a file, created
// (mode 0600, 32 random bytes) by the first process that seals; every
// process pointed at the same file shares it. The file is read on first
// use, so a process that never seals or opens anything never touches it,
// and opening with no file fails rather than making a key that could
// open nothing.
type KeyFile struct {
	Path string

	mu  sync.Mutex
	src *Local
}

// NewKeyFile returns the source of the master key at path.
func NewKeyFile(path string) *KeyFile { return &KeyFile{Path: path} }

func (f *KeyFile) local(create bool) (*Local, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src != nil {
		return f.src, nil
	}
	var key []byte
	var err error
	if create {
		key, err = readOrCreate(f.Path)
	} else if key, err = os.ReadFile(f.Path); err != nil {
		err = fmt.Errorf("envelope: the local master key the value was sealed under: %w", err)
	}
	if err != nil {
		return nil, err
	}
	src, err := NewLocal(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	f.src = src
	return src, nil
}

// readOrCreate reads the key file, or creates it when absent; of two
// processes creating it at once, the one that loses reads the winner's.
func readOrCreate(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("envelope: read local master key: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("envelope: local master key: %w", err)
	}
	key = make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	// Written under another name and linked into place, so that a reader
	// never sees a partial file and a second creator fails to link.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".master-key-")
	if err != nil {
		return nil, fmt.Errorf("envelope: local master key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("envelope: write local master key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("envelope: write local master key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return readOrCreate(path)
		}
		return nil, fmt.Errorf("envelope: local master key: %w", err)
	}
	return key, nil
}

// GenerateDataKey makes a data key wrapped under the file's master key.
func (f *KeyFile) GenerateDataKey(ctx context.Context) (plain, wrapped []byte, err error) {
	l, err := f.local(true)
	if err != nil {
		return nil, nil, err
	}
	return l.GenerateDataKey(ctx)
}

// Decrypt unwraps a data key wrapped under the file's master key.
func (f *KeyFile) Decrypt(ctx context.Context, wrapped []byte) ([]byte, error) {
	l, err := f.local(false)
	if err != nil {
		return nil, err
	}
	return l.Decrypt(ctx, wrapped)
}
