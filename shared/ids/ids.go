// Package ids makes the service's opaque identifiers and secrets.
//
// Random ids are 128 bits in lowercase base32 behind a short type prefix
// (ven_, tok_, req_, ...). Sortable ids put a millisecond timestamp first, like
// a ULID, so that records keyed by them list in creation order.
package ids

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"
)

// encoding is lowercase RFC 4648 base32 without padding: URL- and key-safe.
var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// sortable is base32 in ASCII order, for ids that sort by their bytes.
var sortable = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// Random returns n random bytes encoded in lowercase base32.
func Random(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics instead).
		panic(err)
	}
	return encoding.EncodeToString(b)
}

// New returns prefix_ followed by 128 random bits.
func New(prefix string) string { return prefix + "_" + Random(16) }

// Sortable returns prefix_ followed by a 48-bit millisecond timestamp and 80
// random bits, so that ids compare in creation order (to the millisecond).
func Sortable(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err)
	}
	// The "extended hex" alphabet (0-9 then a-v) is in ASCII order, so the
	// encoded ids sort exactly like the bytes.
	return prefix + "_" + sortable.EncodeToString(b[:])
}

// SortableFloor is the least id Sortable can make with prefix at t or
// later: every id made before t's millisecond sorts before it.
func SortableFloor(prefix string, t time.Time) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	return prefix + "_" + sortable.EncodeToString(b[:])
}

// Issued reports whether id has the shape of an id New or Sortable made
// with prefix: prefix_ and 26 lowercase base32 characters. Routes use it to
// answer 404 for any other path id without a read.
func Issued(prefix, id string) bool {
	suffix, ok := strings.CutPrefix(id, prefix+"_")
	if !ok || len(suffix) != 26 {
		return false
	}
	for _, r := range suffix {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

type requestIDKey struct{}

type idempotencyKeyKey struct{}

// WithIdempotencyKey returns ctx carrying the Idempotency-Key of the
// request it serves, so that the events it writes can name it.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyKey{}, key)
}

// IdempotencyKey is the Idempotency-Key of the request ctx serves; nil
// when it sent none.
func IdempotencyKey(ctx context.Context) *string {
	if k, ok := ctx.Value(idempotencyKeyKey{}).(string); ok && k != "" {
		return &k
	}
	return nil
}

// WithRequestID returns ctx carrying the id of the request it serves, so
// that records a request causes (stock effects) can name it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the id of the request ctx serves; nil for system work.
func RequestID(ctx context.Context) *string {
	if id, ok := ctx.Value(requestIDKey{}).(string); ok && id != "" {
		return &id
	}
	return nil
}
