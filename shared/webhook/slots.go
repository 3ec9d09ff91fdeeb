package webhook

// A vendor's share of delivery capacity. Every attempt holds one of its
// vendor's slots while it is made; a vendor has VendorSlots of them, and
// its retries may hold only RetrySlots, so that however slow or failing a
// vendor's receivers are, it holds at most VendorSlots attempts in flight
// and its own fresh deliveries always have VendorSlots-RetrySlots slots
// that its retries cannot take. A message whose vendor has no free slot is
// deferred: sent again after a short delay, without an attempt.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
)

const (
	// VendorSlots is how many attempts of one vendor are in flight at once,
	// in the whole deployment: a quarter of the local pool (16), a fifth of
	// the deployed worker's concurrency (20 environments).
	VendorSlots = 4
	// RetrySlots is how many of them retries (attempt 2 and later) may hold.
	RetrySlots = 2
	// SlotLease is how long a slot in the store is held when its holder
	// never gives it back (a process that died mid-attempt): longer than an
	// attempt (RequestTimeout) and the store writes around it.
	SlotLease = RequestTimeout + 15*time.Second
	// FirstDeferDelay and MaxDeferDelay bound the wait of a message whose
	// vendor had no free slot (DeferDelay).
	FirstDeferDelay = time.Second
	MaxDeferDelay   = 5 * time.Minute
)

// DeferDelay is how long the n-th deferral (1-based) of a message waits,
// given what the look saw of the slots it could take (Look.expect): a
// time between FirstDeferDelay and FirstDeferDelay plus a window, full
// jitter, at most MaxDeferDelay. When a slot's holder is prompt, the
// window is FirstDeferDelay·4^(n-1), so a prompt vendor's burst drains
// within seconds. When every holder is slow (its receiver marked slow, a
// retry, or an attempt already past SlowReceiver), the slots come free
// only as those attempts end and the next ones in line take as long, so
// the window is (left + RequestTimeout)·4^n, left being how long until
// the first of them ends: a backlog comes back spread over several of
// its slots' cycles instead of all together a second later
// (docs/decisions.md, "A vendor's backlog comes back as its slots free
// (issue 25)").
func DeferDelay(n int, e Expect, jitter float64) time.Duration {
	window, grow := FirstDeferDelay, n-1
	if e.Slow {
		window, grow = max(e.Left, 0)+RequestTimeout, n
	}
	for i := 0; i < grow && window < MaxDeferDelay; i++ {
		window *= 4
	}
	window = min(window, MaxDeferDelay)
	return min(FirstDeferDelay+time.Duration(jitter*float64(window)), MaxDeferDelay)
}

// Expect is what a deferred message can expect of the slots it could
// take, as looked: whether every holder is slow, and how long until the
// first of those attempts reaches its RequestTimeout.
type Expect struct {
	Slow bool
	Left time.Duration
}

// Holder is who takes a slot: the queue message making the attempt, its
// subscription, and whether it is a retry.
type Holder struct {
	Owner          string
	SubscriptionID string
	Retry          bool
}

// Slots hands out the vendors' delivery slots, and keeps which
// subscriptions' receivers were slow lately (the lane marks), so that
// their deliveries go in the slow lane (queue.WebhookSlowLane).
type Slots interface {
	// Look reads the vendor's slots and lane marks as they are now.
	Look(ctx context.Context, vendorID string) (Look, error)
	// Take takes one of the vendor's slots, as look saw them, for the
	// attempt h makes (h.Retry when it is attempt 2 or later). It returns
	// ok false when the vendor has none free; otherwise release gives the
	// slot back.
	Take(ctx context.Context, look Look, h Holder) (release func(context.Context) error, ok bool, err error)
	// MarkSlow marks a subscription's receiver slow until then; a zero
	// time takes the mark away.
	MarkSlow(ctx context.Context, vendorID, subscriptionID string, until time.Time) error
}

// Look is what Slots.Look read of a vendor.
type Look struct {
	VendorID string
	// held are the slots held (StoreSlots); MemorySlots counts its own.
	held map[string]bool
	// counted says inUse holds MemorySlots' counts when looked: all held,
	// retries held.
	counted bool
	inUse   [2]int
	// slow is when each marked subscription's mark ends.
	slow map[string]time.Time
	// holds are the slots' holders, as far as their slots tell.
	holds []holding
}

// holding is one held slot as looked: when its attempt began, the
// holder's subscription and whether it is a retry (unknown, empty and
// false, for a slot taken by an older build), and whether it is one of the
// slots retries may hold.
type holding struct {
	start     time.Time
	sub       string
	retry     bool
	retrySlot bool
}

// slow reports whether the holding's attempt will not end soon: a retry
// of a failing receiver, an attempt to a receiver marked slow, or one
// that has taken SlowReceiver already.
func (h holding) slow(l Look, now time.Time) bool {
	return h.retry || l.SlowUntil(h.sub).After(now) || now.Sub(h.start) >= SlowReceiver
}

// expect is what a message (a retry when retry) that found no slot free
// can expect of the slots it could take: Slow when every holder of them
// is slow, and then how long until the first of them reaches its
// RequestTimeout. It reads only what the look read. A retry looks at the
// holders of the retry slots when they are all held, else at all of them
// (MemorySlots' retries take any slot, and may be kept off by the total).
func (l Look) expect(now time.Time, retry bool) Expect {
	e := Expect{Left: MaxDeferDelay}
	retrySlotsHeld := 0
	for _, h := range l.holds {
		if h.retrySlot {
			retrySlotsHeld++
		}
	}
	for _, h := range l.holds {
		if retry && retrySlotsHeld >= RetrySlots && !h.retrySlot {
			continue
		}
		if !h.slow(l, now) {
			return Expect{}
		}
		e.Slow = true
		e.Left = min(e.Left, max(h.start.Add(RequestTimeout).Sub(now), 0))
	}
	if !e.Slow {
		return Expect{}
	}
	return e
}

// SlowUntil is when the subscription's slow mark ends, or the zero time.
func (l Look) SlowUntil(subscriptionID string) time.Time { return l.slow[subscriptionID] }

// mayTake reports whether the vendor had a slot free, when looked, that an
// attempt (a retry when retry) may take: a hint, since another taker may
// win it first; true when nothing was counted (no Slots).
func (l Look) mayTake(retry bool) bool {
	switch {
	case l.counted:
		return l.inUse[0] < VendorSlots && (!retry || l.inUse[1] < RetrySlots)
	case l.held == nil:
		return true
	}
	n := VendorSlots
	if retry {
		n = RetrySlots
	}
	for i := range n {
		if !l.held[slotKey(l.VendorID, i).SK] {
			return true
		}
	}
	return false
}

// MemorySlots counts the slots of one process: the local server, whose
// delivery pool is the only one.
type MemorySlots struct {
	clock clock.Clock
	mu    sync.Mutex
	held  map[string]*memoryHeld // per vendor
	// slow are the lane marks, per vendor and subscription.
	slow map[string]map[string]time.Time
}

// memoryHeld is what a vendor holds of MemorySlots: how many slots (all,
// retries) and by whom.
type memoryHeld struct {
	count [2]int
	by    map[*holding]bool
}

// NewMemorySlots returns an empty MemorySlots whose holders start at c's
// time.
func NewMemorySlots(c clock.Clock) *MemorySlots {
	return &MemorySlots{clock: c, held: map[string]*memoryHeld{}, slow: map[string]map[string]time.Time{}}
}

// Look reads the vendor's lane marks and counts its slots held.
func (s *MemorySlots) Look(_ context.Context, vendorID string) (Look, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := Look{VendorID: vendorID, slow: maps.Clone(s.slow[vendorID]), counted: true}
	if h := s.held[vendorID]; h != nil {
		l.inUse = h.count
		for by := range h.by {
			l.holds = append(l.holds, *by)
		}
	}
	return l, nil
}

// MarkSlow sets or takes away a subscription's lane mark.
func (s *MemorySlots) MarkSlow(_ context.Context, vendorID, subscriptionID string, until time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if until.IsZero() {
		delete(s.slow[vendorID], subscriptionID)
		if len(s.slow[vendorID]) == 0 {
			delete(s.slow, vendorID)
		}
		return nil
	}
	if s.slow[vendorID] == nil {
		s.slow[vendorID] = map[string]time.Time{}
	}
	s.slow[vendorID][subscriptionID] = until
	return nil
}

// Take takes a slot when the vendor holds fewer than VendorSlots (and,
// for a retry, its retries fewer than RetrySlots), counted at this moment.
func (s *MemorySlots) Take(_ context.Context, look Look, holder Holder) (func(context.Context) error, bool, error) {
	vendorID, retry := look.VendorID, holder.Retry
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[vendorID]
	if h == nil {
		h = &memoryHeld{by: map[*holding]bool{}}
		s.held[vendorID] = h
	}
	if h.count[0] >= VendorSlots || (retry && h.count[1] >= RetrySlots) {
		return nil, false, nil
	}
	h.count[0]++
	if retry {
		h.count[1]++
	}
	by := &holding{start: s.clock.Now(), sub: holder.SubscriptionID, retry: retry, retrySlot: retry}
	h.by[by] = true
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			h.count[0]--
			if retry {
				h.count[1]--
			}
			delete(h.by, by)
			if h.count[0] == 0 {
				delete(s.held, vendorID)
			}
		})
		return nil
	}, true, nil
}

// StoreSlots keeps the slots in the store, so that the bound holds across
// every process that delivers (the worker Lambda's environments). Slot i
// of a vendor is an item (slotKey) that exists while it is held: taken by
// a put conditioned on its absence, with an expiry of SlotLease (an
// expired item reads as absent, so the slot of a process that died comes
// free by itself), and given back by a delete conditioned on the holder's
// random token (its version), so that a holder whose lease ran out never
// frees a slot someone else has taken since. Retries take only slots
// 0..RetrySlots-1; fresh deliveries try the others first.
type StoreSlots struct {
	Store store.Store
	Clock clock.Clock
}

// slotPartition is the partition of a vendor's slots and lane marks:
// apart from the vendor's records, so no query of them meets a slot.
func slotPartition(vendorID string) string { return "WHSLOTS#" + vendorID }

// The sort keys of the slot partition: the slots (SLOT#i), then the lane
// marks (SLOW#<subscription id>), which sort after them.
const (
	slotPrefix = "SLOT#"
	slowPrefix = "SLOW#"
)

// lookLimit reads every slot and the marks of every subscription a vendor
// can have (and as many deleted ones, whose marks run out by themselves).
const lookLimit = VendorSlots + 2*MaxSubscriptions

func slotKey(vendorID string, i int) store.Key {
	return store.Key{PK: slotPartition(vendorID), SK: slotPrefix + strconv.Itoa(i)}
}

// slotOrder is the order in which an attempt tries the slots: a retry
// only the retry slots, a fresh delivery the others first; each group
// from a random start, so that concurrent takers spread out.
func slotOrder(retry bool) []int {
	rotate := func(lo, hi int) []int {
		var out []int
		start := rand.IntN(hi - lo)
		for i := range hi - lo {
			out = append(out, lo+(start+i)%(hi-lo))
		}
		return out
	}
	if retry {
		return rotate(0, RetrySlots)
	}
	return append(rotate(RetrySlots, VendorSlots), rotate(0, RetrySlots)...)
}

// slotHolder is a slot item's data: its holder's message, and since
// issue 25 the holder's subscription, whether it is a retry and when its
// attempt began (Unix ms); a slot taken by an older build has only the
// owner, and its start is read from its lease.
type slotHolder struct {
	Owner          string `json:"owner"`
	SubscriptionID string `json:"subscription_id,omitempty"`
	Retry          bool   `json:"retry,omitempty"`
	StartMS        int64  `json:"start_ms,omitempty"`
}

// holding reads a slot item: what its data says, and the start its lease
// implies when the data has none (or cannot be read: the slot is held
// all the same).
func slotHolding(it store.Item) holding {
	var sh slotHolder
	_ = json.Unmarshal(it.Data, &sh)
	h := holding{sub: sh.SubscriptionID, retry: sh.Retry, start: time.UnixMilli(sh.StartMS)}
	if sh.StartMS == 0 {
		h.start = time.Unix(it.ExpiresAt-1, 0).Add(-SlotLease)
	}
	i, err := strconv.Atoi(strings.TrimPrefix(it.SK, slotPrefix))
	h.retrySlot = err == nil && i < RetrySlots
	return h
}

// Look reads the vendor's held slots and lane marks in one query; an
// expired item (a lease run out, a mark past its time) reads as absent.
func (s StoreSlots) Look(ctx context.Context, vendorID string) (Look, error) {
	items, err := s.Store.Query(ctx, store.Query{PK: slotPartition(vendorID), Limit: lookLimit})
	if err != nil {
		return Look{}, fmt.Errorf("webhook: read the delivery slots of %s: %w", vendorID, err)
	}
	l := Look{VendorID: vendorID, held: map[string]bool{}}
	for _, it := range items {
		switch {
		case strings.HasPrefix(it.SK, slotPrefix):
			l.held[it.SK] = true
			l.holds = append(l.holds, slotHolding(it))
		case strings.HasPrefix(it.SK, slowPrefix):
			if l.slow == nil {
				l.slow = map[string]time.Time{}
			}
			l.slow[strings.TrimPrefix(it.SK, slowPrefix)] = time.Unix(it.ExpiresAt, 0)
		}
	}
	return l, nil
}

// MarkSlow puts the subscription's lane mark, an item that expires when
// the mark ends, or deletes it.
func (s StoreSlots) MarkSlow(ctx context.Context, vendorID, subscriptionID string, until time.Time) error {
	k := store.Key{PK: slotPartition(vendorID), SK: slowPrefix + subscriptionID}
	op := store.Delete(k, store.Cond{})
	if !until.IsZero() {
		op = store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: []byte(`{}`), ExpiresAt: until.Unix()}, store.Cond{})
	}
	if err := s.Store.Transact(ctx, op); err != nil {
		return fmt.Errorf("webhook: mark the receiver of %s slow: %w", subscriptionID, err)
	}
	return nil
}

// Take tries the slots look saw free, in slotOrder, until a conditional
// put wins one.
func (s StoreSlots) Take(ctx context.Context, look Look, h Holder) (func(context.Context) error, bool, error) {
	vendorID := look.VendorID
	now := s.Clock.Now()
	data, err := json.Marshal(slotHolder{Owner: h.Owner, SubscriptionID: h.SubscriptionID, Retry: h.Retry, StartMS: now.UnixMilli()})
	if err != nil {
		return nil, false, err
	}
	for _, i := range slotOrder(h.Retry) {
		k := slotKey(vendorID, i)
		if look.held[k.SK] {
			continue
		}
		token := rand.Int64N(1<<62) + 1
		expires := now.Add(SlotLease)
		it := store.Item{PK: k.PK, SK: k.SK, Version: token, Data: data, ExpiresAt: expires.Unix() + 1}
		err := s.Store.Transact(ctx, store.Put(it, store.IfAbsent()))
		if store.IsCondition(err) {
			continue // taken meanwhile
		}
		if err != nil {
			return nil, false, fmt.Errorf("webhook: take delivery slot %d of %s: %w", i, vendorID, err)
		}
		return func(ctx context.Context) error {
			// A condition failure means the lease ran out and another
			// holder has the slot now; any other failure leaves the slot
			// to its lease.
			err := s.Store.Transact(context.WithoutCancel(ctx), store.Delete(k, store.IfVersion(token)))
			if err != nil && !store.IsCondition(err) {
				return fmt.Errorf("webhook: give back delivery slot %d of %s: %w", i, vendorID, err)
			}
			return nil
		}, true, nil
	}
	return nil, false, nil
}
