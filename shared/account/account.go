// Package account holds the seller account: its record, its keys in the store
// and the operations on it. A vendor has one owner; tokens issued for the
// vendor stop working when ownership moves to someone else.
package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Vendor is a seller account.
type Vendor struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	OwnerID   string    `json:"owner_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"-"`
}

// View is the public representation of a vendor.
type View struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// View returns the public fields.
func (v Vendor) View() View { return View{ID: v.ID, Name: v.Name, Slug: v.Slug} }

// Any reports whether the store holds at least one vendor.
func Any(ctx context.Context, st store.Store) (bool, error) {
	items, err := st.Query(ctx, store.Query{PK: datamodel.VendorRegistry, Limit: 1})
	if err != nil {
		return false, fmt.Errorf("vendor: any: %w", err)
	}
	return len(items) > 0, nil
}

// ValidID reports whether id can be a vendor id: 1 to 128 of A-Z, a-z,
// 0-9, ".", "_", ":" and "-". (A loop: the regexp it replaced was a
// twentieth of a cached read's CPU.)
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// Decode reads a vendor from its store item.
func Decode(it store.Item) (Vendor, error) {
	var v Vendor
	if err := json.Unmarshal(it.Data, &v); err != nil {
		return Vendor{}, fmt.Errorf("vendor: decode %s: %w", it.PK, err)
	}
	v.Version = it.Version
	return v, nil
}

func encode(v Vendor) (store.Item, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return store.Item{}, fmt.Errorf("vendor: encode: %w", err)
	}
	k := datamodel.VendorKey(v.ID)
	return store.Item{PK: k.PK, SK: k.SK, Version: v.Version, Data: b}, nil
}

// Service creates and reads vendors.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// Create makes a vendor with a fresh owner.
func (s Service) Create(ctx context.Context, name, slug string) (Vendor, error) {
	name = strings.TrimSpace(name)
	if name == "" || utf8.RuneCountInString(name) > 500 {
		return Vendor{}, errs.E(errs.CodeInvalidRequest, "name: must be 1 to 500 characters")
	}
	if len(slug) > 128 || !fields.SlugPattern.MatchString(slug) {
		return Vendor{}, errs.E(errs.CodeInvalidRequest, "slug: must be 1 to 128 lowercase letters, digits and single hyphens")
	}
	now := s.Clock.Now()
	v := Vendor{ID: ids.New("ven"), Name: name, Slug: slug, OwnerID: ids.New("usr"), CreatedAt: now, UpdatedAt: now, Version: 1}
	it, err := encode(v)
	if err != nil {
		return Vendor{}, err
	}
	reserve, _ := json.Marshal(map[string]string{"vendor_id": v.ID})
	sk := datamodel.VendorSlugKey(slug)
	err = s.Store.Transact(ctx,
		store.Put(it, store.IfAbsent()),
		store.Put(store.Item{PK: sk.PK, SK: sk.SK, Version: 1, Data: reserve}, store.IfAbsent()),
		store.Put(store.Item{PK: datamodel.VendorRegistry, SK: v.ID, Version: 1, Data: reserve}, store.IfAbsent()),
	)
	if store.IsCondition(err) {
		return Vendor{}, errs.Ef(errs.CodeConflict, "slug: %q is taken by another vendor", slug)
	}
	if err != nil {
		return Vendor{}, fmt.Errorf("vendor: create: %w", err)
	}
	return v, nil
}

// Get reads a vendor; NOT_FOUND when absent.
func (s Service) Get(ctx context.Context, id string) (Vendor, error) { return Read(ctx, s.Store, id) }

// Read reads a vendor from st: what another domain's service reads of a
// vendor (auth, issuing a token for it) without a vendor service.
func Read(ctx context.Context, st store.Store, id string) (Vendor, error) {
	if !ValidID(id) {
		return Vendor{}, errs.Absent("vendor")
	}
	it, err := st.Get(ctx, datamodel.VendorKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return Vendor{}, errs.Absent("vendor")
	}
	if err != nil {
		return Vendor{}, fmt.Errorf("vendor: get: %w", err)
	}
	return Decode(it)
}

// TransferOwner gives the vendor a new owner; tokens issued under the old
// owner stop authenticating at once.
func (s Service) TransferOwner(ctx context.Context, id, owner string) (Vendor, error) {
	v, err := s.Get(ctx, id)
	if err != nil {
		return Vendor{}, err
	}
	if owner == "" {
		owner = ids.New("usr")
	}
	prev := v.Version
	v.OwnerID, v.UpdatedAt, v.Version = owner, s.Clock.Now(), v.Version+1
	it, err := encode(v)
	if err != nil {
		return Vendor{}, err
	}
	if err := s.Store.Transact(ctx, store.Put(it, store.IfVersion(prev))); err != nil {
		if store.IsCondition(err) {
			return Vendor{}, errs.E(errs.CodeConflict, "vendor changed concurrently; retry")
		}
		return Vendor{}, fmt.Errorf("vendor: transfer: %w", err)
	}
	return v, nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
