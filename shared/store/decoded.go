package store

import (
	"bytes"
	"sync"
)

// Decoded remembers the decoded form of documents so that an item read
// again unchanged is not decoded again. An entry answers only for the very
// version and bytes it was decoded from (compared in full on every hit),
// so it can never be stale: it saves decoding, never a read. Values it
// hands out are shared between callers, who must not modify them (nor the
// slices, maps or pointers inside). A nil *Decoded decodes every time.
type Decoded[T any] struct {
	mu  sync.Mutex
	max int
	m   map[Key]decodedDoc[T]
}

type decodedDoc[T any] struct {
	version int64
	data    []byte
	v       T
}

// NewDecoded returns a cache of at most max documents; past that, each new
// document evicts an arbitrary one.
func NewDecoded[T any](max int) *Decoded[T] {
	return &Decoded[T]{max: max, m: make(map[Key]decodedDoc[T], max)}
}

// Decode returns decode(it), from the cache when it holds its version and
// bytes. Failures are not remembered.
func (d *Decoded[T]) Decode(it Item, decode func(Item) (T, error)) (T, error) {
	if d == nil {
		return decode(it)
	}
	k := it.Key()
	d.mu.Lock()
	e, ok := d.m[k]
	d.mu.Unlock()
	if ok && e.version == it.Version && bytes.Equal(e.data, it.Data) {
		return e.v, nil
	}
	v, err := decode(it)
	if err != nil {
		return v, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, held := d.m[k]; !held && len(d.m) >= d.max {
		for old := range d.m {
			delete(d.m, old)
			break
		}
	}
	// A copy, so that a caller reusing its buffer cannot change what an
	// entry answers for.
	d.m[k] = decodedDoc[T]{version: it.Version, data: bytes.Clone(it.Data), v: v}
	return v, nil
}

// Len is how many documents the cache holds.
func (d *Decoded[T]) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.m)
}
