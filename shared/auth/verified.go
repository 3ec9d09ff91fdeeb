package auth

import (
	"crypto/subtle"
	"sync"
	"time"
)

// Verified is the bounded set of tokens one process has authenticated: by
// token id, the hash of the secret that was accepted, the vendor the token
// is bound to and when it expires. An entry is added only once a request
// presenting the token was authenticated in full (the secret matched, the
// token was live and its vendor's owner its owner), so a stranger, who
// lacks every secret, can neither add to the set nor evict from it; an
// entry is dropped as soon as a check of its very secret is refused
// (revoked, expired, the vendor's owner changed).
//
// The set decides only how much a request may do beside its token's
// check, never whether it is admitted: every request still reads and
// checks its token.
type Verified struct {
	mu      sync.Mutex
	max     int
	entries map[string]verifiedToken
}

type verifiedToken struct {
	hash     string
	vendorID string
	expires  time.Time // zero: never
}

// NewVerified returns an empty set of at most n tokens.
func NewVerified(n int) *Verified {
	return &Verified{max: max(n, 1), entries: map[string]verifiedToken{}}
}

// Len is how many tokens the set holds.
func (v *Verified) Len() int {
	if v == nil {
		return 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.entries)
}

// vouches reports whether the token id with a secret hashing to secretHash
// was authenticated here, is bound to vendorID and has not expired at now.
func (v *Verified) vouches(id, secretHash, vendorID string, now time.Time) bool {
	if v == nil {
		return false
	}
	v.mu.Lock()
	e, ok := v.entries[id]
	v.mu.Unlock()
	return ok && e.vendorID == vendorID && (e.expires.IsZero() || now.Before(e.expires)) &&
		subtle.ConstantTimeCompare([]byte(secretHash), []byte(e.hash)) == 1
}

// add records a token just authenticated. A full set forgets an arbitrary
// entry first: that token's next request pays the cold path once more.
func (v *Verified) add(t Token) {
	if v == nil {
		return
	}
	e := verifiedToken{hash: t.Hash, vendorID: t.VendorID}
	if t.ExpiresAt != nil {
		e.expires = *t.ExpiresAt
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.entries[t.ID]; !ok && len(v.entries) >= v.max {
		for id := range v.entries {
			delete(v.entries, id)
			break
		}
	}
	v.entries[t.ID] = e
}

// drop forgets a token whose check was refused.
func (v *Verified) drop(id string) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.entries, id)
}
