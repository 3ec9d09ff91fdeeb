// Package auth holds personal access tokens and the principal a request acts
// as: how tokens are issued, stored (only as SHA-256 hashes), revoked and
// checked, and which scopes they carry. It does not speak HTTP.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/decoded"
)

// tokenPrefix starts every personal access token, so that secret scanners
// can recognise a leaked one.
const tokenPrefix = "mkpat_"

// Token is the stored record of a personal access token; it never holds the
// secret itself.
type Token struct {
	ID        string     `json:"id"`
	VendorID  string     `json:"vendor_id"`
	OwnerID   string     `json:"owner_id"`
	Scopes    []Scope    `json:"scopes"`
	Hash      string     `json:"hash"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	Version   int64      `json:"-"`
}

// Issued is what issuing returns: the only time the secret is shown.
type Issued struct {
	ID        string     `json:"id"`
	Token     string     `json:"token"`
	VendorID  string     `json:"vendor_id"`
	Scopes    []Scope    `json:"scopes"`
	ExpiresAt *time.Time `json:"expires_at"`
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// parse splits a raw token into its record id and secret.
func parse(raw string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(raw, tokenPrefix)
	if !ok {
		return "", "", false
	}
	idPart, secret, ok := strings.Cut(rest, "_")
	if !ok || len(idPart) != 26 || len(secret) != 52 {
		return "", "", false
	}
	return "tok_" + idPart, secret, true
}

// Has reports whether the token carries scope.
func (t Token) Has(s Scope) bool { return slices.Contains(t.Scopes, s) }

// Principal is who a request acts as: a token and the vendor it is bound to.
type Principal struct {
	Token  Token
	Vendor account.Vendor
}

// Service issues, revokes and checks tokens.
type Service struct {
	Store store.Store
	Clock clock.Clock
	// Decoded, when set, keeps the tokens and vendors that requests
	// presented decoded between requests; every request still reads them
	// (decoded.Cache answers only for the bytes just read).
	Decoded *Decoded
	// Verified, when set, is the process's set of tokens it authenticated
	// (see Vouched): a successful authentication adds the token, a refusal
	// of its secret drops it.
	Verified *Verified
}

// Decoded holds a process's decoded tokens and vendors.
type Decoded struct {
	tokens  *decoded.Cache[Token]
	vendors *decoded.Cache[account.Vendor]
}

// NewDecoded returns caches of up to n tokens and n vendors.
func NewDecoded(n int) *Decoded {
	return &Decoded{tokens: decoded.New[Token](n), vendors: decoded.New[account.Vendor](n)}
}

func (d *Decoded) token(it store.Item) (Token, error) {
	if d == nil {
		return decodeToken(it)
	}
	return d.tokens.Decode(it, decodeToken)
}

func (d *Decoded) vendor(it store.Item) (account.Vendor, error) {
	if d == nil {
		return account.Decode(it)
	}
	return d.vendors.Decode(it, account.Decode)
}

// VendorView is the JSON of the view of the vendor stored as it, kept
// encoded beside its decoding (decoded.Cache.View: it answers only for
// the item's very bytes). The bytes are shared and must not be modified.
func (d *Decoded) VendorView(it store.Item) ([]byte, error) {
	var vendors *decoded.Cache[account.Vendor]
	if d != nil {
		vendors = d.vendors
	}
	return vendors.View(it, account.Decode, vendorView{}, func(v account.Vendor) ([]byte, error) { return json.Marshal(v.View()) })
}

// vendorView names a vendor's view among the encodings kept beside it.
type vendorView struct{}

// Issue creates a token for the vendor's current owner. ttl zero means the
// token does not expire.
func (s Service) Issue(ctx context.Context, vendorID string, scopes []Scope, ttl time.Duration) (Issued, error) {
	if len(scopes) == 0 {
		return Issued{}, errs.E(errs.CodeInvalidRequest, "scopes: at least one scope is required")
	}
	if ttl < 0 {
		return Issued{}, errs.E(errs.CodeInvalidRequest, "expires_in: must be positive")
	}
	v, err := account.Read(ctx, s.Store, vendorID)
	if err != nil {
		return Issued{}, err
	}
	now := s.Clock.Now()
	idPart, secret := ids.Random(16), ids.Random(32)
	t := Token{ID: "tok_" + idPart, VendorID: v.ID, OwnerID: v.OwnerID, Scopes: scopes, Hash: hash(secret), CreatedAt: now, Version: 1}
	if ttl > 0 {
		exp := now.Add(ttl)
		t.ExpiresAt = &exp
	}
	if err := s.put(ctx, t, store.IfAbsent()); err != nil {
		return Issued{}, err
	}
	return Issued{ID: t.ID, Token: tokenPrefix + idPart + "_" + secret, VendorID: v.ID, Scopes: scopes, ExpiresAt: t.ExpiresAt}, nil
}

func (s Service) put(ctx context.Context, t Token, c store.Cond) error {
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("auth: encode token: %w", err)
	}
	k := datamodel.TokenKey(t.ID)
	if err := s.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: t.Version, Data: b}, c)); err != nil {
		if store.IsCondition(err) {
			return errs.E(errs.CodeConflict, "token changed concurrently; retry")
		}
		return fmt.Errorf("auth: write token: %w", err)
	}
	return nil
}

// Get reads a token record.
func (s Service) Get(ctx context.Context, id string) (Token, error) {
	it, err := s.Store.Get(ctx, datamodel.TokenKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Token{}, errs.Absent("token")
	}
	if err != nil {
		return Token{}, fmt.Errorf("auth: get token: %w", err)
	}
	return decodeToken(it)
}

// Revoke revokes a token at once; revoking twice is harmless.
func (s Service) Revoke(ctx context.Context, id string) (Token, error) {
	t, err := s.Get(ctx, id)
	if err != nil {
		return Token{}, err
	}
	if t.RevokedAt != nil {
		return t, nil
	}
	now := s.Clock.Now()
	prev := t.Version
	t.RevokedAt, t.Version = &now, t.Version+1
	return t, s.put(ctx, t, store.IfVersion(prev))
}

func decodeToken(it store.Item) (Token, error) {
	var t Token
	if err := json.Unmarshal(it.Data, &t); err != nil {
		return Token{}, fmt.Errorf("auth: decode token: %w", err)
	}
	t.Version = it.Version
	return t, nil
}

// Unauthenticated is the 401 every credential failure answers with; the
// detail does not say which check failed, so a caller cannot probe tokens.
func unauthenticated() error {
	return errs.E(errs.CodeUnauthenticated, "The access token is missing, invalid, expired or revoked.")
}

// Authenticate checks a bearer token and, when the request names a vendor,
// that the token is granted that vendor. The token and the named vendor are
// read in one round trip. A store failure fails closed (503).
func (s Service) Authenticate(ctx context.Context, raw, pathVendorID string) (Principal, error) {
	p, _, err := s.AuthenticateWith(ctx, raw, pathVendorID, nil)
	return p, err
}

// TokenKey is the key of the record a raw bearer token names, when it is
// shaped like a token at all.
func TokenKey(raw string) (store.Key, bool) {
	id, _, ok := parse(raw)
	if !ok {
		return store.Key{}, false
	}
	return datamodel.TokenKey(id), true
}

// Vouched reports whether raw is a token this process has authenticated
// before (Service.Verified), with this very secret, bound to vendorID and
// not expired: the only bearer for which a request may spend vendorID's
// rate window, and read its partition, beside the token's check
// (AuthenticateWith) instead of after it (Check, then Grant). It reads
// nothing; without a Verified set it is always false.
func (s Service) Vouched(raw, vendorID string) bool {
	id, secret, ok := parse(raw)
	return ok && s.Verified.vouches(id, hash(secret), vendorID, s.Clock.Now())
}

// Check reads the token raw names, and nothing else, and checks its
// secret, revocation and expiry. A bearer of any shape that is not a live
// token is refused (401) having read at most that one item, which lies in
// the token's own partition, never a vendor's. Grant finishes the
// authentication.
func (s Service) Check(ctx context.Context, raw string) (Token, error) {
	id, secret, ok := parse(raw)
	if !ok {
		return Token{}, unauthenticated()
	}
	it, err := s.Store.Get(ctx, datamodel.TokenKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Token{}, unauthenticated()
	}
	if err != nil {
		return Token{}, errs.Unavailablef(err, "credentials could not be checked")
	}
	t, err := s.withSecret(it, secret)
	if err != nil {
		return Token{}, err
	}
	if !s.live(t) {
		s.Verified.drop(t.ID)
		return Token{}, unauthenticated()
	}
	return t, nil
}

// Grant finishes authenticating a token Check passed: it reads the
// token's vendor and checks that the vendor's owner is still the token's.
// When the path names the token's own vendor, the keys of also are read in
// the same round trip and returned as AuthenticateWith returns them (the
// vendor's item last); a path naming another vendor is 404, and also is
// then not read.
func (s Service) Grant(ctx context.Context, t Token, pathVendorID string, also []store.Key) (Principal, []store.Item, error) {
	if pathVendorID != t.VendorID {
		p, err := s.verify(ctx, t, nil)
		if err != nil {
			return Principal{}, nil, err
		}
		s.Verified.add(t)
		if pathVendorID != "" {
			return Principal{}, nil, errs.Absent("vendor")
		}
		return p, nil, nil
	}
	keys := append(append(make([]store.Key, 0, len(also)+1), also...), datamodel.VendorKey(t.VendorID))
	items, err := s.Store.GetMany(ctx, keys)
	if err != nil {
		return Principal{}, nil, errs.Unavailablef(err, "credentials could not be checked")
	}
	vItem := &items[len(also)]
	if vItem.PK == "" {
		s.Verified.drop(t.ID)
		return Principal{}, nil, unauthenticated()
	}
	p, err := s.verify(ctx, t, vItem)
	if err != nil {
		return Principal{}, nil, err
	}
	s.Verified.add(t)
	return p, items, nil
}

// AuthenticateWith is Authenticate that reads the keys of also in the same
// round trip and returns them, in order, for the request to use once it is
// admitted (absent items have a zero PK), with the vendor's item last when
// the path named one. Nothing is returned on a refusal.
func (s Service) AuthenticateWith(ctx context.Context, raw, pathVendorID string, also []store.Key) (Principal, []store.Item, error) {
	id, secret, ok := parse(raw)
	if !ok {
		return Principal{}, nil, unauthenticated()
	}
	keys := append(make([]store.Key, 0, len(also)+2), also...)
	keys = append(keys, datamodel.TokenKey(id))
	named := pathVendorID != "" && account.ValidID(pathVendorID)
	if named {
		keys = append(keys, datamodel.VendorKey(pathVendorID))
	}
	items, err := s.Store.GetMany(ctx, keys)
	if err != nil {
		return Principal{}, nil, errs.Unavailablef(err, "credentials could not be checked")
	}
	tItem := items[len(also)]
	if tItem.PK == "" {
		return Principal{}, nil, unauthenticated()
	}
	t, err := s.withSecret(tItem, secret)
	if err != nil {
		return Principal{}, nil, err
	}
	// Reuse the vendor read above when it is the token's own.
	var vItem *store.Item
	if named && items[len(also)+1].PK != "" && pathVendorID == t.VendorID {
		vItem = &items[len(also)+1]
	}
	p, err := s.verify(ctx, t, vItem)
	if err != nil {
		return Principal{}, nil, err
	}
	s.Verified.add(t)
	if pathVendorID != "" && pathVendorID != t.VendorID {
		return Principal{}, nil, errs.Absent("vendor")
	}
	out := items[:len(also)]
	if vItem != nil {
		out = append(out, *vItem)
	}
	return p, out, nil
}

// verify checks that a token is live and still owned by its vendor's owner.
// vItem is the vendor's item when the caller has it already.
// A refusal drops the token from the process's Verified set.
func (s Service) verify(ctx context.Context, t Token, vItem *store.Item) (Principal, error) {
	if !s.live(t) {
		s.Verified.drop(t.ID)
		return Principal{}, unauthenticated()
	}
	if vItem == nil {
		it, err := s.Store.Get(ctx, datamodel.VendorKey(t.VendorID))
		if errors.Is(err, store.ErrNotFound) {
			s.Verified.drop(t.ID)
			return Principal{}, unauthenticated()
		}
		if err != nil {
			return Principal{}, errs.Unavailablef(err, "credentials could not be checked")
		}
		vItem = &it
	}
	v, err := s.Decoded.vendor(*vItem)
	if err != nil {
		return Principal{}, errs.Unavailablef(err, "credentials could not be checked")
	}
	if v.OwnerID != t.OwnerID {
		s.Verified.drop(t.ID)
		return Principal{}, unauthenticated()
	}
	return Principal{Token: t, Vendor: v}, nil
}

// withSecret decodes a token's item and checks the presented secret
// against its hash, in constant time.
func (s Service) withSecret(it store.Item, secret string) (Token, error) {
	t, err := s.Decoded.token(it)
	if err != nil {
		return Token{}, errs.Unavailablef(err, "credentials could not be checked")
	}
	if subtle.ConstantTimeCompare([]byte(hash(secret)), []byte(t.Hash)) != 1 {
		return Token{}, unauthenticated()
	}
	return t, nil
}

// live reports whether a token is neither revoked nor expired.
func (s Service) live(t Token) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || s.Clock.Now().Before(*t.ExpiresAt))
}

// RecheckFor is Recheck for a job of vendorID: the token must also still
// be granted that vendor.
func (s Service) RecheckFor(ctx context.Context, vendorID, tokenID string, scopes ...Scope) error {
	p, err := s.Recheck(ctx, tokenID, scopes...)
	if err != nil {
		return err
	}
	if p.Vendor.ID != vendorID {
		return errs.E(errs.CodeUnauthenticated, "the credential is no longer granted this vendor")
	}
	return nil
}

// Recheck verifies again that a stored principal's token is still valid,
// unexpired, unrevoked, carries scopes and is owned by the vendor's owner;
// background jobs call it before each effect they make on a caller's behalf.
func (s Service) Recheck(ctx context.Context, tokenID string, scopes ...Scope) (Principal, error) {
	t, err := store.Read(ctx, s.Store, datamodel.TokenKey(tokenID), decodeToken, unauthenticated(), func(err error) error {
		return errs.Unavailablef(err, "credentials could not be checked")
	})
	if err != nil {
		return Principal{}, err
	}
	p, err := s.verify(ctx, t, nil)
	if err != nil {
		return Principal{}, err
	}
	for _, sc := range scopes {
		if !t.Has(sc) {
			return Principal{}, errs.Ef(errs.CodeInsufficientScope, "the token lacks scope %s", sc)
		}
	}
	return p, nil
}
