// Package blob is the object-storage port: immutable objects under
// content-addressed keys. Adapters live in sub-packages (fsblob for the
// embedded mode, a directory beside the store; s3blob for AWS) and pass the
// contract suite in blobtest.
//
// Objects are never replaced or deleted through the port: a key names its
// content, so a second Put of a key that exists changes nothing.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// Info describes a stored object.
type Info struct {
	Size        int64
	ContentType string
}

// Store is the object-storage port.
type Store interface {
	// Put stores data under key with its content type unless an object
	// already has the key, in which case it succeeds without writing.
	Put(ctx context.Context, key string, data []byte, contentType string) error
	// Head describes the object; ErrNotFound when there is none.
	Head(ctx context.Context, key string) (Info, error)
	// Get opens the object for reading; ErrNotFound when there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
}

// ErrNotFound is returned for a key with no object.
var ErrNotFound = errors.New("blob: object not found")

var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9._-]*)*$`)

// ValidKey checks a key: lowercase path segments of letters, digits, '.',
// '_' and '-', none empty or starting with a dot, at most 256 bytes. Both
// adapters refuse other keys, so one that works embedded works on S3.
func ValidKey(key string) error {
	if len(key) > 256 || !keyPattern.MatchString(key) {
		return fmt.Errorf("blob: invalid key %q", key)
	}
	return nil
}
