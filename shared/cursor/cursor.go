// Package cursor makes the opaque page cursors of list operations. A cursor
// carries the sort key to continue after and an HMAC that binds it to the
// token, resource, vendor and filters that produced it, so a cursor that was
// altered or is used in another context is refused.
package cursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
)

// MaxLen is the longest cursor the contract allows.
const MaxLen = 1024

// Binding is the context a cursor is valid in.
type Binding struct {
	Resource string
	VendorID string
	TokenID  string
	// Filters is a canonical rendering of the list's filters.
	Filters string
}

// Codec signs cursors with its newest key and checks them with any of
// its keys (the keyring's live keys, newest first).
type Codec struct{ keys [][]byte }

// NewCodec returns a codec for keys, newest first (each at least 32
// bytes).
func NewCodec(keys ...[]byte) (Codec, error) {
	if len(keys) == 0 {
		return Codec{}, errors.New("cursor: no key")
	}
	for _, k := range keys {
		if len(k) < 32 {
			return Codec{}, errors.New("cursor: key shorter than 32 bytes")
		}
	}
	return Codec{keys: keys}, nil
}

// Keys is how many keys check cursors.
func (c Codec) Keys() int { return len(c.keys) }

func mac(key []byte, b Binding, after string) []byte {
	m := hmac.New(sha256.New, key)
	for _, part := range []string{"v1", b.Resource, b.VendorID, b.TokenID, b.Filters, after} {
		fmt.Fprintf(m, "%d:%s;", len(part), part)
	}
	return m.Sum(nil)[:16]
}

var enc = base64.RawURLEncoding

// Encode makes the cursor that continues after the sort key after.
func (c Codec) Encode(b Binding, after string) (string, error) {
	s := enc.EncodeToString([]byte(after)) + "." + enc.EncodeToString(mac(c.keys[0], b, after))
	if len(s) > MaxLen {
		return "", fmt.Errorf("cursor: %d characters exceed %d", len(s), MaxLen)
	}
	return s, nil
}

// Decode checks a cursor against its binding and returns the sort key to
// continue after. Every failure is 400 INVALID_CURSOR.
func (c Codec) Decode(b Binding, cursor string) (string, error) {
	invalid := errs.E(errs.CodeInvalidCursor, "page_after: the cursor is malformed, altered, or from another list")
	after, sig, ok := split(cursor)
	if !ok || !c.signed(b, after, sig) {
		return "", invalid
	}
	return string(after), nil
}

// signed reports whether sig is the MAC of after under one of the keys.
func (c Codec) signed(b Binding, after, sig []byte) bool {
	for _, k := range c.keys {
		if hmac.Equal(sig, mac(k, b, string(after))) {
			return true
		}
	}
	return false
}

// Position is the sort key a well-formed cursor names, unchecked: a list
// route uses it to start its page query before the request, and with it
// the cursor, is checked (Decode), never to answer with.
func Position(cursor string) (string, bool) {
	after, _, ok := split(cursor)
	return string(after), ok
}

// split takes a cursor apart into its sort key and its MAC.
func split(cursor string) (after, sig []byte, ok bool) {
	if cursor == "" || len(cursor) > MaxLen {
		return nil, nil, false
	}
	p, m, ok := strings.Cut(cursor, ".")
	if !ok {
		return nil, nil, false
	}
	after, err1 := enc.DecodeString(p)
	sig, err2 := enc.DecodeString(m)
	if err1 != nil || err2 != nil || len(after) == 0 {
		return nil, nil, false
	}
	return after, sig, true
}
