package pipeline

// In AWS the router reads the table's stream, whose event source mapping
// gives up on a record after its retries or its maximum age: a change the
// router could not route then (queues refusing sends, the router timing
// out) would be lost. So every routed insert is written with a marker, in
// the same transaction; the router deletes the marker once the change's
// work is sent, and a scheduled sweep routes again the changes whose
// marker is older than a grace period. The work is idempotent (jobs on
// their versions, deliveries on their claims), so a change routed twice
// does nothing twice.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/store"
)

// SweepGrace is how old a marker must be before a sweep routes its change
// again: longer than the stream mapping takes to route a change in normal
// operation (seconds) and to retry a failing batch a few times, so that a
// sweep mostly finds what the mapping gave up on.
const SweepGrace = 5 * time.Minute

// SweepLimit is the most changes one sweep routes; the next sweep goes on.
const SweepLimit = 1000

// attrAt is a marker's numeric attribute: when its change was committed,
// in Unix seconds.
const attrAt = "at"

// Pending writes the markers: Mark is a store transaction hook
// (dynamodb.WithTransactHook).
type Pending struct {
	// Prefixes are the sort-key prefixes of the inserts the router routes
	// (the router's Inserted).
	Prefixes []string
	// Kept are the event types some rule routes whatever the vendor's
	// webhook subscriptions (seller orders' projections): always marked.
	Kept []string
	Now  func() time.Time
}

// marker is a marker's document: the key of its change's item.
type marker struct {
	PK string `json:"pk"`
	SK string `json:"sk"`
}

// Mark returns ops with a marker added for every insert (a put on the
// condition that the item is absent) of a routed item, but for an event
// not of a Kept type that no subscription could receive by the Receivers
// ctx carries (read in the write's admission; none carried, every event
// is marked): that event is written with datamodel.EventUnmarkedAttr
// instead, so that the router deletes no marker for it. Should the
// stream mapping give up on such an event, its deliveries are lost, as
// the contract allows; the router still routes it from the stream,
// reading the subscriptions as they are then.
// A transaction that the markers would take over store.MaxTransactOps is
// left as it is: its changes are routed by the stream alone, as before
// markers, rather than the write refused.
func (p Pending) Mark(ctx context.Context, ops []store.Op) []store.Op {
	rcv := ReceiversFrom(ctx)
	rcv.note(ops)
	var out []store.Op
	for i, op := range ops {
		if op.Kind != store.OpPut || !op.Cond.Absent || !hasPrefix(op.Item.SK, p.Prefixes) {
			continue
		}
		if out == nil {
			out = append(make([]store.Op, 0, len(ops)+1), ops...)
		}
		if typ, ok := eventType(op.Item); ok && !slices.Contains(p.Kept, typ) && !rcv.Could(op.Item.PK, typ) {
			nums := maps.Clone(op.Item.Nums)
			if nums == nil {
				nums = make(map[string]int64, 1)
			}
			nums[datamodel.EventUnmarkedAttr] = 1
			out[i].Item.Nums = nums
			continue
		}
		k := datamodel.PendingKey(op.Item.Key())
		doc, _ := json.Marshal(marker{PK: op.Item.PK, SK: op.Item.SK}) // strings only: cannot fail
		out = append(out, store.Put(store.Item{PK: k.PK, SK: k.SK, Version: 1, Data: doc,
			Nums: map[string]int64{attrAt: p.Now().Unix()}}, store.Cond{}))
	}
	if out == nil || len(out) > store.MaxTransactOps {
		return ops
	}
	return out
}

// eventType returns the type of the event it is; ok is false for any
// other item, and for a document without a type.
func eventType(it store.Item) (string, bool) {
	if !strings.HasPrefix(it.SK, datamodel.EventPrefix) {
		return "", false
	}
	var e struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(it.Data, &e) != nil || e.Type == "" {
		return "", false
	}
	return e.Type, true
}

func hasPrefix(sk string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(sk, p) {
			return true
		}
	}
	return false
}

// Swept is what one sweep did.
type Swept struct {
	// Routed counts changes routed again; Gone markers whose item no longer
	// exists (expired), deleted; Failed changes that could not be routed
	// again, left for the next sweep.
	Routed int `json:"routed"`
	Gone   int `json:"gone"`
	Failed int `json:"failed"`
}

// Sweep routes again every change whose marker is at least grace old at
// now, up to limit of them, and deletes the markers of items that are
// gone. The router's Pending store holds the markers. A shard whose change
// cannot be routed is left at that change (the queues are likely refusing
// sends) and the sweep goes on with the next shard; the errors are joined.
func (r Router) Sweep(ctx context.Context, now time.Time, grace time.Duration, limit int) (Swept, error) {
	var run Swept
	var errList []error
	if r.Pending == nil {
		return run, errors.New("pipeline: sweep needs the router's Pending store")
	}
	cutoff := now.Add(-grace).Unix()
	for shard := 0; shard < datamodel.PendingShards && run.Routed+run.Gone < limit; shard++ {
		if err := r.sweepShard(ctx, datamodel.PendingShard(shard), cutoff, limit, &run); err != nil {
			run.Failed++
			errList = append(errList, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	return run, errors.Join(errList...)
}

// sweepShard sweeps one marker partition, page by page.
func (r Router) sweepShard(ctx context.Context, pk string, cutoff int64, limit int, run *Swept) error {
	after := ""
	for run.Routed+run.Gone < limit {
		page, err := r.Pending.Query(ctx, store.Query{PK: pk, After: after, Limit: 100})
		if err != nil {
			return fmt.Errorf("pipeline: read markers of %s: %w", pk, err)
		}
		for _, m := range page {
			if m.Nums[attrAt] > cutoff || run.Routed+run.Gone >= limit {
				continue
			}
			gone, err := r.reroute(ctx, m)
			if err != nil {
				return err
			}
			if gone {
				run.Gone++
			} else {
				run.Routed++
			}
		}
		if len(page) < 100 {
			return nil
		}
		after = page[len(page)-1].SK
	}
	return nil
}

// reroute routes the change of marker m again as the insert of its item as
// it is now, or deletes the marker when the item is gone.
func (r Router) reroute(ctx context.Context, m store.Item) (gone bool, err error) {
	var k marker
	if err := json.Unmarshal(m.Data, &k); err != nil || k.PK == "" {
		// Not ours to read: drop it rather than stop the shard forever.
		return true, r.Pending.Transact(ctx, store.Delete(m.Key(), store.Cond{}))
	}
	it, err := r.Pending.Get(ctx, store.Key{PK: k.PK, SK: k.SK})
	if errors.Is(err, store.ErrNotFound) {
		return true, r.Pending.Transact(ctx, store.Delete(m.Key(), store.Cond{}))
	}
	if err != nil {
		return false, fmt.Errorf("pipeline: read %s/%s: %w", k.PK, k.SK, err)
	}
	_, err = r.Route(ctx, []store.Change{{Kind: store.Inserted, Key: it.Key(), New: &it}})
	return false, err
}
