// Package cursor makes the opaque page cursors of list operations. A cursor
// carries the sort key to continue after and an HMAC that binds it to the
// token, resource, vendor and filters that produced it, so a cursor that was
// altered or is used in another context is refused.
package cursor

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
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

// Codec signs and checks cursors with one key.
type Codec struct{ key []byte }

// NewCodec returns a codec for key (at least 32 bytes).
func NewCodec(key []byte) (Codec, error) {
	if len(key) < 32 {
		return Codec{}, errors.New("cursor: key shorter than 32 bytes")
	}
	return Codec{key: key}, nil
}

func (c Codec) mac(b Binding, after string) []byte {
	m := hmac.New(sha256.New, c.key)
	for _, part := range []string{"v1", b.Resource, b.VendorID, b.TokenID, b.Filters, after} {
		fmt.Fprintf(m, "%d:%s;", len(part), part)
	}
	return m.Sum(nil)[:16]
}

var enc = base64.RawURLEncoding

// Encode makes the cursor that continues after the sort key after.
func (c Codec) Encode(b Binding, after string) (string, error) {
	s := enc.EncodeToString([]byte(after)) + "." + enc.EncodeToString(c.mac(b, after))
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
	if !ok || !hmac.Equal(sig, c.mac(b, string(after))) {
		return "", invalid
	}
	return string(after), nil
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

// LoadKey returns the store's cursor key, creating it on first use. Two
// processes racing to create it agree on whichever write won.
func LoadKey(ctx context.Context, s store.Store) ([]byte, error) {
	for attempt := 0; attempt < 2; attempt++ {
		keyItem := datamodel.CursorSigningKey()
		it, err := s.Get(ctx, keyItem)
		if err == nil {
			var v struct{ Key []byte }
			if err := json.Unmarshal(it.Data, &v); err != nil || len(v.Key) < 32 {
				return nil, fmt.Errorf("cursor: stored key is unreadable: %v", err)
			}
			return v.Key, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("cursor: load key: %w", err)
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("cursor: make key: %w", err)
		}
		data, _ := json.Marshal(struct{ Key []byte }{key})
		err = s.Transact(ctx, store.Put(store.Item{PK: keyItem.PK, SK: keyItem.SK, Version: 1, Data: data}, store.IfAbsent()))
		if err == nil {
			return key, nil
		}
		if !store.IsCondition(err) {
			return nil, fmt.Errorf("cursor: store key: %w", err)
		}
	}
	return nil, errors.New("cursor: key could not be loaded")
}
