// Package fsblob is the embedded adapter of the blob port: one file per
// object under a directory (by default the data directory's media/ folder,
// beside the embedded store), written atomically.
package fsblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moku/sellerapi/shared/blob"
)

// Store keeps objects as files under Dir. The directory is created on the
// first Put, so opening a store touches nothing.
type Store struct {
	Dir string
}

// New returns a store rooted at dir.
func New(dir string) *Store { return &Store{Dir: dir} }

var _ blob.Store = (*Store)(nil)

// contentTypes maps a file extension to the type objects of it are served
// with; a file system keeps no content type.
var contentTypes = map[string]string{".webp": "image/webp", ".json": "application/json"}

func (s *Store) path(key string) (string, error) {
	if err := blob.ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(s.Dir, filepath.FromSlash(key)), nil
}

// Put writes the object to a temporary file in the target directory,
// syncs it and renames it into place: readers see the whole object or none,
// and concurrent writers of one key (the same content) both succeed.
func (s *Store) Put(ctx context.Context, key string, data []byte, contentType string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("fsblob: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".put-*")
	if err != nil {
		return fmt.Errorf("fsblob: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("fsblob: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsblob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("fsblob: %w", err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("fsblob: %w", err)
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("fsblob: %w", err)
	}
	return nil
}

// Head describes the object.
func (s *Store) Head(ctx context.Context, key string) (blob.Info, error) {
	p, err := s.path(key)
	if err != nil {
		return blob.Info{}, err
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return blob.Info{}, blob.ErrNotFound
	}
	if err != nil {
		return blob.Info{}, fmt.Errorf("fsblob: %w", err)
	}
	return blob.Info{Size: st.Size(), ContentType: typeOf(p)}, nil
}

// Get opens the object.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Info, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, blob.Info{}, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, blob.Info{}, blob.ErrNotFound
	}
	if err != nil {
		return nil, blob.Info{}, fmt.Errorf("fsblob: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, blob.Info{}, fmt.Errorf("fsblob: %w", err)
	}
	return f, blob.Info{Size: st.Size(), ContentType: typeOf(p)}, nil
}

func typeOf(p string) string {
	if t, ok := contentTypes[filepath.Ext(p)]; ok {
		return t
	}
	return "application/octet-stream"
}
