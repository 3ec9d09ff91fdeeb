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
	"math/rand/v2"
	"strconv"
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
	// vendor had no free slot: the n-th deferral of a message waits a
	// random time up to min(MaxDeferDelay, FirstDeferDelay·2^(n-1)), at
	// least FirstDeferDelay, so a vendor's backlog comes back ever less
	// often instead of spinning through the queue.
	FirstDeferDelay = time.Second
	MaxDeferDelay   = 30 * time.Second
)

// DeferDelay is how long the n-th deferral (1-based) of a message waits.
func DeferDelay(n int, jitter float64) time.Duration {
	ceiling := FirstDeferDelay
	for i := 1; i < n && ceiling < MaxDeferDelay; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, MaxDeferDelay)
	return max(time.Duration(jitter*float64(ceiling)), FirstDeferDelay)
}

// Slots hands out the vendors' delivery slots.
type Slots interface {
	// Acquire takes one of vendorID's slots for the attempt owner makes
	// (retry when it is attempt 2 or later). It returns ok false when the
	// vendor has none free; otherwise release gives the slot back.
	Acquire(ctx context.Context, vendorID, owner string, retry bool) (release func(context.Context) error, ok bool, err error)
}

// MemorySlots counts the slots of one process: the local server, whose
// delivery pool is the only one.
type MemorySlots struct {
	mu   sync.Mutex
	held map[string]*[2]int // per vendor: all held, retries held
}

// NewMemorySlots returns an empty MemorySlots.
func NewMemorySlots() *MemorySlots { return &MemorySlots{held: map[string]*[2]int{}} }

// Acquire takes a slot when the vendor holds fewer than VendorSlots (and,
// for a retry, its retries fewer than RetrySlots).
func (s *MemorySlots) Acquire(_ context.Context, vendorID, _ string, retry bool) (func(context.Context) error, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[vendorID]
	if h == nil {
		h = &[2]int{}
		s.held[vendorID] = h
	}
	if h[0] >= VendorSlots || (retry && h[1] >= RetrySlots) {
		return nil, false, nil
	}
	h[0]++
	if retry {
		h[1]++
	}
	var once sync.Once
	return func(context.Context) error {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			h[0]--
			if retry {
				h[1]--
			}
			if h[0] == 0 {
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

// slotPartition is the partition of a vendor's slots: apart from the
// vendor's records, so no query of them meets a slot.
func slotPartition(vendorID string) string { return "WHSLOTS#" + vendorID }

const slotPrefix = "SLOT#"

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

type slotHolder struct {
	Owner string `json:"owner"`
}

// Acquire takes a free slot of the vendor: it reads which are held (one
// query), then tries the free ones in slotOrder until a conditional put
// wins one.
func (s StoreSlots) Acquire(ctx context.Context, vendorID, owner string, retry bool) (func(context.Context) error, bool, error) {
	items, err := s.Store.Query(ctx, store.Query{PK: slotPartition(vendorID), Prefix: slotPrefix, Limit: VendorSlots + 1})
	if err != nil {
		return nil, false, fmt.Errorf("webhook: read the delivery slots of %s: %w", vendorID, err)
	}
	held := map[string]bool{}
	for _, it := range items {
		held[it.SK] = true
	}
	data, err := json.Marshal(slotHolder{Owner: owner})
	if err != nil {
		return nil, false, err
	}
	for _, i := range slotOrder(retry) {
		k := slotKey(vendorID, i)
		if held[k.SK] {
			continue
		}
		token := rand.Int64N(1<<62) + 1
		expires := s.Clock.Now().Add(SlotLease)
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
