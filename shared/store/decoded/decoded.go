// Package decoded keeps the decoded form of stored documents, and their
// encoded API views, so that an item read again unchanged is not decoded
// again.
package decoded

import (
	"bytes"
	"sync"

	"github.com/moku/sellerapi/shared/store"
)

// Cache remembers the decoded form of documents so that an item read
// again unchanged is not decoded again. An entry answers only for the very
// version and bytes it was decoded from (compared in full on every hit),
// so it can never be stale: it saves decoding, never a read. Values it
// hands out are shared between callers, who must not modify them (nor the
// slices, maps or pointers inside). A nil *Cache decodes every time.
type Cache[T any] struct {
	mu  sync.Mutex
	max int
	m   map[store.Key]decodedDoc[T]
	// size is the bytes of documents and views the entries hold; past
	// maxDecodedBytes entries are evicted, so that a tenant's large
	// documents or many views cannot grow a process without bound.
	size int
}

// maxDecodedBytes bounds the documents' and views' bytes one cache holds
// (their decoded values are of the same order).
const maxDecodedBytes = 16 << 20

type decodedDoc[T any] struct {
	version int64
	data    []byte
	v       T
	// views are encodings of v (see View), made on first use; guarded by
	// the cache's mutex.
	views map[any][]byte
}

// size is the bytes the entry holds: its document and its views.
func (e decodedDoc[T]) size() int {
	n := len(e.data)
	for _, b := range e.views {
		n += len(b)
	}
	return n
}

// holds reports whether the entry was decoded from its version and bytes.
func (e decodedDoc[T]) holds(it store.Item) bool {
	return e.version == it.Version && bytes.Equal(e.data, it.Data)
}

// maxViews bounds the views one document keeps: past it they start over
// (views keyed by counters that change leave old ones behind).
const maxViews = 256

// New returns a cache of at most max documents; past that, each new
// document evicts an arbitrary one.
func New[T any](max int) *Cache[T] {
	return &Cache[T]{max: max, m: make(map[store.Key]decodedDoc[T], max)}
}

// Decode returns decode(it), from the cache when it holds its version and
// bytes. Failures are not remembered.
func (d *Cache[T]) Decode(it store.Item, decode func(store.Item) (T, error)) (T, error) {
	if d == nil {
		return decode(it)
	}
	k := it.Key()
	d.mu.Lock()
	e, ok := d.m[k]
	d.mu.Unlock()
	if ok && e.holds(it) {
		return e.v, nil
	}
	v, err := decode(it)
	if err != nil {
		return v, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if old, held := d.m[k]; held {
		d.size -= old.size()
	} else if len(d.m) >= d.max {
		d.evictOne(k)
	}
	// A copy, so that a caller reusing its buffer cannot change what an
	// entry answers for.
	d.m[k] = decodedDoc[T]{version: it.Version, data: bytes.Clone(it.Data), v: v}
	d.size += len(it.Data)
	d.fit(k)
	return v, nil
}

// evictOne drops an arbitrary entry other than keep. Called with d.mu held.
func (d *Cache[T]) evictOne(keep store.Key) bool {
	for old, e := range d.m {
		if old != keep {
			d.size -= e.size()
			delete(d.m, old)
			return true
		}
	}
	return false
}

// fit evicts entries other than keep until the cache holds no more than
// maxDecodedBytes. Called with d.mu held.
func (d *Cache[T]) fit(keep store.Key) {
	for d.size > maxDecodedBytes && d.evictOne(keep) {
	}
}

// View returns encode(v) for v = decode(it), from the cache when the entry
// for its version and bytes holds the view named key. An encoding is
// built from the document and key alone: key must name, as a comparable
// value, everything besides the document that encode reads (an item's
// counters, say), so that the entry, which answers only for the bytes it
// was decoded from, can never serve a stale view. The bytes returned are
// shared and must not be modified. A nil *Decoded encodes every time.
func (d *Cache[T]) View(it store.Item, decode func(store.Item) (T, error), key any, encode func(T) ([]byte, error)) ([]byte, error) {
	if d == nil {
		v, err := decode(it)
		if err != nil {
			return nil, err
		}
		return encode(v)
	}
	k := it.Key()
	d.mu.Lock()
	if e, ok := d.m[k]; ok && e.holds(it) {
		if b, ok := e.views[key]; ok {
			d.mu.Unlock()
			return b, nil
		}
	}
	d.mu.Unlock()
	v, err := d.Decode(it, decode)
	if err != nil {
		return nil, err
	}
	b, err := encode(v)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.m[k]; ok && e.holds(it) {
		if e.views == nil || len(e.views) >= maxViews {
			d.size -= e.size() - len(e.data)
			e.views = make(map[any][]byte)
			d.m[k] = e
		}
		if old, ok := e.views[key]; ok {
			d.size -= len(old)
		}
		e.views[key] = b
		d.size += len(b)
		d.fit(k)
	}
	return b, nil
}

// Bytes is how many bytes of documents and views the cache holds.
func (d *Cache[T]) Bytes() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.size
}

// Len is how many documents the cache holds.
func (d *Cache[T]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}

// ViewCount is how many views the document under k holds.
func (d *Cache[T]) ViewCount(k store.Key) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m[k].views)
}
