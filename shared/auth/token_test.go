package auth_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

type fixture struct {
	svc     auth.Service
	vendors account.Service
	store   *sqlite.Store
	clock   *clock.Fake
	vendor  account.Vendor
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	c := clocktest.Fake(2027, 1, 11, 19, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	vs := account.Service{Store: st, Clock: c}
	v, err := vs.Create(context.Background(), "Acme", "acme")
	if err != nil {
		t.Fatal(err)
	}
	return fixture{svc: auth.Service{Store: st, Clock: c}, vendors: vs, store: st, clock: c, vendor: v}
}

func (f fixture) issue(t *testing.T, ttl time.Duration, scopes ...auth.Scope) auth.Issued {
	t.Helper()
	if len(scopes) == 0 {
		scopes = auth.AllScopes()
	}
	is, err := f.svc.Issue(context.Background(), f.vendor.ID, scopes, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return is
}

func wantCode(t *testing.T, err error, code errs.Code) {
	t.Helper()
	if !errs.Is(err, code) {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// TestTokensAreStoredHashed: the secret is shown once, the record keeps
// only its SHA-256.
func TestTokensAreStoredHashed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	is := f.issue(t, 0)
	m := regexp.MustCompile(`^mkpat_([A-Za-z0-9]{26})_([A-Za-z0-9]{52})$`).FindStringSubmatch(is.Token)
	if m == nil {
		t.Fatalf("token %q does not have the issued shape", is.Token)
	}
	if is.ID != "tok_"+m[1] || is.VendorID != f.vendor.ID || is.ExpiresAt != nil {
		t.Fatalf("issued %+v", is)
	}
	it, err := f.store.Get(ctx, datamodel.TokenKey(is.ID))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(it.Data), m[2]) {
		t.Fatal("the stored record contains the secret")
	}
	sum := sha256.Sum256([]byte(m[2]))
	tok, err := f.svc.Get(ctx, is.ID)
	if err != nil || tok.Hash != hex.EncodeToString(sum[:]) || tok.OwnerID != f.vendor.OwnerID {
		t.Fatalf("stored token %+v %v", tok, err)
	}
}

// TestAuthenticate: 401 for a missing, invalid, expired or revoked token,
// or one no longer owned by the vendor's owner; 404 for a vendor the token
// is not granted.
func TestAuthenticate(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	is := f.issue(t, time.Hour)
	p, err := f.svc.Authenticate(ctx, is.Token, f.vendor.ID)
	if err != nil || p.Vendor.ID != f.vendor.ID || p.Token.ID != is.ID {
		t.Fatalf("a valid token: %+v %v", p, err)
	}
	if _, err := f.svc.Authenticate(ctx, is.Token, ""); err != nil {
		t.Fatalf("a valid token without a vendor in the path: %v", err)
	}
	other, err := f.vendors.Create(ctx, "Other", "other")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{other.ID, "ven_absent", "bad/id"} {
		_, err = f.svc.Authenticate(ctx, is.Token, v)
		wantCode(t, err, errs.CodeNotFound)
	}

	// A wrong secret of the right shape, and malformed tokens.
	wrong := is.Token[:len(is.Token)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(is.Token, "a")]
	for _, raw := range []string{"", wrong, "mkpat_short_x", strings.TrimPrefix(is.Token, "mkpat_"), is.Token + "x", "mkpat_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52)} {
		_, err := f.svc.Authenticate(ctx, raw, f.vendor.ID)
		wantCode(t, err, errs.CodeUnauthenticated)
	}

	// Expiry: valid until expires_at, not at it.
	f.clock.Set(*is.ExpiresAt)
	f.clock.Advance(-time.Second)
	if _, err := f.svc.Authenticate(ctx, is.Token, f.vendor.ID); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	f.clock.Advance(time.Second)
	_, err = f.svc.Authenticate(ctx, is.Token, f.vendor.ID)
	wantCode(t, err, errs.CodeUnauthenticated)
}

// TestRevocationAndOwnership: revoking works at once and twice is harmless;
// a change of owner kills the old owner's tokens.
func TestRevocationAndOwnership(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a, b := f.issue(t, 0), f.issue(t, 0)
	tok, err := f.svc.Revoke(ctx, a.ID)
	if err != nil || tok.RevokedAt == nil {
		t.Fatalf("revoke: %+v %v", tok, err)
	}
	if again, err := f.svc.Revoke(ctx, a.ID); err != nil || !again.RevokedAt.Equal(*tok.RevokedAt) {
		t.Fatalf("revoking twice: %+v %v", again, err)
	}
	_, err = f.svc.Authenticate(ctx, a.Token, f.vendor.ID)
	wantCode(t, err, errs.CodeUnauthenticated)
	if _, err := f.svc.Authenticate(ctx, b.Token, f.vendor.ID); err != nil {
		t.Fatalf("another token after a revocation: %v", err)
	}
	if _, err := f.vendors.TransferOwner(ctx, f.vendor.ID, "usr_new"); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Authenticate(ctx, b.Token, f.vendor.ID)
	wantCode(t, err, errs.CodeUnauthenticated)
	_, err = f.svc.Recheck(ctx, b.ID)
	wantCode(t, err, errs.CodeUnauthenticated)
	c := f.issue(t, 0) // issued to the new owner
	if _, err := f.svc.Authenticate(ctx, c.Token, f.vendor.ID); err != nil {
		t.Fatalf("the new owner's token: %v", err)
	}
	_, err = f.svc.Revoke(ctx, "tok_absent")
	wantCode(t, err, errs.CodeNotFound)
}

// TestRecheck: a stored principal is checked again, scopes included.
func TestRecheck(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	is := f.issue(t, time.Hour, auth.InventoryWrite, auth.JobsWrite)
	if _, err := f.svc.Recheck(ctx, is.ID, auth.InventoryWrite, auth.JobsWrite); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Recheck(ctx, is.ID, auth.InventoryWrite, auth.ProductsWrite)
	wantCode(t, err, errs.CodeInsufficientScope)
	f.clock.Advance(2 * time.Hour)
	_, err = f.svc.Recheck(ctx, is.ID, auth.InventoryWrite)
	wantCode(t, err, errs.CodeUnauthenticated)
	_, err = f.svc.Recheck(ctx, "tok_absent")
	wantCode(t, err, errs.CodeUnauthenticated)
}

// TestIssueRules: at least one scope, a non-negative lifetime, a vendor
// that exists.
func TestIssueRules(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	_, err := f.svc.Issue(ctx, f.vendor.ID, nil, 0)
	wantCode(t, err, errs.CodeInvalidRequest)
	_, err = f.svc.Issue(ctx, f.vendor.ID, auth.AllScopes(), -time.Second)
	wantCode(t, err, errs.CodeInvalidRequest)
	_, err = f.svc.Issue(ctx, "ven_absent", auth.AllScopes(), 0)
	wantCode(t, err, errs.CodeNotFound)
	is := f.issue(t, 24*time.Hour)
	if want := f.clock.Now().Add(24 * time.Hour); is.ExpiresAt == nil || !is.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at %v, want %v", is.ExpiresAt, want)
	}
}
