// Package store is the persistence port: a small, DynamoDB-shaped interface
// over one table of items keyed by a partition key and a sort key. Adapters
// live in sub-packages (sqlite for the embedded mode, dynamodb for AWS) and
// pass the same contract suite in storetest.
//
// An item carries an opaque JSON document, an optimistic version, named
// integer attributes that conditions and atomic additions can use, and an
// optional expiry. Expired items read as absent even before the store's TTL
// sweep deletes them.
package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Item is one record of the table.
type Item struct {
	PK, SK string
	// Version is the optimistic version the item was written with.
	Version int64
	// Data is the JSON document of the record.
	Data []byte
	// Nums are integer attributes usable in conditions and additions.
	Nums map[string]int64
	// ExpiresAt is the TTL in Unix seconds; zero means never.
	ExpiresAt int64
}

// Key names an item.
type Key struct{ PK, SK string }

// Key returns the item's key.
func (it Item) Key() Key { return Key{it.PK, it.SK} }

// Expired reports whether the item's TTL has passed at now.
func (it Item) Expired(now time.Time) bool {
	return it.ExpiresAt != 0 && it.ExpiresAt <= now.Unix()
}

// Cmp is a comparison operator of a bound.
type Cmp string

const (
	LT Cmp = "<"
	LE Cmp = "<="
	GE Cmp = ">="
	GT Cmp = ">"
	EQ Cmp = "="
)

// Bound compares a numeric attribute with a value. A missing attribute
// counts as zero.
type Bound struct {
	Attr  string
	Cmp   Cmp
	Value int64
}

// Holds reports whether the bound holds for v.
func (b Bound) Holds(v int64) bool {
	switch b.Cmp {
	case LT:
		return v < b.Value
	case LE:
		return v <= b.Value
	case GE:
		return v >= b.Value
	case GT:
		return v > b.Value
	case EQ:
		return v == b.Value
	}
	return false
}

// Cond is the precondition of one operation. The zero Cond always holds.
type Cond struct {
	// Absent requires that no live (unexpired) item has the key.
	Absent bool
	// Exists requires a live item with the key.
	Exists bool
	// Version, when HasVersion, requires the live item's version to equal it.
	Version    int64
	HasVersion bool
	// Bounds must all hold on the live item; they imply Exists.
	Bounds []Bound
}

// IfAbsent is the condition for creating an item.
func IfAbsent() Cond { return Cond{Absent: true} }

// IfVersion is the condition for an optimistic update.
func IfVersion(v int64) Cond { return Cond{Exists: true, Version: v, HasVersion: true} }

// OpKind is the kind of a write operation.
type OpKind int

const (
	OpPut    OpKind = iota + 1 // replace the whole item
	OpDelete                   // delete the item
	OpCheck                    // only assert the condition
	OpAdd                      // add deltas to numeric attributes, creating the item if needed; see Op
)

// Op is one action of an atomic transaction.
type Op struct {
	Kind OpKind
	// Item is the full item for OpPut; for OpDelete and OpCheck only its key
	// counts. For OpAdd, a non-nil Data replaces the document, a non-zero
	// Version replaces the version and a non-zero ExpiresAt the expiry, while
	// numeric attributes not in Deltas are kept: a record's document can
	// change without clobbering counters that move concurrently.
	Item Item
	Cond Cond
	// Deltas are the additions of OpAdd.
	Deltas map[string]int64
}

// Put replaces an item under a condition.
func Put(it Item, c Cond) Op { return Op{Kind: OpPut, Item: it, Cond: c} }

// Delete removes an item under a condition.
func Delete(k Key, c Cond) Op { return Op{Kind: OpDelete, Item: Item{PK: k.PK, SK: k.SK}, Cond: c} }

// Check asserts a condition on an item without writing it.
func Check(k Key, c Cond) Op { return Op{Kind: OpCheck, Item: Item{PK: k.PK, SK: k.SK}, Cond: c} }

// Add adds deltas to numeric attributes of an item under a condition.
func Add(k Key, deltas map[string]int64, expiresAt int64, c Cond) Op {
	return Op{Kind: OpAdd, Item: Item{PK: k.PK, SK: k.SK, ExpiresAt: expiresAt}, Deltas: deltas, Cond: c}
}

// Update replaces an item's document and version and adds deltas to its
// numeric attributes, keeping the others, under a condition.
func Update(k Key, data []byte, version int64, deltas map[string]int64, c Cond) Op {
	return Op{Kind: OpAdd, Item: Item{PK: k.PK, SK: k.SK, Data: data, Version: version}, Deltas: deltas, Cond: c}
}

// MaxTransactOps is the most operations one transaction may hold; it is
// DynamoDB's TransactWriteItems limit, kept by both adapters so that code
// that works embedded also works on AWS.
const MaxTransactOps = 100

// Query selects items of one partition whose sort key starts with Prefix,
// in ascending sort-key order, strictly after After when it is set.
type Query struct {
	PK     string
	Prefix string
	After  string
	Limit  int
	// Desc walks in descending sort-key order (strictly before After).
	Desc bool
}

// Store is the persistence port.
type Store interface {
	// Get reads one live item; ErrNotFound when absent or expired.
	Get(ctx context.Context, k Key) (Item, error)
	// GetMany reads several items at once; absent ones come back with a zero
	// PK, in the order of keys.
	GetMany(ctx context.Context, keys []Key) ([]Item, error)
	// Query reads up to Limit live items of one partition.
	Query(ctx context.Context, q Query) ([]Item, error)
	// Transact applies all operations atomically or none. When a condition
	// fails it returns a *ConditionError naming the operations that failed.
	Transact(ctx context.Context, ops ...Op) error
	// Increment atomically adds delta to attr of an item, creating it when
	// absent or expired, provided the value before the addition satisfies
	// below (value < below). It returns the value after the addition, or a
	// *ConditionError when the bound does not hold.
	Increment(ctx context.Context, k Key, attr string, delta, below, expiresAt int64) (int64, error)
	// Close releases the store's resources.
	Close() error
}

// ErrNotFound is returned by Get for an absent or expired item.
var ErrNotFound = errors.New("store: item not found")

// ConditionError reports the operations of a transaction whose conditions
// did not hold. Failed holds their indexes; it may be empty when the backend
// cannot tell which.
type ConditionError struct {
	Failed []int
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("store: condition failed on operations %v", e.Failed)
}

// Has reports whether operation i is among those that failed; when the
// backend could not tell, every operation is suspect.
func (e *ConditionError) Has(i int) bool {
	if len(e.Failed) == 0 {
		return true
	}
	for _, f := range e.Failed {
		if f == i {
			return true
		}
	}
	return false
}

// IsCondition reports whether err is a failed condition.
func IsCondition(err error) bool {
	var ce *ConditionError
	return errors.As(err, &ce)
}

// AsCondition returns the *ConditionError in err, if any.
func AsCondition(err error) (*ConditionError, bool) {
	var ce *ConditionError
	ok := errors.As(err, &ce)
	return ce, ok
}

var attrName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// reserved attribute names that hold the item's own fields.
var reservedAttrs = map[string]bool{"pk": true, "sk": true, "v": true, "d": true, "ttl": true}

// Validate checks the operations of a transaction before any adapter runs
// them, so both adapters refuse the same mistakes.
func Validate(ops []Op) error {
	if len(ops) == 0 {
		return errors.New("store: empty transaction")
	}
	if len(ops) > MaxTransactOps {
		return fmt.Errorf("store: %d operations exceed the limit of %d", len(ops), MaxTransactOps)
	}
	seen := make(map[Key]bool, len(ops))
	for i, op := range ops {
		k := op.Item.Key()
		if k.PK == "" || k.SK == "" {
			return fmt.Errorf("store: operation %d has an empty key", i)
		}
		if seen[k] {
			return fmt.Errorf("store: operation %d touches %s/%s twice", i, k.PK, k.SK)
		}
		seen[k] = true
		if op.Kind < OpPut || op.Kind > OpAdd {
			return fmt.Errorf("store: operation %d has no kind", i)
		}
		for name := range op.Item.Nums {
			if err := ValidAttr(name); err != nil {
				return err
			}
		}
		for name := range op.Deltas {
			if err := ValidAttr(name); err != nil {
				return err
			}
		}
		for _, b := range op.Cond.Bounds {
			if err := ValidAttr(b.Attr); err != nil {
				return err
			}
		}
		if n := opSize(op); n > MaxItemBytes {
			return &ItemTooLargeError{Key: k, Size: n, Limit: MaxItemBytes}
		}
	}
	return nil
}

// ValidAttr checks a numeric attribute name.
func ValidAttr(name string) error {
	if !attrName.MatchString(name) || reservedAttrs[name] {
		return fmt.Errorf("store: invalid attribute name %q", name)
	}
	return nil
}

// ChangeKind says what a change did to an item.
type ChangeKind string

const (
	Inserted ChangeKind = "INSERT"
	Modified ChangeKind = "MODIFY"
	Removed  ChangeKind = "REMOVE"
)

// Change is one item's change, as DynamoDB Streams reports it (with new
// and old images) and as the embedded store's change log records it. The
// pipeline routes changes to work queues.
type Change struct {
	// Seq orders the embedded change log; DynamoDB leaves it zero.
	Seq  int64
	Kind ChangeKind
	Key  Key
	New  *Item
	Old  *Item
}
