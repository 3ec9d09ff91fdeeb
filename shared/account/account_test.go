package account_test

import (
	"context"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

func newService(t *testing.T) account.Service {
	t.Helper()
	c := clocktest.Fake(2027, 2, 12, 20, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return account.Service{Store: st, Clock: c}
}

// TestCreateRules: name 1..500 characters (trimmed), a slug of lowercase
// words, unique across vendors.
func TestCreateRules(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	for _, c := range []struct {
		name, slug string
		ok         bool
	}{
		{"Acme", "acme", true},
		{"  Padded  ", "padded", true},
		{strings.Repeat("é", 500), "long-name", true},
		{strings.Repeat("n", 501), "too-long", false},
		{"   ", "blank", false},
		{"Acme", "Acme", false},
		{"Acme", "acme--goods", false},
		{"Acme", "-acme", false},
		{"Acme", "", false},
		{"Acme", strings.Repeat("a", 129), false},
	} {
		v, err := s.Create(ctx, c.name, c.slug)
		if c.ok != (err == nil) {
			t.Errorf("Create(%q, %q): %v", c.name, c.slug, err)
			continue
		}
		if err != nil {
			if !errs.Is(err, errs.CodeInvalidRequest) {
				t.Errorf("Create(%q, %q): %v, want INVALID_REQUEST", c.name, c.slug, err)
			}
			continue
		}
		if v.Name != strings.TrimSpace(c.name) || v.Slug != c.slug || v.Version != 1 || !account.ValidID(v.ID) || v.OwnerID == "" {
			t.Errorf("created %+v", v)
		}
	}
	_, err := s.Create(ctx, "Another Acme", "acme")
	if !errs.Is(err, errs.CodeConflict) {
		t.Fatalf("a taken slug: %v", err)
	}
}

// TestGetAndTransfer: absent or malformed ids are 404; a transfer gives a
// new owner and moves the version.
func TestGetAndTransfer(t *testing.T) {
	ctx := context.Background()
	s := newService(t)
	v, err := s.Create(ctx, "Acme", "acme")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, v.ID)
	if err != nil || got.OwnerID != v.OwnerID || got.View() != (account.View{ID: v.ID, Name: "Acme", Slug: "acme"}) {
		t.Fatalf("get %+v %v", got, err)
	}
	for _, id := range []string{"ven_absent", "", "a/b", strings.Repeat("v", 129)} {
		if _, err := s.Get(ctx, id); !errs.Is(err, errs.CodeNotFound) {
			t.Errorf("get %q: %v", id, err)
		}
	}
	moved, err := s.TransferOwner(ctx, v.ID, "usr_next")
	if err != nil || moved.OwnerID != "usr_next" || moved.Version != 2 {
		t.Fatalf("transfer: %+v %v", moved, err)
	}
	fresh, err := s.TransferOwner(ctx, v.ID, "")
	if err != nil || fresh.OwnerID == "" || fresh.OwnerID == "usr_next" || fresh.Version != 3 {
		t.Fatalf("transfer to a fresh owner: %+v %v", fresh, err)
	}
	if _, err := s.TransferOwner(ctx, "ven_absent", ""); !errs.Is(err, errs.CodeNotFound) {
		t.Fatalf("transfer of an absent vendor: %v", err)
	}
}

// TestValidID: 1..128 letters, digits, '.', '_', ':' or '-'.
func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"ven_1": true, "a.b:c-d_e": true, strings.Repeat("v", 128): true,
		"": false, strings.Repeat("v", 129): false, "ven#1": false, "ven 1": false, "ven/1": false,
	} {
		if got := account.ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v", id, got)
		}
	}
	if datamodel.VendorPartition("ven_1") != datamodel.VendorKey("ven_1").PK {
		t.Error("a vendor's record is outside its own partition")
	}
}
