package auth_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// reads records the partitions a store is asked to read.
type reads struct {
	store.Store
	mu  sync.Mutex
	pks []string
}

func (r *reads) Get(ctx context.Context, k store.Key) (store.Item, error) {
	r.note(k)
	return r.Store.Get(ctx, k)
}

func (r *reads) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	r.note(keys...)
	return r.Store.GetMany(ctx, keys)
}

func (r *reads) note(keys ...store.Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		r.pks = append(r.pks, k.PK)
	}
}

func (r *reads) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pks
	r.pks = nil
	return out
}

// TestCheckReadsOnlyTheToken: whatever the bearer, Check reads at most
// the item of the token it names, never a vendor's; Grant then reads the
// token's vendor, with the keys asked for when the path names it.
func TestCheckReadsOnlyTheToken(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	rec := &reads{Store: f.store}
	svc := auth.Service{Store: rec, Clock: f.clock}
	is := f.issue(t, time.Hour)
	expired := f.issue(t, time.Minute)
	revoked := f.issue(t, 0)
	if _, err := f.svc.Revoke(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * time.Minute)
	wrong := is.Token[:len(is.Token)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(is.Token, "a")]
	for _, raw := range []string{wrong, expired.Token, revoked.Token, "mkpat_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52)} {
		_, err := svc.Check(ctx, raw)
		wantCode(t, err, errs.CodeUnauthenticated)
		if got := rec.take(); len(got) != 1 || !strings.HasPrefix(got[0], "TOKEN#") {
			t.Errorf("Check read %v; want the token's item alone", got)
		}
	}
	for _, raw := range []string{"", "garbage", is.Token + "x", "mkdsc_" + strings.Repeat("a", 26) + "_" + strings.Repeat("b", 52)} {
		_, err := svc.Check(ctx, raw)
		wantCode(t, err, errs.CodeUnauthenticated)
		if got := rec.take(); len(got) != 0 {
			t.Errorf("Check of %q read %v", raw, got)
		}
	}
	tok, err := svc.Check(ctx, is.Token)
	if err != nil || tok.ID != is.ID {
		t.Fatalf("Check of a valid token: %+v %v", tok, err)
	}
	rec.take()
	also := []store.Key{datamodel.ProductKey(f.vendor.ID, "prd_x")}
	p, items, err := svc.Grant(ctx, tok, f.vendor.ID, also)
	if err != nil || p.Vendor.ID != f.vendor.ID || len(items) != 2 || items[0].PK != "" || items[1].Key() != datamodel.VendorKey(f.vendor.ID) {
		t.Fatalf("Grant: %+v %v %v", p, items, err)
	}
	if got := rec.take(); len(got) != 2 {
		t.Errorf("Grant read %v; want the product and the vendor in one batch", got)
	}
	other, err := f.vendors.Create(ctx, "Other", "other")
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Grant(ctx, tok, other.ID, also)
	wantCode(t, err, errs.CodeNotFound)
	if got := rec.take(); len(got) != 1 || got[0] != datamodel.VendorPartition(f.vendor.ID) {
		t.Errorf("Grant for another vendor read %v; want the token's own vendor alone", got)
	}
}

// TestVouched: only a token authenticated in full, with its very secret,
// for its own vendor and before it expires, is vouched for; a refusal of
// its secret (revoked, owner changed, expired) drops it, forged bearers
// never enter, and the set is bounded.
func TestVouched(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	svc := auth.Service{Store: f.store, Clock: f.clock, Verified: auth.NewVerified(3)}
	is := f.issue(t, time.Hour)
	wrong := is.Token[:len(is.Token)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(is.Token, "a")]
	if svc.Vouched(is.Token, f.vendor.ID) {
		t.Fatal("vouched for before any authentication")
	}
	for range 10 {
		_, err := svc.Authenticate(ctx, wrong, f.vendor.ID)
		wantCode(t, err, errs.CodeUnauthenticated)
		_, err = svc.Check(ctx, wrong)
		wantCode(t, err, errs.CodeUnauthenticated)
	}
	if svc.Verified.Len() != 0 {
		t.Fatalf("forged bearers added %d entries", svc.Verified.Len())
	}
	tok, err := svc.Check(ctx, is.Token)
	if err != nil {
		t.Fatal(err)
	}
	if svc.Vouched(is.Token, f.vendor.ID) {
		t.Fatal("vouched for after Check alone, before the vendor was checked")
	}
	if _, _, err := svc.Grant(ctx, tok, f.vendor.ID, nil); err != nil {
		t.Fatal(err)
	}
	if !svc.Vouched(is.Token, f.vendor.ID) {
		t.Fatal("not vouched for after a full authentication")
	}
	for _, c := range []struct{ raw, vendor string }{{wrong, f.vendor.ID}, {is.Token, "ven_other"}, {is.Token, ""}, {"garbage", f.vendor.ID}} {
		if svc.Vouched(c.raw, c.vendor) {
			t.Errorf("vouched for %.20s… naming %q", c.raw, c.vendor)
		}
	}
	// A forged bearer with the token's id does not drop it.
	if _, err := svc.Authenticate(ctx, wrong, f.vendor.ID); err == nil || !svc.Vouched(is.Token, f.vendor.ID) {
		t.Fatalf("after a forged bearer with its id: %v, vouched %v", err, svc.Vouched(is.Token, f.vendor.ID))
	}
	// Expiry ends it without a read.
	f.clock.Set(*is.ExpiresAt)
	if svc.Vouched(is.Token, f.vendor.ID) {
		t.Error("vouched for at its expiry")
	}
	// A revocation is seen on the next authentication, which drops it.
	live := f.issue(t, 0)
	if _, err := svc.Authenticate(ctx, live.Token, f.vendor.ID); err != nil || !svc.Vouched(live.Token, f.vendor.ID) {
		t.Fatalf("a live token: %v", err)
	}
	if _, err := f.svc.Revoke(ctx, live.ID); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Authenticate(ctx, live.Token, f.vendor.ID)
	wantCode(t, err, errs.CodeUnauthenticated)
	if svc.Vouched(live.Token, f.vendor.ID) {
		t.Error("still vouched for after its revocation was refused")
	}
	// So is a change of the vendor's owner.
	owned := f.issue(t, 0)
	if _, err := svc.Authenticate(ctx, owned.Token, ""); err != nil || !svc.Vouched(owned.Token, f.vendor.ID) {
		t.Fatalf("a token authenticated without a vendor in the path: %v", err)
	}
	if _, err := f.vendors.TransferOwner(ctx, f.vendor.ID, "usr_new"); err != nil {
		t.Fatal(err)
	}
	tok, err = svc.Check(ctx, owned.Token)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = svc.Grant(ctx, tok, f.vendor.ID, nil)
	wantCode(t, err, errs.CodeUnauthenticated)
	if svc.Vouched(owned.Token, f.vendor.ID) {
		t.Error("still vouched for after its vendor changed owner")
	}
	// Bounded: four tokens authenticated, three kept.
	for range 4 {
		if _, err := svc.Authenticate(ctx, f.issue(t, 0).Token, f.vendor.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := svc.Verified.Len(); n != 3 {
		t.Fatalf("%d entries, bound 3", n)
	}
}
