package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
)

// addForm is how an OpAdd is written. The embedded store replaces an expired
// item with a fresh one holding only what the add gives (deltas, and the
// document, version and expiry when set), which an UPDATE can't do
// (it would keep the expired item's attributes), so an add that may meet an
// expired item is tried as an update that refuses expired items and, when
// that fails, as a put of the fresh item that requires it to be absent.
type addForm int

const (
	addUpdate addForm = iota // ADD to a live or absent item
	addFresh                 // put a fresh item over an absent or expired one
)

// write is one operation translated to DynamoDB.
type write struct {
	put    *types.Put
	delete *types.Delete
	update *types.Update
	check  *types.ConditionCheck
	// synthetic is set when the operation's only condition is the one the
	// adapter added to choose an add form: its failure means "try the other
	// form", not a failed condition of the caller.
	synthetic bool
}

func (s *Store) translate(op store.Op, form addForm, now int64) write {
	k := op.Item.Key()
	e := newExpr()
	table := aws.String(s.table)
	switch op.Kind {
	case store.OpPut:
		c := e.cond(op.Cond, now)
		return write{put: &types.Put{TableName: table, Item: s.codec.marshal(op.Item),
			ConditionExpression: optional(c), ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}}
	case store.OpDelete:
		c := e.cond(op.Cond, now)
		return write{delete: &types.Delete{TableName: table, Key: keyAttrs(k),
			ConditionExpression: optional(c), ExpressionAttributeNames: e.namesOrNil(), ExpressionAttributeValues: e.valuesOrNil()}}
	case store.OpCheck:
		c := e.cond(op.Cond, now)
		if c == "" {
			// A condition check needs an expression; this one always holds.
			pk := e.name("pk")
			c = "attribute_exists(" + pk + ") OR attribute_not_exists(" + pk + ")"
		}
		return write{check: &types.ConditionCheck{TableName: table, Key: keyAttrs(k),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.valuesOrNil()}}
	}
	// OpAdd.
	synthetic := !op.Cond.Absent && !needsLive(op.Cond)
	if op.Cond.Absent || (synthetic && form == addFresh) {
		it := store.Item{PK: k.PK, SK: k.SK, Version: op.Item.Version, Data: op.Item.Data, Nums: op.Deltas, ExpiresAt: op.Item.ExpiresAt}
		c := e.cond(op.Cond, now)
		if synthetic {
			c = e.absent(now)
		}
		return write{synthetic: synthetic, put: &types.Put{TableName: table, Item: s.codec.marshal(it),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
	}
	upd := s.codec.addExpr(e, op.Item, op.Deltas)
	c := e.cond(op.Cond, now)
	if synthetic {
		c = e.notExpired(now)
	}
	return write{synthetic: synthetic, update: &types.Update{TableName: table, Key: keyAttrs(k), UpdateExpression: aws.String(upd),
		ConditionExpression: aws.String(c), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
}

// addExpr is the update expression of an add: it adds the deltas and
// replaces the document, version and expiry when the operation gives them.
// Without a version it sets v to 0 when missing, so that an item the add
// creates looks like the embedded store's and the expression is never empty.
// A document set plain removes a packed one, and the other way round.
func (c *codec) addExpr(e *expr, it store.Item, deltas map[string]int64) string {
	v := e.name("v")
	var set []string
	if it.Version != 0 {
		set = append(set, v+" = "+e.value(num(it.Version)))
	} else {
		set = append(set, v+" = if_not_exists("+v+", "+e.value(num(0))+")")
	}
	if it.ExpiresAt != 0 {
		set = append(set, e.name("ttl")+" = "+e.value(num(it.ExpiresAt)))
	}
	var remove string
	switch {
	case len(it.Data) > 0:
		name, v := c.document(it.Data)
		other := packedAttr
		if name == packedAttr {
			other = docAttr
		}
		set = append(set, e.name(name)+" = "+e.value(&types.AttributeValueMemberB{Value: v}))
		remove = " REMOVE " + e.name(other)
	case it.Data != nil:
		// An empty document is stored as none.
		remove = " REMOVE " + e.name(docAttr) + ", " + e.name(packedAttr)
	}
	upd := "SET " + strings.Join(set, ", ") + remove
	if len(deltas) > 0 {
		names := make([]string, 0, len(deltas))
		for n := range deltas {
			names = append(names, n)
		}
		sort.Strings(names)
		adds := make([]string, len(names))
		for i, n := range names {
			adds[i] = e.name(n) + " " + e.value(num(deltas[n]))
		}
		upd += " ADD " + strings.Join(adds, ", ")
	}
	return upd
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// maxAttempts bounds the retries of a write: after transaction conflicts, or
// after an add or increment found the item in another state than it guessed
// (which takes a concurrent writer each time).
const maxAttempts = 8

// conflictAttempts bounds the attempts of a transaction that keeps losing to
// concurrent transactions on the same items (hot stock under a checkout
// rush): many short, jittered waits serialise the contenders well inside a
// request's deadline.
const conflictAttempts = 20

// Transact applies the operations atomically: a single put, delete or add as
// its own conditional request, anything else as TransactWriteItems.
func (s *Store) Transact(ctx context.Context, ops ...store.Op) error {
	if s.hook != nil {
		ops = s.hook(ctx, ops)
	}
	if err := store.Validate(ops); err != nil {
		return err
	}
	if len(ops) == 1 && ops[0].Kind != store.OpCheck {
		return s.single(ctx, ops[0])
	}
	forms := make([]addForm, len(ops))
	var lastErr error
	for attempt := 0; attempt < conflictAttempts; attempt++ {
		now := s.now().Unix()
		items := make([]types.TransactWriteItem, len(ops))
		synthetic := make([]bool, len(ops))
		for i, op := range ops {
			w := s.translate(op, forms[i], now)
			items[i] = types.TransactWriteItem{Put: w.put, Delete: w.delete, Update: w.update, ConditionCheck: w.check}
			synthetic[i] = w.synthetic
		}
		_, err := s.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return fmt.Errorf("dynamodb: transact %d operations: %w", len(ops), err)
		}
		var failed, flipped []int
		retryable := true
		for i, r := range tce.CancellationReasons {
			switch code := aws.ToString(r.Code); code {
			case "", "None":
			case "ConditionalCheckFailed":
				if i < len(ops) && synthetic[i] {
					flipped = append(flipped, i)
				} else {
					failed = append(failed, i)
				}
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
			default:
				retryable = false
			}
		}
		switch {
		case len(failed) > 0:
			return &store.ConditionError{Failed: failed}
		case len(flipped) > 0:
			for _, i := range flipped {
				forms[i] = 1 - forms[i]
			}
			lastErr = err
			continue
		case !retryable || len(tce.CancellationReasons) == 0:
			return fmt.Errorf("dynamodb: transact %d operations: %w", len(ops), err)
		}
		lastErr = err
		if err := clock.Sleep(ctx, conflictBackoff(attempt+1)); err != nil {
			return fmt.Errorf("dynamodb: transact %d operations: %w", len(ops), err)
		}
	}
	return fmt.Errorf("dynamodb: transact %d operations: gave up after %d attempts: %w", len(ops), conflictAttempts, lastErr)
}

// single writes one operation with PutItem, DeleteItem or UpdateItem, which
// are atomic on their own and cheaper than a transaction.
func (s *Store) single(ctx context.Context, op store.Op) error {
	k := op.Item.Key()
	form := addUpdate
	for attempt := 0; attempt < maxAttempts; attempt++ {
		w := s.translate(op, form, s.now().Unix())
		var err error
		switch {
		case w.put != nil:
			_, err = s.client.PutItem(ctx, &ddb.PutItemInput{TableName: w.put.TableName, Item: w.put.Item,
				ConditionExpression: w.put.ConditionExpression, ExpressionAttributeNames: w.put.ExpressionAttributeNames,
				ExpressionAttributeValues: w.put.ExpressionAttributeValues})
		case w.delete != nil:
			_, err = s.client.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: w.delete.TableName, Key: w.delete.Key,
				ConditionExpression: w.delete.ConditionExpression, ExpressionAttributeNames: w.delete.ExpressionAttributeNames,
				ExpressionAttributeValues: w.delete.ExpressionAttributeValues})
		case w.update != nil:
			_, err = s.client.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: w.update.TableName, Key: w.update.Key,
				UpdateExpression: w.update.UpdateExpression, ConditionExpression: w.update.ConditionExpression,
				ExpressionAttributeNames: w.update.ExpressionAttributeNames, ExpressionAttributeValues: w.update.ExpressionAttributeValues})
		}
		if err == nil {
			return nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return fmt.Errorf("dynamodb: write %s/%s: %w", k.PK, k.SK, err)
		}
		if !w.synthetic {
			return &store.ConditionError{Failed: []int{0}}
		}
		form = 1 - form
	}
	return fmt.Errorf("dynamodb: write %s/%s: item kept changing state after %d attempts", k.PK, k.SK, maxAttempts)
}

// Increment adds delta to attr if its value is below below, creating the
// item (with expiresAt) when it is absent or expired. The common cases take
// one UpdateItem; when its condition fails, the old item that DynamoDB
// returns tells whether the bound was reached or the item must be recreated.
func (s *Store) Increment(ctx context.Context, k store.Key, attr string, delta, below, expiresAt int64) (int64, error) {
	if err := store.ValidAttr(attr); err != nil {
		return 0, err
	}
	fail := func(err error) (int64, error) {
		return 0, fmt.Errorf("dynamodb: increment %s/%s: %w", k.PK, k.SK, err)
	}
	startsBelow := 0 < below // a new counter starts at zero
	lt := store.Bound{Attr: attr, Cmp: store.LT, Value: below}
	// incAuto adds to a live item under the bound or creates an absent one;
	// incLive only adds to a live item; incFresh replaces an expired item (or
	// creates an absent one) with a new counter.
	const (
		incAuto = iota
		incLive
		incFresh
	)
	mode := incAuto
	for attempt := 0; attempt < maxAttempts; attempt++ {
		now := s.now().Unix()
		e := newExpr()
		var err error
		var ccf *types.ConditionalCheckFailedException
		switch mode {
		case incFresh:
			it := store.Item{PK: k.PK, SK: k.SK, Nums: map[string]int64{attr: delta}, ExpiresAt: expiresAt}
			_, err = s.client.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(s.table), Item: s.codec.marshal(it),
				ConditionExpression: aws.String(e.absent(now)), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values})
			if err == nil {
				return delta, nil
			}
		default:
			// Like the embedded store, an increment keeps a live item's
			// expiry. incAuto's if_not_exists would give one to a live item
			// that has none, so when there is an expiry to set it only takes
			// live items that already have one, and incLive the others.
			a, v, ttl := e.name(attr), e.name("v"), e.name("ttl")
			upd := "SET " + v + " = if_not_exists(" + v + ", " + e.value(num(0)) + ")"
			cond := e.exists(now) + " AND " + e.bound(lt)
			if mode == incAuto {
				if expiresAt != 0 {
					upd += ", " + ttl + " = if_not_exists(" + ttl + ", " + e.value(num(expiresAt)) + ")"
					cond += " AND attribute_exists(" + ttl + ")"
				}
				if startsBelow {
					cond = "attribute_not_exists(" + e.name("pk") + ") OR (" + cond + ")"
				}
			}
			upd += " ADD " + a + " " + e.value(num(delta))
			var out *ddb.UpdateItemOutput
			out, err = s.client.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(s.table), Key: keyAttrs(k),
				UpdateExpression: aws.String(upd), ConditionExpression: aws.String(cond),
				ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values,
				ReturnValues: types.ReturnValueUpdatedNew, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
			if err == nil {
				it, err := s.codec.unmarshal(out.Attributes)
				if err != nil {
					return fail(err)
				}
				return it.Nums[attr], nil
			}
		}
		if !errors.As(err, &ccf) {
			return fail(err)
		}
		// Learn the state that failed the condition.
		var it store.Item
		var ok bool
		if ccf.Item != nil {
			it, ok, err = s.live(ccf.Item)
		} else {
			it, ok, err = s.get(ctx, k)
		}
		if err != nil {
			return fail(err)
		}
		switch {
		case !ok && !startsBelow, ok && !lt.Holds(it.Nums[attr]):
			return 0, &store.ConditionError{Failed: []int{0}}
		case !ok:
			mode = incFresh
		case expiresAt != 0 && it.ExpiresAt == 0:
			mode = incLive
		default:
			mode = incAuto
		}
	}
	return fail(fmt.Errorf("counter kept changing state after %d attempts", maxAttempts))
}

// conflictBackoff is the jittered delay before retry n (from 1) of a
// transaction that lost a conflict: 5 ms doubling up to 160 ms.
func conflictBackoff(n int) time.Duration {
	d := 5 * time.Millisecond << min(n-1, 5)
	return d/2 + rand.N(d/2+1)
}

// backoff is a jittered exponential delay for retry n (from 1).
func backoff(n int) time.Duration {
	d := 10 * time.Millisecond << min(n, 6)
	return d/2 + rand.N(d/2+1)
}
