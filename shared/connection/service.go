package connection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/fields"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Service manages connections and the authority they claim.
type Service struct {
	Store store.Store
	Clock clock.Clock
}

// connectionErrors is how the package's errors name its records.
var connectionErrors = errs.Record{Name: "connection", Unreadable: "connections could not be read"}

// Get reads a connection and its health in one round trip.
func (s Service) Get(ctx context.Context, vendorID, id string) (Connection, Health, store.Item, error) {
	if !fields.ConnectionIDPattern.MatchString(id) {
		return Connection{}, Health{}, store.Item{}, connectionErrors.NotFound()
	}
	items, err := s.Store.GetMany(ctx, []store.Key{datamodel.ConnectionKey(vendorID, id), datamodel.ConnectionHealthKey(vendorID, id)})
	if err != nil {
		return Connection{}, Health{}, store.Item{}, connectionErrors.Unavailable(err)
	}
	if items[0].PK == "" {
		return Connection{}, Health{}, store.Item{}, connectionErrors.NotFound()
	}
	c, err := Decode(items[0])
	if err != nil {
		return Connection{}, Health{}, store.Item{}, connectionErrors.Unavailable(err)
	}
	h, err := decodeHealth(items[1])
	if err != nil {
		return Connection{}, Health{}, store.Item{}, connectionErrors.Unavailable(err)
	}
	return c, h, items[0], nil
}

// List reads a page of connections with their health.
func (s Service) List(ctx context.Context, vendorID, after string, limit int) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.ConnectionPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	conns, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.ConnectionKey(vendorID, "").PK, Prefix: datamodel.ConnectionPrefix, After: after}, limit, Decode, nil)
	if err != nil {
		return store.PageOf[View]{}, connectionErrors.Unavailable(err)
	}
	page := store.PageOf[View]{Items: []View{}, Last: conns.Last, More: conns.More}
	if len(conns.Items) == 0 {
		return page, nil
	}
	keys := make([]store.Key, len(conns.Items))
	for i, c := range conns.Items {
		keys[i] = datamodel.ConnectionHealthKey(vendorID, c.ID)
	}
	healths, err := s.Store.GetMany(ctx, keys)
	if err != nil {
		return store.PageOf[View]{}, connectionErrors.Unavailable(err)
	}
	for i, c := range conns.Items {
		h, err := decodeHealth(healths[i])
		if err != nil {
			return store.PageOf[View]{}, connectionErrors.Unavailable(err)
		}
		page.Items = append(page.Items, c.View(h))
	}
	return page, nil
}

// Authority returns the vendor's authority.
func (s Service) Authority(ctx context.Context, vendorID string) (AuthorityView, error) {
	st, err := loadAuthority(ctx, s.Store, vendorID)
	if err != nil {
		return AuthorityView{}, errs.Unavailablef(err, "the vendor authority could not be read")
	}
	return st.view(vendorID), nil
}

func encode(c Connection) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("connection: encode: %w", err)
	}
	return b, nil
}

// claimErr explains claims that another connection holds.
func claimErr(taken []string) error {
	return errs.Ef(errs.CodeAuthorityConflict, "a domain can have only one source: %s; change that connection's roles first", strings.Join(taken, "; "))
}

func reservationsOutstanding(n int64) error {
	return errs.Ef(errs.CodeAuthorityConflict, "inventory cannot move to a channel while the service holds %d active reservations; commit or release them first", n)
}

// authorityOp claims roles for connection id and returns the write that
// records it, with the checks a handover of inventory needs.
func (s Service) authorityOp(ctx context.Context, vendorID, id string, r Roles) (store.Op, bool, error) {
	st, err := loadAuthority(ctx, s.Store, vendorID)
	if err != nil {
		return store.Op{}, false, errs.Unavailablef(err, "the vendor authority could not be read")
	}
	next, taken := st.claim(id, r)
	if len(taken) > 0 {
		return store.Op{}, false, claimErr(taken)
	}
	if next == st.Authority {
		return store.Op{}, false, nil
	}
	var bounds []store.Bound
	if handsInventoryToChannel(st.Authority, next) {
		if st.serviceReservations > 0 {
			return store.Op{}, false, reservationsOutstanding(st.serviceReservations)
		}
		bounds = append(bounds, store.Bound{Attr: datamodel.ServiceReservationsAttr, Cmp: store.EQ, Value: 0})
	}
	next.UpdatedAt = s.Clock.Now()
	op, err := st.op(vendorID, next, bounds...)
	return op, true, err
}

// PrepareCreate builds a new connection and the operations that store it,
// claim its sources and record its event.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, in CreateInput) (store.Prepared[View], error) {
	now := s.Clock.Now()
	c := Connection{Fields: Fields{ID: ids.New("conn"), VendorID: vendorID, Provider: in.Provider, ExternalAccountID: in.ExternalAccountID,
		DisplayName: in.DisplayName, Status: StatusActive, Roles: in.Roles}, CreatedAt: now, UpdatedAt: now, Version: 1}
	data, err := encode(c)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	k := datamodel.ConnectionKey(vendorID, c.ID)
	ops := []store.Op{store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data, Nums: map[string]int64{
		datamodel.ActiveListingsAttr: 0, datamodel.ActiveReservationsAttr: 0, datamodel.UnresolvedOrdersAttr: 0, datamodel.ChannelFulfillmentsAttr: 0, datamodel.OpenConflictsAttr: 0, datamodel.IsActiveAttr: 1}}, store.IfAbsent())}
	authOp, claims, err := s.authorityOp(ctx, vendorID, c.ID, c.Roles)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if claims {
		ops = append(ops, authOp)
	}
	ev, err := event.Op(event.New(now, vendorID, event.ConnectionCreated, "connection", c.ID, map[string]any{"version": 1, "provider": c.Provider}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	ops = append(ops, ev)
	explain := func(*store.ConditionError) error {
		return errs.E(errs.CodeAuthorityConflict, "the vendor authority changed while the connection was created; read it and retry")
	}
	return store.Prepared[View]{View: c.View(Health{}), Ops: ops, Explain: explain}, nil
}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeConnectionVersion, "connection", current)
}

// Connection actions.
const (
	Pause      = "pause"
	Resume     = "resume"
	Disconnect = "disconnect"
)

// transitions: for an action and a status, the status it leads to; the
// action's own target is a no-op; a missing status is 409.
var transitions = map[string]map[string]string{
	Pause:      {StatusActive: StatusPaused, StatusPaused: StatusPaused},
	Resume:     {StatusPaused: StatusActive, StatusActive: StatusActive},
	Disconnect: {StatusActive: StatusDisconnected, StatusPaused: StatusDisconnected, StatusDisconnected: StatusDisconnected},
}

var eventOf = map[string]string{Pause: event.ConnectionPaused, Resume: event.ConnectionResumed, Disconnect: event.ConnectionDisconnected}

// Transition pauses, resumes or disconnects a connection. Disconnecting
// needs no live work on the connection and gives back its authority claims.
func (s Service) Transition(ctx context.Context, vendorID, id, action string, expected int64) (View, error) {
	c, h, _, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	if expected != c.Version {
		return View{}, versionConflict(c.Version)
	}
	to, ok := transitions[action][c.Status]
	if !ok {
		return View{}, errs.Ef(errs.CodeConnectionState, "a %s connection cannot be %s", c.Status, pastTense(action))
	}
	if to == c.Status {
		return c.View(h), nil
	}
	cond := store.IfVersion(c.Version)
	var ops []store.Op
	if to == StatusDisconnected {
		if busy := c.Counters.busy(); len(busy) > 0 {
			return View{}, errs.Ef(errs.CodeConnectionBusy, "pause the connection and reconcile first: %s", strings.Join(busy, ", "))
		}
		cond.Bounds = idleBounds()
		authOp, claims, err := s.authorityOp(ctx, vendorID, c.ID, Roles{})
		if err != nil {
			return View{}, err
		}
		if claims {
			ops = append(ops, authOp)
		}
	}
	now := s.Clock.Now()
	prev := c.Status
	c.Status, c.UpdatedAt, c.Version = to, now, c.Version+1
	data, err := encode(c)
	if err != nil {
		return View{}, err
	}
	active := int64(0)
	if to == StatusActive {
		active = 1
	}
	if prev == StatusActive {
		active--
	}
	ev, err := event.Op(event.New(now, vendorID, eventOf[action], "connection", c.ID, map[string]any{"version": c.Version, "status": to}))
	if err != nil {
		return View{}, err
	}
	ops = append([]store.Op{store.Update(datamodel.ConnectionKey(vendorID, c.ID), data, c.Version, map[string]int64{datamodel.IsActiveAttr: active}, cond)}, append(ops, ev)...)
	if err := s.Store.Transact(ctx, ops...); err != nil {
		return View{}, s.Explain(ctx, vendorID, id, expected, err)
	}
	return c.View(h), nil
}

// Explain turns a failed write of connection id into the reason a client
// can act on.
func (s Service) Explain(ctx context.Context, vendorID, id string, expected int64, err error) error {
	var e *errs.Error
	if errors.As(err, &e) {
		return err
	}
	if !store.IsCondition(err) {
		return errs.Unavailablef(err, "the connection could not be stored")
	}
	read := func() (Connection, int64, error) {
		cur, _, _, err := s.Get(ctx, vendorID, id)
		return cur, cur.Version, err
	}
	return errs.Raced(read, expected, versionConflict, func(cur Connection) error {
		if busy := cur.Counters.busy(); len(busy) > 0 {
			return errs.Ef(errs.CodeConnectionBusy, "pause the connection and reconcile first: %s", strings.Join(busy, ", "))
		}
		return errs.E(errs.CodeAuthorityConflict, "the vendor authority changed concurrently; read it and retry")
	})
}

func pastTense(action string) string {
	if action == Disconnect {
		return "disconnected"
	}
	return action + "d"
}

// ReplaceRoles replaces a connection's roles. It needs no live work on the
// connection, moves its authority claims with it, and refuses a second
// source for any domain.
func (s Service) ReplaceRoles(ctx context.Context, vendorID, id string, in RolesInput) (View, error) {
	p, err := s.PrepareReplaceRoles(ctx, vendorID, id, in)
	if err != nil || len(p.Ops) == 0 {
		return p.View, err
	}
	if err := s.Store.Transact(ctx, p.Ops...); err != nil {
		return View{}, s.Explain(ctx, vendorID, id, in.ExpectedVersion, err)
	}
	return p.View, nil
}

// PrepareReplaceRoles checks a role replacement and returns the connection
// as it will be and the operations that make the change (none when the
// roles are unchanged), for callers that write more in the same
// transaction; Explain turns their failed condition into a reason.
func (s Service) PrepareReplaceRoles(ctx context.Context, vendorID, id string, in RolesInput) (store.Prepared[View], error) {
	c, h, _, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	if in.preset && c.Provider != StorePlugin {
		return store.Prepared[View]{}, errs.Ef(errs.CodeInvalidRequest, "roles: presets exist only for the %s provider; give the five roles", StorePlugin)
	}
	if in.ExpectedVersion != c.Version {
		return store.Prepared[View]{}, versionConflict(c.Version)
	}
	if c.Status == StatusDisconnected {
		return store.Prepared[View]{}, errs.E(errs.CodeConnectionState, "a disconnected connection has no roles to replace")
	}
	if busy := c.Counters.busy(); len(busy) > 0 {
		return store.Prepared[View]{}, errs.Ef(errs.CodeConnectionBusy, "roles change only on an idle connection; pause it and reconcile first: %s", strings.Join(busy, ", "))
	}
	if in.Roles == c.Roles {
		return store.Prepared[View]{View: c.View(h)}, nil
	}
	authOp, claims, err := s.authorityOp(ctx, vendorID, c.ID, in.Roles)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	now := s.Clock.Now()
	c.Roles, c.UpdatedAt, c.Version = in.Roles, now, c.Version+1
	data, err := encode(c)
	if err != nil {
		return store.Prepared[View]{}, err
	}
	cond := store.IfVersion(in.ExpectedVersion)
	cond.Bounds = idleBounds()
	ops := []store.Op{store.Update(datamodel.ConnectionKey(vendorID, c.ID), data, c.Version, nil, cond)}
	if claims {
		ops = append(ops, authOp)
	}
	ev, err := event.Op(event.New(now, vendorID, event.ConnectionRolesReplaced, "connection", c.ID, map[string]any{"version": c.Version}))
	if err != nil {
		return store.Prepared[View]{}, err
	}
	return store.Prepared[View]{View: c.View(h), Ops: append(ops, ev)}, nil
}

// ReportHealth records a connector's health report. Reports are telemetry:
// they do not move the connection's version.
func (s Service) ReportHealth(ctx context.Context, vendorID, id string, h Health) (View, error) {
	c, _, _, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return View{}, err
	}
	if c.Status == StatusDisconnected {
		return View{}, errs.E(errs.CodeConnectionState, "a disconnected connection takes no health reports")
	}
	data, err := json.Marshal(h)
	if err != nil {
		return View{}, fmt.Errorf("connection: encode health: %w", err)
	}
	k := datamodel.ConnectionHealthKey(vendorID, id)
	if err := s.Store.Transact(ctx, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data}, store.Cond{})); err != nil {
		return View{}, errs.Unavailablef(err, "the health report could not be stored")
	}
	return c.View(h), nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
