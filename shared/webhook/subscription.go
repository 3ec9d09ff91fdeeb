// Package webhook delivers the vendor's events to the destinations it
// subscribes (HTTPS endpoints, and its own EventBridge buses and SQS
// queues: destination.go, aws.go): subscriptions and their signing
// secrets, the rule that fans each new event out to one delivery message
// per matching subscription, the delivery worker (signed POST or AWS
// call, retries with backoff for about three days, attempt records,
// disabling a destination that keeps failing), the address checks that
// keep deliveries off private networks (at creation and again on the
// socket at dial time), replays of past events, and recoveries of what a
// subscription missed (recover.go). The AWS clients are the subpackage
// awsdest, behind the interfaces of Senders.
//
// The receivers' half, verifying a delivery's signature, is the
// dependency-free subpackage signature.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Limits of the contract.
const (
	MaxSubscriptions = 20
	MaxEventTypes    = 30
	// AllTypes subscribes to every event type, present and future.
	AllTypes = "*"
	// SecretPrefix starts every signing secret.
	SecretPrefix = "whsec_"
)

// Statuses of a subscription.
const (
	StatusEnabled  = "enabled"
	StatusDisabled = "disabled"
)

// Reasons a subscription is disabled.
const (
	DisabledByVendor   = "vendor"
	DisabledByFailures = "deliveries_failing"
)

// Subscription is a destination and the event types it receives. Its
// signing secret is kept with it, sealed (package envelope: Sealed), and
// shown only on creation and rotation. Secret is the secret in the clear:
// in memory once opened (Open), and in the items of a store written before
// secrets were sealed (issue 29), which every write of the item seals.
type Subscription struct {
	Shown
	Secret string           `json:"secret,omitempty"`
	Sealed *envelope.Sealed `json:"sealed_secret,omitempty"`
	// Successes counted successful deliveries until issue 26 (a numeric
	// attribute of the item); builds since leave it as it is, and the
	// disable policy still honours a count that grew, for the messages and
	// workers of older builds.
	Successes int64 `json:"-"`
	// RecoveredAt is when (Unix milliseconds) a success last ended a
	// failure streak (a numeric attribute of the item): a delivery that
	// dies disables its subscription only if it is older than the
	// delivery's first attempt.
	RecoveredAt int64 `json:"-"`
	// Failing is 1 when the current failure streak has been announced.
	Failing int64 `json:"-"`
}

// View is a subscription as the API shows it: never the secret.
type View struct {
	ID       string `json:"id"`
	VendorID string `json:"vendor_id"`
	// URL is the destination's address (Destination.Address): the https
	// URL, the queue's URL, or the event bus's ARN (a URI of scheme arn),
	// so that a reader of url alone still sees where deliveries go.
	URL string `json:"url"`
	// Destination is where deliveries go; an item written before
	// destinations existed has none, and Decode makes it HTTPS(URL).
	Destination    Destination `json:"destination"`
	EventTypes     []string    `json:"event_types"`
	Description    *string     `json:"description"`
	Status         string      `json:"status"`
	DisabledReason *string     `json:"disabled_reason"`
	DisabledAt     *time.Time  `json:"disabled_at"`
	Version        int64       `json:"version"`
	CreatedAt      time.Time   `json:"created_at"`
	UpdatedAt      time.Time   `json:"updated_at"`
	// FailureStreak counts the failed delivery attempts since the last
	// successful one (a numeric attribute of the item, moved by the
	// workers; what the document holds is ignored).
	FailureStreak int64 `json:"failure_streak"`
}

// Shown is the part of a subscription the API shows.
type Shown = View

// WithSecret is the view shown on creation and rotation.
type WithSecret struct {
	View
	Secret string `json:"secret"`
}

// View returns the public fields.
func (s Subscription) View() View { return s.Shown }

// Matches reports whether the subscription wants events of typ.
func (s Subscription) Matches(typ string) bool {
	return slices.Contains(s.EventTypes, AllTypes) || slices.Contains(s.EventTypes, typ)
}

// NewSecret makes a signing secret: whsec_ and 256 random bits.
func NewSecret() string { return SecretPrefix + ids.Random(32) }

// Decode reads a subscription item.
func Decode(it store.Item) (Subscription, error) {
	var s Subscription
	if err := json.Unmarshal(it.Data, &s); err != nil {
		return Subscription{}, fmt.Errorf("webhook: decode %s: %w", it.SK, err)
	}
	if s.Destination.Type == "" {
		s.Destination = HTTPS(s.URL)
	}
	s.Successes = it.Nums[datamodel.SuccessesAttr]
	s.FailureStreak = max(0, it.Nums[datamodel.FailuresAttr])
	s.Failing = it.Nums[datamodel.FailingAttr]
	s.RecoveredAt = it.Nums[datamodel.RecoveredAttr]
	return s, nil
}

// secretAAD binds a sealed secret to its subscription's item: a secret
// copied onto another subscription does not open.
func secretAAD(vendorID, id string) []byte {
	k := datamodel.SubscriptionKey(vendorID, id)
	return []byte(k.PK + "/" + k.SK)
}

// encode makes the stored document: a secret in the clear (a new one, or
// one read from an item written before secrets were sealed) is sealed
// with box, and never stored as it is.
func encode(ctx context.Context, box *envelope.Box, s Subscription) ([]byte, error) {
	if s.Secret != "" {
		if box == nil {
			return nil, errors.New("webhook: no box to seal the signing secret with")
		}
		sealed, err := box.Seal(ctx, []byte(s.Secret), secretAAD(s.VendorID, s.ID))
		if err != nil {
			return nil, fmt.Errorf("webhook: seal signing secret: %w", err)
		}
		s.Secret, s.Sealed = "", &sealed
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("webhook: encode subscription: %w", err)
	}
	return b, nil
}

// Open sets Secret to the signing secret in the clear, opening the sealed
// one; an item written before secrets were sealed has it already.
func (s *Subscription) Open(ctx context.Context, box *envelope.Box) error {
	if s.Secret != "" {
		return nil
	}
	if s.Sealed == nil || box == nil {
		return fmt.Errorf("webhook: subscription %s: no signing secret to open", s.ID)
	}
	plain, err := box.Open(ctx, *s.Sealed, secretAAD(s.VendorID, s.ID))
	if err != nil {
		return fmt.Errorf("webhook: subscription %s: open signing secret: %w", s.ID, err)
	}
	s.Secret = string(plain)
	return nil
}

// Service manages subscriptions and replays.
type Service struct {
	Store  store.Store
	Clock  clock.Clock
	Policy Policy
	// Secrets seals the signing secrets it stores.
	Secrets *envelope.Box
}

// subscriptionErrors is how the package's errors name its records.
var subscriptionErrors = errs.Record{Name: "webhook subscription", Unreadable: "webhook subscriptions could not be read"}

// Get reads a subscription.
func (s Service) Get(ctx context.Context, vendorID, id string) (Subscription, error) {
	return get(ctx, s.Store, vendorID, id)
}

// get reads a subscription from st: the service's Get, and what the
// workers read of a subscription.
func get(ctx context.Context, st store.Store, vendorID, id string) (Subscription, error) {
	if !ids.Issued("whsub", id) {
		return Subscription{}, subscriptionErrors.NotFound()
	}
	return store.Read(ctx, st, datamodel.SubscriptionKey(vendorID, id), Decode, subscriptionErrors.NotFound(), subscriptionErrors.Unavailable)
}

// List reads a page of subscriptions, oldest first.
func (s Service) List(ctx context.Context, vendorID, after string, limit int) (store.PageOf[View], error) {
	if err := errs.ForeignCursor(after, datamodel.SubscriptionPrefix); err != nil {
		return store.PageOf[View]{}, err
	}
	page, err := store.Page(ctx, s.Store, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.SubscriptionPrefix, After: after}, limit, Decode, nil)
	if err != nil {
		return store.PageOf[View]{}, subscriptionErrors.Unavailable(err)
	}
	return store.MapPage(page, Subscription.View), nil
}

// all reads every subscription of a vendor (at most MaxSubscriptions).
func all(ctx context.Context, st store.Store, vendorID string) ([]Subscription, error) {
	items, err := st.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.SubscriptionPrefix, Limit: 100})
	if err != nil {
		return nil, err
	}
	subs := make([]Subscription, 0, len(items))
	for _, it := range items {
		sub, err := Decode(it)
		if err != nil {
			return nil, err
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

func subscriptionEvent(now time.Time, vendorID, typ, id string, data map[string]any) (store.Op, error) {
	return event.Op(event.New(now, vendorID, typ, "webhook_subscription", id, data))
}

func limitErr() error {
	return errs.Ef(errs.CodeWebhookSubscriptionLimit, "a vendor can have at most %d webhook subscriptions; delete one first", MaxSubscriptions)
}

// checkDestination checks a destination before it is stored: an https
// URL's host is resolved (CheckURL); an AWS address was checked whole by
// its parse.
func (s Service) checkDestination(ctx context.Context, d Destination) error {
	if d.Type != DestinationHTTPS {
		return nil
	}
	_, err := s.Policy.CheckURL(ctx, d.URL)
	return err
}

// PrepareCreate checks the destination (resolving an https host), builds the new
// subscription with its secret, and returns the operations that store it,
// count it against the vendor's limit (a counter with a bound, so that
// concurrent creates cannot pass 20) and under each of its event types
// (datamodel.SubscriptionTypeAttr: the vendor's first subscription writes
// the counts complete, flagged so), and record its event.
func (s Service) PrepareCreate(ctx context.Context, vendorID string, in CreateInput) (store.Prepared[WithSecret], error) {
	if err := s.checkDestination(ctx, in.Destination); err != nil {
		return store.Prepared[WithSecret]{}, err
	}
	ck := datamodel.SubscriptionCountKey(vendorID)
	cit, err := s.Store.Get(ctx, ck)
	var count store.Op
	deltas := typeDeltas(nil, in.EventTypes)
	deltas[datamodel.SubscriptionCountAttr] = 1
	switch {
	case errors.Is(err, store.ErrNotFound):
		// The vendor's first subscription: the counts start complete.
		deltas[datamodel.SubscriptionTypedAttr] = 1
		count = store.Put(store.Item{PK: ck.PK, SK: ck.SK, Version: 1, Nums: deltas}, store.IfAbsent())
	case err != nil:
		return store.Prepared[WithSecret]{}, subscriptionErrors.Unavailable(err)
	case cit.Nums[datamodel.SubscriptionCountAttr] >= MaxSubscriptions:
		return store.Prepared[WithSecret]{}, limitErr()
	default:
		count = store.Add(ck, deltas, 0,
			store.Cond{Bounds: []store.Bound{{Attr: datamodel.SubscriptionCountAttr, Cmp: store.LT, Value: MaxSubscriptions}}})
	}
	now := s.Clock.Now()
	sub := Subscription{Shown: Shown{ID: ids.Sortable("whsub", now), VendorID: vendorID, URL: in.Destination.Address(), Destination: in.Destination, EventTypes: in.EventTypes,
		Description: in.Description, Status: StatusEnabled, Version: 1, CreatedAt: now, UpdatedAt: now}, Secret: NewSecret()}
	data, err := encode(ctx, s.Secrets, sub)
	if err != nil {
		return store.Prepared[WithSecret]{}, err
	}
	k := datamodel.SubscriptionKey(vendorID, sub.ID)
	ev, err := subscriptionEvent(now, vendorID, event.WebhookSubscriptionCreated, sub.ID, map[string]any{"version": 1})
	if err != nil {
		return store.Prepared[WithSecret]{}, err
	}
	ops := []store.Op{
		store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: data, Nums: map[string]int64{datamodel.SuccessesAttr: 0}}, store.IfAbsent()),
		count, ev,
	}
	explain := func(ce *store.ConditionError) error {
		if ce.Has(1) && count.Kind == store.OpAdd {
			return limitErr()
		}
		return errs.E(errs.CodeConflict, "webhook subscriptions changed while this one was created; retry")
	}
	return store.Prepared[WithSecret]{View: WithSecret{View: sub.View(), Secret: sub.Secret}, Ops: ops, Explain: explain}, nil
}

func versionConflict(current int64) error {
	return errs.StaleVersion(errs.CodeWebhookSubscriptionVersion, "subscription", current)
}

// Updated is the answer to a PATCH: the subscription, and the recovery a
// re-enable with recover_since started.
type Updated struct {
	View
	Recovery *RecoveryView `json:"recovery,omitempty"`
}

// Update applies a PATCH: the fields sent replace the current ones,
// provided expected_version is current. Enabling a disabled subscription
// clears its disabled reason, and with recover_since stores a recovery
// from then to now in the same transaction; an update that changes
// nothing is a no-op.
func (s Service) Update(ctx context.Context, vendorID, id string, in UpdateInput) (Updated, error) {
	sub, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return Updated{}, err
	}
	if in.ExpectedVersion != sub.Version {
		return Updated{}, versionConflict(sub.Version)
	}
	now := s.Clock.Now()
	var extra []store.Op
	var recovery *RecoveryView
	if in.RecoverSince != nil {
		if sub.Status == StatusEnabled {
			return Updated{}, errs.Ef(errs.CodeWebhookSubscriptionState, "webhook subscription %s is enabled already: recover_since starts a recovery only when re-enabling; use POST .../recover", sub.ID)
		}
		end, err := CheckWindow("recover_since", *in.RecoverSince, nil, now)
		if err != nil {
			return Updated{}, err
		}
		v, put, err := newRecovery(now, sub, *in.RecoverSince, end)
		if err != nil {
			return Updated{}, err
		}
		extra, recovery = []store.Op{put}, &v
	}
	var changed []string
	if in.Destination != nil && *in.Destination != sub.Destination {
		if err := s.checkDestination(ctx, *in.Destination); err != nil {
			return Updated{}, err
		}
		// url shows the destination's address: the two change together.
		changed = append(changed, "url", "destination")
		sub.Destination, sub.URL = *in.Destination, in.Destination.Address()
	}
	if in.EventTypes != nil && !slices.Equal(in.EventTypes, sub.EventTypes) {
		if d := typeDeltas(sub.EventTypes, in.EventTypes); len(d) > 0 {
			// Moved with the subscription's version: the types it had are
			// those it has at the version the update is conditioned on.
			extra = append(extra, store.Add(datamodel.SubscriptionCountKey(vendorID), d, 0, store.Cond{}))
		}
		sub.EventTypes = in.EventTypes
		changed = append(changed, "event_types")
	}
	if in.DescriptionSet && !equalPtr(in.Description, sub.Description) {
		sub.Description = in.Description
		changed = append(changed, "description")
	}
	if in.Status != nil && *in.Status != sub.Status {
		sub.Status = *in.Status
		if sub.Status == StatusEnabled {
			sub.DisabledReason, sub.DisabledAt = nil, nil
		} else {
			reason := DisabledByVendor
			sub.DisabledReason, sub.DisabledAt = &reason, &now
		}
		changed = append(changed, "status")
	}
	if len(changed) == 0 {
		return Updated{View: sub.View()}, nil
	}
	sub.Version++
	sub.UpdatedAt = now
	if err := s.write(ctx, sub, in.ExpectedVersion, event.WebhookSubscriptionUpdated, map[string]any{"version": sub.Version, "changed": changed}, extra...); err != nil {
		return Updated{}, err
	}
	return Updated{View: sub.View(), Recovery: recovery}, nil
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// write stores a changed subscription with its event (and extra
// operations), conditioned on the version it was read at; numeric
// attributes (the success count) are kept.
func (s Service) write(ctx context.Context, sub Subscription, prev int64, typ string, data map[string]any, extra ...store.Op) error {
	doc, err := encode(ctx, s.Secrets, sub)
	if err != nil {
		return err
	}
	ev, err := subscriptionEvent(sub.UpdatedAt, sub.VendorID, typ, sub.ID, data)
	if err != nil {
		return err
	}
	ops := append([]store.Op{store.Update(datamodel.SubscriptionKey(sub.VendorID, sub.ID), doc, sub.Version, nil, store.IfVersion(prev)), ev}, extra...)
	err = s.Store.Transact(ctx, ops...)
	if store.IsCondition(err) {
		cur, gerr := s.Get(ctx, sub.VendorID, sub.ID)
		if gerr != nil {
			return gerr
		}
		return versionConflict(cur.Version)
	}
	if err != nil {
		var e *errs.Error
		if errors.As(err, &e) {
			return err
		}
		return errs.Unavailablef(err, "the webhook subscription could not be stored")
	}
	return nil
}

// Rotate gives the subscription a new secret, effective for the next
// delivery attempt; the old secret stops working at once.
func (s Service) Rotate(ctx context.Context, vendorID, id string) (WithSecret, error) {
	sub, err := s.Get(ctx, vendorID, id)
	if err != nil {
		return WithSecret{}, err
	}
	prev := sub.Version
	sub.Secret, sub.Sealed = NewSecret(), nil
	sub.Version++
	sub.UpdatedAt = s.Clock.Now()
	if err := s.write(ctx, sub, prev, event.WebhookSubscriptionUpdated, map[string]any{"version": sub.Version, "changed": []string{"secret"}}); err != nil {
		return WithSecret{}, err
	}
	return WithSecret{View: sub.View(), Secret: sub.Secret}, nil
}

// deleteAttempts bounds the deletes of a subscription that changes under
// them (a PATCH, the disable policy) between the read and the write.
const deleteAttempts = 4

// Delete removes a subscription and frees its place under the limit.
// Deliveries already queued for it are dropped when they come up; its
// attempt records expire on their own. The delete is conditioned on the
// version read, so that the per-type counts lose the event types the
// subscription has when it goes; one changed meanwhile is read again.
func (s Service) Delete(ctx context.Context, vendorID, id string) error {
	for range deleteAttempts {
		sub, err := s.Get(ctx, vendorID, id)
		if err != nil {
			return err
		}
		err = s.deleteAt(ctx, vendorID, sub)
		if !store.IsCondition(err) {
			return err
		}
	}
	return errs.E(errs.CodeConflict, "the webhook subscription kept changing while it was deleted; retry")
}

// deleteAt deletes vendorID's sub as it was read: a condition error when
// it changed or went since.
func (s Service) deleteAt(ctx context.Context, vendorID string, sub Subscription) error {
	ev, err := subscriptionEvent(s.Clock.Now(), vendorID, event.WebhookSubscriptionDeleted, sub.ID, map[string]any{"version": sub.Version})
	if err != nil {
		return err
	}
	deltas := typeDeltas(sub.EventTypes, nil)
	deltas[datamodel.SubscriptionCountAttr] = -1
	err = s.Store.Transact(ctx,
		store.Delete(datamodel.SubscriptionKey(vendorID, sub.ID), store.IfVersion(sub.Version)),
		store.Add(datamodel.SubscriptionCountKey(vendorID), deltas, 0,
			store.Cond{Bounds: []store.Bound{{Attr: datamodel.SubscriptionCountAttr, Cmp: store.GT, Value: 0}}}),
		ev)
	if err != nil && !store.IsCondition(err) {
		var e *errs.Error
		if errors.As(err, &e) {
			return err
		}
		return errs.Unavailablef(err, "the webhook subscription could not be deleted")
	}
	return err
}

// SealPlaintext seals the signing secrets of a vendor's subscriptions that
// are still stored in the clear (written before secrets were sealed, and
// not written since), and returns how many it sealed. The item keeps its
// version: the subscription the API shows does not change, and a write
// racing it (conditioned on that version) still succeeds, sealing too. A
// subscription changed meanwhile is left to that change.
func (s Service) SealPlaintext(ctx context.Context, vendorID string) (int, error) {
	items, err := s.Store.Query(ctx, store.Query{PK: datamodel.VendorPartition(vendorID), Prefix: datamodel.SubscriptionPrefix, Limit: 100})
	if err != nil {
		return 0, subscriptionErrors.Unavailable(err)
	}
	n := 0
	for _, it := range items {
		sub, err := Decode(it)
		if err != nil {
			return n, err
		}
		if sub.Secret == "" {
			continue
		}
		doc, err := encode(ctx, s.Secrets, sub)
		if err != nil {
			return n, err
		}
		err = s.Store.Transact(ctx, store.Update(it.Key(), doc, it.Version, nil, store.IfVersion(it.Version)))
		if store.IsCondition(err) {
			continue
		}
		if err != nil {
			return n, errs.Unavailablef(err, "the webhook subscription could not be stored")
		}
		n++
	}
	return n, nil
}

// With is s reading and writing through st, a request's view of the
// store: the root builds the service once, a request uses a copy.
func (s Service) With(st store.Store) Service {
	s.Store = st
	return s
}
