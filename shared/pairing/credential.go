package pairing

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// CredentialPrefix starts every discovery credential, so that the platform
// can tell it from a personal access token and secret scanners can find a
// leaked one.
const CredentialPrefix = "mkdsc_"

// codeAlphabet is Crockford's base32: no I, L, O or U to misread.
var codeAlphabet = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// Exchanged is the answer to an exchange: the only time the discovery
// credential is shown.
type Exchanged struct {
	PairingID      string    `json:"pairing_id"`
	VendorID       string    `json:"vendor_id"`
	DiscoveryToken string    `json:"discovery_token"`
	ExpiresAt      time.Time `json:"expires_at"`
}

func hash(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:])
}

// newCode returns a pairing code of 80 random bits, in four groups of four
// characters for a human to copy.
func newCode() string {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	s := codeAlphabet.EncodeToString(b)
	return s[0:4] + "-" + s[4:8] + "-" + s[8:12] + "-" + s[12:16]
}

// normalizeCode accepts a code as a human may type it: any case, with or
// without dashes and spaces, O for 0 and I or L for 1.
func normalizeCode(raw string) (string, bool) {
	r := strings.NewReplacer("-", "", " ", "", "O", "0", "I", "1", "L", "1")
	s := r.Replace(strings.ToUpper(strings.TrimSpace(raw)))
	if len(s) != 16 {
		return "", false
	}
	if _, err := codeAlphabet.DecodeString(s); err != nil {
		return "", false
	}
	return s, true
}

// decodeJSON decodes a record stored as a bare JSON document, with no
// version of its own: a code's or a credential's.
func decodeJSON[T any](it store.Item) (T, error) {
	var v T
	if err := json.Unmarshal(it.Data, &v); err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

func codeInvalid() error {
	return errs.E(errs.CodePairingCodeInvalid, "code: not a valid pairing code; ask the seller for a new one")
}

// Exchange trades a pairing code for the pairing's discovery credential.
// A code works once and only until it expires. An unknown code is looked
// up by its hash, so how long a refusal takes says nothing about how close
// a guess was; with 80 random bits and ten minutes, guessing is hopeless.
func (s Service) Exchange(ctx context.Context, raw string) (Exchanged, error) {
	norm, ok := normalizeCode(raw)
	if !ok {
		return Exchanged{}, codeInvalid()
	}
	cr, err := store.Read(ctx, s.Store, datamodel.PairingCodeKey(hash(norm)), decodeJSON[codeRecord], codeInvalid(), pairingErrors.Unavailable)
	if err != nil {
		return Exchanged{}, err
	}
	p, err := s.Get(ctx, cr.VendorID, cr.PairingID)
	if err != nil {
		return Exchanged{}, err
	}
	now := s.Clock.Now()
	switch {
	case p.Status == StatusRevoked:
		return Exchanged{}, codeInvalid()
	case p.Status != StatusPendingExchange:
		return Exchanged{}, errs.E(errs.CodePairingCodeUsed, "code: this pairing code was already exchanged; a code works once")
	case !now.Before(p.CodeExpiresAt):
		return Exchanged{}, errs.E(errs.CodePairingCodeExpired, "code: this pairing code expired; ask the seller for a new one")
	}
	secret := ids.Random(32)
	exp := now.Add(CredentialTTL)
	p.Status, p.UpdatedAt, p.Version = StatusDiscovering, now, p.Version+1
	p.Credential = &Credential{IssuedAt: now, ExpiresAt: exp}
	rec := secretRecord{VendorID: p.VendorID, Hash: hash(secret), ExpiresAt: &exp}
	if err := s.update(ctx, p, &rec, event.StorePairingExchanged, nil); err != nil {
		if store.IsCondition(err) {
			// Another exchange of the same code won the race.
			return Exchanged{}, errs.E(errs.CodePairingCodeUsed, "code: this pairing code was already exchanged; a code works once")
		}
		return Exchanged{}, errs.Unavailablef(err, "the pairing could not be stored")
	}
	suffix := strings.TrimPrefix(p.ID, "pair_")
	return Exchanged{PairingID: p.ID, VendorID: p.VendorID, DiscoveryToken: CredentialPrefix + suffix + "_" + secret, ExpiresAt: exp}, nil
}

// IsCredential reports whether a bearer value is shaped like a discovery
// credential (by its prefix), so that the platform picks the authenticator.
func IsCredential(raw string) bool { return strings.HasPrefix(raw, CredentialPrefix) }

func unauthenticated() error {
	return errs.E(errs.CodeUnauthenticated, "The access token is missing, invalid, expired or revoked.")
}

// Authenticate checks a discovery credential: its hash, its expiry and its
// revocation. Like a token check, the refusal never says which failed, and
// a store failure fails closed.
func (s Service) Authenticate(ctx context.Context, raw string) (Principal, error) {
	rest, ok := strings.CutPrefix(raw, CredentialPrefix)
	if !ok {
		return Principal{}, unauthenticated()
	}
	suffix, secret, ok := strings.Cut(rest, "_")
	if !ok || len(suffix) != 26 || len(secret) != 52 {
		return Principal{}, unauthenticated()
	}
	id := "pair_" + suffix
	rec, err := store.Read(ctx, s.Store, datamodel.PairingSecretKey(id), decodeJSON[secretRecord], unauthenticated(), func(err error) error {
		return errs.Unavailablef(err, "credentials could not be checked")
	})
	if err != nil {
		return Principal{}, err
	}
	if rec.Hash == "" || subtle.ConstantTimeCompare([]byte(hash(secret)), []byte(rec.Hash)) != 1 {
		return Principal{}, unauthenticated()
	}
	if rec.RevokedAt != nil || rec.ExpiresAt == nil || !s.Clock.Now().Before(*rec.ExpiresAt) {
		return Principal{}, unauthenticated()
	}
	return Principal{PairingID: id, VendorID: rec.VendorID}, nil
}
