package pairing

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Service runs the pairing flow.
type Service struct {
	Store       store.Store
	Clock       clock.Clock
	Connections connection.Service
}

// Principal is who a discovery request acts as: one pairing of one vendor.
type Principal struct {
	PairingID string
	VendorID  string
}

// Created is the answer to a create: the pairing and, the only time it is
// shown, its code.
type Created struct {
	View
	Code *string `json:"code"`
}

// pairingErrors is how the package's errors name its records.
var pairingErrors = errs.Record{Name: "store pairing", Unreadable: "store pairings could not be read"}

// PrepareCreate builds a new pairing with its code, and the operations that
// store it (the code only as its hash) and record its event.
func (s Service) PrepareCreate(ctx context.Context, vendorID string) (store.Prepared[Created], error) {
	now := s.Clock.Now()
	code := newCode()
	norm, _ := normalizeCode(code)
	p := Pairing{ID: ids.Sortable(IDPrefix, now), VendorID: vendorID, Status: StatusPendingExchange,
		CodeExpiresAt: now.Add(CodeTTL), CreatedAt: now, UpdatedAt: now, Version: 1}
	data, err := encode(p)
	if err != nil {
		return store.Prepared[Created]{}, err
	}
	secret, err := encode(secretRecord{VendorID: vendorID})
	if err != nil {
		return store.Prepared[Created]{}, err
	}
	cr, err := encode(codeRecord{PairingID: p.ID, VendorID: vendorID})
	if err != nil {
		return store.Prepared[Created]{}, err
	}
	k, sk, ck := datamodel.PairingKey(vendorID, p.ID), datamodel.PairingSecretKey(p.ID), datamodel.PairingCodeKey(hash(norm))
	ev, err := event.Op(event.New(now, vendorID, event.StorePairingCreated, "store_pairing", p.ID, map[string]any{"version": 1}))
	if err != nil {
		return store.Prepared[Created]{}, err
	}
	ops := []store.Op{
		store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.IfAbsent()),
		store.Put(store.Item{PK: sk.PK, SK: sk.SK, Version: 1, Data: secret}, store.IfAbsent()),
		// The code record outlives the code by a day, so that a late
		// exchange learns the code expired rather than that it never was.
		store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: 1, Data: cr, ExpiresAt: p.CodeExpiresAt.Add(24 * time.Hour).Unix()}, store.IfAbsent()),
		ev,
	}
	return store.Prepared[Created]{View: Created{View: p.View(now), Code: &code}, Ops: ops}, nil
}

// Get reads a pairing of a vendor.
func (s Service) Get(ctx context.Context, vendorID, id string) (Pairing, error) {
	if !ids.Issued(IDPrefix, id) {
		return Pairing{}, pairingErrors.NotFound()
	}
	return store.Read(ctx, s.Store, datamodel.PairingKey(vendorID, id), decode, pairingErrors.NotFound(), pairingErrors.Unavailable)
}

// View reads a pairing's view.
func (s Service) View(ctx context.Context, vendorID, id string) (View, error) {
	p, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	return p.View(s.Clock.Now()), nil
}

// Current reads the pairing of a discovery credential, as its store plugin
// is shown it (View.ForPlugin).
func (s Service) Current(ctx context.Context, pr Principal) (View, error) {
	v, err := s.View(ctx, pr.VendorID, pr.PairingID)
	if err != nil {
		return View{}, err
	}
	return v.ForPlugin(), nil
}

// List reads a page of a vendor's pairings, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.PairingPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.PairingKey(vendorID, "").PK, Prefix: datamodel.PairingPrefix, After: after}, limit, decode, nil)
	if err != nil {
		return store.PageOf[View]{}, pairingErrors.Unavailable(err)
	}
	now := s.Clock.Now()
	return store.MapPage(page, func(p Pairing) View { return p.View(now) }), nil
}

// update writes p (already moved to its next version) and the secret record
// under p's previous version, with its event.
func (s Service) update(ctx context.Context, p Pairing, secret *secretRecord, typ string, data map[string]any) error {
	now := p.UpdatedAt
	doc, err := encode(p)
	if err != nil {
		return err
	}
	k := datamodel.PairingKey(p.VendorID, p.ID)
	ops := []store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: p.Version, Data: doc}, store.IfVersion(p.Version-1))}
	if secret != nil {
		b, err := encode(*secret)
		if err != nil {
			return err
		}
		sk := datamodel.PairingSecretKey(p.ID)
		ops = append(ops, store.Put(store.Item{PK: sk.PK, SK: sk.SK, Version: p.Version, Data: b}, store.Cond{Exists: true}))
	}
	if data == nil {
		data = map[string]any{}
	}
	data["version"] = p.Version
	ev, err := event.Op(event.New(now, p.VendorID, typ, "store_pairing", p.ID, data))
	if err != nil {
		return err
	}
	return s.Store.Transact(ctx, append(ops, ev)...)
}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodePairingVersion, "store pairing", current)
}

func stateConflict(format string, args ...any) error {
	return errs.Ef(errs.CodePairingState, format, args...)
}

// Discover records the plugin's discovery data. Discovery is open from the
// exchange until the seller accepts; each report replaces the last and
// moves the version, so the seller accepts what they saw.
func (s Service) Discover(ctx context.Context, pr Principal, d Discovery) (View, error) {
	p, err := s.Get(ctx, pr.VendorID, pr.PairingID)
	if err != nil {
		return View{}, err
	}
	if p.Status != StatusDiscovering {
		return View{}, stateConflict("discovery is open only until the seller accepts; the pairing is %s", p.Status)
	}
	now := s.Clock.Now()
	d.ReceivedAt = now
	p.Discovery, p.UpdatedAt, p.Version = &d, now, p.Version+1
	if err := s.update(ctx, p, nil, event.StorePairingDiscovered, nil); err != nil {
		if store.IsCondition(err) {
			return View{}, errs.E(errs.CodeConflict, "the store pairing changed while discovery was stored; read it and retry")
		}
		return View{}, errs.Unavailablef(err, "the pairing could not be stored")
	}
	return p.View(now).ForPlugin(), nil
}

// AcceptInput is a parsed accept body.
type AcceptInput struct {
	ExpectedVersion int64
	Preset          string
	ConnectionID    string
}

// Accept records the seller's acceptance: it creates a store_plugin
// connection with the preset's roles, or replaces the roles of an existing
// one of the same store, in one transaction with the pairing's change, so
// the connection rules (authority claims, idle connection) decide.
func (s Service) Accept(ctx context.Context, vendorID, id, tokenID string, in AcceptInput) (View, error) {
	p, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	if in.ExpectedVersion != p.Version {
		return View{}, versionConflict(p.Version)
	}
	now := s.Clock.Now()
	if st := p.statusAt(now); st != StatusDiscovering {
		return View{}, stateConflict("only a pairing in discovery can be accepted; this one is %s", st)
	}
	if p.Discovery == nil {
		return View{}, stateConflict("the plugin has not posted discovery data yet; accept once it has")
	}
	roles, _ := connection.Preset(in.Preset)
	var ops []store.Op
	acc := Acceptance{Preset: in.Preset, AcceptedAt: now, TokenID: tokenID}
	if in.ConnectionID == "" {
		c, err := s.Connections.PrepareCreate(ctx, vendorID, connection.CreateInput{Provider: connection.StorePlugin,
			ExternalAccountID: p.Discovery.Store.Domain, DisplayName: p.Discovery.Store.Name, Roles: roles})
		if err != nil {
			return View{}, err
		}
		ops, acc.ConnectionID, acc.Created = c.Ops, c.View.ID, true
	} else {
		c, _, _, err := s.Connections.Get(ctx, vendorID, in.ConnectionID)
		if err != nil {
			return View{}, err
		}
		if c.Provider != connection.StorePlugin || c.ExternalAccountID != p.Discovery.Store.Domain {
			return View{}, errs.Ef(errs.CodeInvalidRequest, "connection_id: the connection is not the %s connection of %s", connection.StorePlugin, p.Discovery.Store.Domain)
		}
		r, err := s.Connections.PrepareReplaceRoles(ctx, vendorID, c.ID, connection.RolesInput{ExpectedVersion: c.Version, Roles: roles})
		if err != nil {
			return View{}, err
		}
		ops, acc.ConnectionID = r.Ops, c.ID
	}
	p.Status, p.Acceptance, p.UpdatedAt, p.Version = StatusAccepted, &acc, now, p.Version+1
	doc, err := encode(p)
	if err != nil {
		return View{}, err
	}
	k := datamodel.PairingKey(vendorID, p.ID)
	ev, err := event.Op(event.New(now, vendorID, event.StorePairingAccepted, "store_pairing", p.ID,
		map[string]any{"version": p.Version, "connection_id": acc.ConnectionID, "preset": in.Preset}))
	if err != nil {
		return View{}, err
	}
	ops = append([]store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: p.Version, Data: doc}, store.IfVersion(in.ExpectedVersion))}, append(ops, ev)...)
	if err := s.Store.Transact(ctx, ops...); err != nil {
		ce, ok := store.AsCondition(err)
		if !ok {
			return View{}, errs.Unavailablef(err, "the acceptance could not be stored")
		}
		if ce.Has(0) {
			if cur, gerr := s.Get(ctx, vendorID, id); gerr == nil && cur.Version != in.ExpectedVersion {
				return View{}, versionConflict(cur.Version)
			}
		}
		if in.ConnectionID != "" {
			return View{}, s.Connections.Explain(ctx, vendorID, in.ConnectionID, s.connectionVersion(ctx, vendorID, in.ConnectionID), err)
		}
		return View{}, errs.E(errs.CodeAuthorityConflict, "the vendor authority changed while the pairing was accepted; read it and retry")
	}
	return p.View(now), nil
}

// connectionVersion is the connection's current version, so that Explain
// reports what stopped the change other than a version the seller never set.
func (s Service) connectionVersion(ctx context.Context, vendorID, id string) int64 {
	c, _, _, err := s.Connections.Get(ctx, vendorID, id)
	if err != nil {
		return -1
	}
	return c.Version
}

// Review is the administrator's activation of an accepted pairing: only
// then may the plugin make operational writes. Reviewing an active pairing
// again changes nothing.
func (s Service) Review(ctx context.Context, id, reviewer string) (View, error) {
	if !ids.Issued(IDPrefix, id) {
		return View{}, pairingErrors.NotFound()
	}
	rec, err := store.Read(ctx, s.Store, datamodel.PairingSecretKey(id), decodeJSON[secretRecord], pairingErrors.NotFound(), pairingErrors.Unavailable)
	if err != nil {
		return View{}, err
	}
	p, err := s.Get(ctx, rec.VendorID, id)
	if err != nil {
		return View{}, err
	}
	now := s.Clock.Now()
	if p.Status == StatusActive {
		return p.View(now), nil
	}
	if p.Status != StatusAccepted {
		return View{}, stateConflict("only a pairing the seller accepted can be reviewed; this one is %s", p.statusAt(now))
	}
	if strings.TrimSpace(reviewer) == "" {
		reviewer = "admin"
	}
	p.Status, p.Review, p.UpdatedAt, p.Version = StatusActive, &Review{ReviewedAt: now, Reviewer: reviewer}, now, p.Version+1
	if err := s.update(ctx, p, nil, event.StorePairingReviewed, map[string]any{"connection_id": p.Acceptance.ConnectionID}); err != nil {
		if store.IsCondition(err) {
			return View{}, errs.E(errs.CodeConflict, "the store pairing changed while it was reviewed; retry")
		}
		return View{}, errs.Unavailablef(err, "the review could not be stored")
	}
	return p.View(now), nil
}

// Revoke ends a pairing: its code and discovery credential stop working at
// once and operational writes are refused. The connection it created stays;
// the seller pauses or disconnects it as any other. Revoking twice is
// harmless.
func (s Service) Revoke(ctx context.Context, vendorID, id string) (View, error) {
	p, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	now := s.Clock.Now()
	if p.Status == StatusRevoked {
		return p.View(now), nil
	}
	it, err := s.Store.Get(ctx, datamodel.PairingSecretKey(id))
	if err != nil {
		return View{}, pairingErrors.Unavailable(err)
	}
	var rec secretRecord
	if err := json.Unmarshal(it.Data, &rec); err != nil {
		return View{}, pairingErrors.Unavailable(err)
	}
	rec.RevokedAt = &now
	if p.Credential != nil {
		p.Credential.RevokedAt = &now
	}
	p.Status, p.RevokedAt, p.UpdatedAt, p.Version = StatusRevoked, &now, now, p.Version+1
	if err := s.update(ctx, p, &rec, event.StorePairingRevoked, nil); err != nil {
		if store.IsCondition(err) {
			return View{}, errs.E(errs.CodeConflict, "the store pairing changed while it was revoked; retry")
		}
		return View{}, errs.Unavailablef(err, "the revocation could not be stored")
	}
	return p.View(now), nil
}

// AuthorizeOperationalWrite is the gate every operational route of the
// plugin calls before it writes: the seller accepted the pairing, an
// administrator reviewed it, and its connection is active. It returns the
// connection the write acts for.
func (s Service) AuthorizeOperationalWrite(ctx context.Context, pr Principal) (string, error) {
	p, err := s.Get(ctx, pr.VendorID, pr.PairingID)
	if err != nil {
		return "", err
	}
	if p.Status != StatusActive {
		return "", errs.Ef(errs.CodePairingNotActive, "operational writes need the seller's acceptance and a reviewed activation; the pairing is %s", p.statusAt(s.Clock.Now()))
	}
	c, _, _, err := s.Connections.Get(ctx, pr.VendorID, p.Acceptance.ConnectionID)
	if err != nil {
		return "", err
	}
	if c.Status != connection.StatusActive {
		return "", errs.Ef(errs.CodeConnectionInactive, "the pairing's connection is %s", c.Status)
	}
	return c.ID, nil
}

// With is s, and the connection service it calls, reading and writing
// through st, a request's view of the store: the root builds the service
// once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store, s.Connections = st, s.Connections.With(st)
	return s
}
