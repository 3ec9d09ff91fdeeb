package dynamodb

// Documents stored compressed. DynamoDB bills a write a unit per KB of
// the item (twice in a transaction), so an item's size in KB is what it
// costs: a variable product's item, its JSON document and the counters of
// its inventory items, weighed 2.1 KB and cost 6 units in every adjustment
// and reservation. The adapter stores a document as DEFLATE with a preset
// dictionary of the documents' common JSON when that makes it smaller, in
// an attribute of its own (packedAttr), and the plain document (docAttr)
// otherwise. Readers take either; items written before keep docAttr.

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/moku/sellerapi/shared/store"
)

const (
	// docAttr holds a document as the port gave it.
	docAttr = "d"
	// packedAttr holds a document packed: a format byte, then the
	// document compressed in that format. Its name cannot be a numeric
	// attribute's (those are lowercase, store.ValidAttr). When an item has
	// both (an update by a build from before packing kept a packed
	// document beside the plain one it set), docAttr is the newer: this
	// adapter writes one and removes the other in the same request.
	packedAttr = "Z"
)

// Formats of a packed document. A format, once it has written items, never
// changes: a new dictionary is a new format byte, and readers keep every
// format they ever wrote.
const (
	// formatDict1 is raw DEFLATE (RFC 1951) with dict1 as its preset
	// dictionary.
	formatDict1 byte = 1
)

// minPacked is the shortest document worth compressing. Packing costs a
// write about 60 µs of CPU (BenchmarkPack; most of it is resetting the
// compressor's tables), so documents that leave their item under 1 KB
// anyway (events, stock effects, most receipts: 350–650 bytes) stay plain:
// an item with a shorter document crosses 1 KB only with more than about
// 40 counters, which only a product of ten or more inventory items has,
// and its document is far longer.
const minPacked = 512

// packLevel is DEFLATE's level: BestSpeed ignores a preset dictionary, and
// on documents of a few KB the higher levels buy nothing (measured:
// BenchmarkPack).
const packLevel = 6

// dict1 is format 1's dictionary: the JSON that the stored documents share
// (keys and common values of products, events, stock effects, receipts,
// reservations and connections), the most common last, where DEFLATE's
// distances are shortest. NEVER EDIT IT: packed items in every table decode
// with it (TestDict1IsFrozen pins its hash). Add a format instead.
const dict1 = `"external_account_id":"","display_name":"","provider":"marketplace_a",` +
	`"roles":{"catalog":"destination","base_price":"destination","inventory":"destination","order_ingress":"enabled","external_order_fulfillment":"moku"},` +
	`"health":{"state":"unknown","last_observed_at":null,"last_success_at":null,"blockers":[]},"active_listing_count":0,"active_reservation_count":0,` +
	`"unresolved_external_order_count":0,"active_channel_fulfillment_count":0,` +
	`"connection_id":"conn_","reservation_id":"res_","quantity":1,"owner":"moku","reference":null,"expires_at":"20","committed_at":null,"released_at":null,"expired_at":null,` +
	`"location_id":"default","stock_pool_id":"default","product_name":"","product_image_url":"https://","variation_options":{},` +
	`"on_hand":0,"reserved":0,"available":0,"status":"in_stock",` +
	`"on_hand_delta":0,"reserved_delta":0,"before":{"on_hand":0,"reserved":0},"after":{"on_hand":0,"reserved":0},` +
	`"cause":{"type":"adjustment","id":null,"action":"adjusted","record_key":null},"request_id":"req_",` +
	`{"id":"evt_","type":"inventory_item.adjusted","created_at":"20","vendor_id":"ven_","resource":{"type":"inventory_item","id":"inv_"},` +
	`"data":{"product_id":"prd_","inventory_item_ids":["inv_"],"revision":1,"version":1},"request":{"id":"req_","idempotency_key":""}}` +
	`{"fingerprint":"","status":201,"body":{"data":{"id":"prd_","vendor_id":"ven_","catalog_status":"active","discount":0,` +
	`{"id":"prd_","vendor_id":"ven_","status":"draft","kind":"simple","name":"","slug":"","description":"",` +
	`"price":0,"original_price":null,"category":"","subcategory":"","image_urls":["https://"],"badge":null,` +
	`"options":{},"default_options":null,"features":[],"related_product_ids":[],"tags":null,"sku":null,` +
	`"weight_kg":0,"source_region":null,"created_at":"20","updated_at":"20","published_at":null,"archived_at":null,"next_seq":1}` +
	`"variations":[{"id":"var_","status":"active","options":{"size":""},"price":0,"original_price":null,"sku":"","seq":1},` +
	`{"id":"var_","status":"active","options":{"size":""},"price":0,"original_price":null,"sku":"","seq":`

// maxUnpacked bounds what a packed document may expand to: no item holds a
// document larger than an item.
const maxUnpacked = store.MaxItemBytes

// codec packs and unpacks documents, reusing its compressors (a DEFLATE
// writer holds about 1 MB of tables). The zero value works; a nil *codec
// works too, without reuse.
type codec struct {
	packers sync.Pool // *packer
	readers sync.Pool // flate reader over dict1
}

// packer is a DEFLATE writer over dict1 and the buffer it writes to, kept
// together so that reusing it takes one reset of its tables.
type packer struct {
	w   *flate.Writer
	out bytes.Buffer
}

// pack returns the document packed, or nil when packing would not make it
// smaller.
func (c *codec) pack(doc []byte) []byte {
	if len(doc) < minPacked {
		return nil
	}
	var p *packer
	if c != nil {
		p, _ = c.packers.Get().(*packer)
	}
	if p == nil {
		p = &packer{}
		w, err := flate.NewWriterDict(&p.out, packLevel, []byte(dict1))
		if err != nil {
			return nil // only for a bad level
		}
		p.w = w
	} else {
		p.out.Reset()
		p.w.Reset(&p.out)
	}
	p.out.WriteByte(formatDict1)
	_, err := p.w.Write(doc)
	if err == nil {
		err = p.w.Close()
	}
	var packed []byte
	if err == nil && p.out.Len() < len(doc) {
		packed = bytes.Clone(p.out.Bytes())
	}
	if c != nil {
		c.packers.Put(p)
	}
	return packed
}

// errPacked reports a packed document that does not decode.
var errPacked = errors.New("dynamodb: packed document")

// unpack decodes a packed document.
func (c *codec) unpack(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", errPacked)
	}
	if b[0] != formatDict1 {
		return nil, fmt.Errorf("%w: unknown format %d", errPacked, b[0])
	}
	src := bytes.NewReader(b[1:])
	var r io.ReadCloser
	if c != nil {
		r, _ = c.readers.Get().(io.ReadCloser)
	}
	if r == nil {
		r = flate.NewReaderDict(src, []byte(dict1))
	} else if err := r.(flate.Resetter).Reset(src, []byte(dict1)); err != nil {
		return nil, fmt.Errorf("%w: %w", errPacked, err)
	}
	// JSON packs to about a quarter of its size: room for that at once.
	out := bytes.NewBuffer(make([]byte, 0, min(4*len(b)+bytes.MinRead, maxUnpacked+1)))
	_, err := out.ReadFrom(io.LimitReader(r, maxUnpacked+1))
	doc := out.Bytes()
	if c != nil {
		c.readers.Put(r)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", errPacked, err)
	case len(doc) > maxUnpacked:
		return nil, fmt.Errorf("%w: expands past %d bytes", errPacked, maxUnpacked)
	case src.Len() > 0:
		return nil, fmt.Errorf("%w: %d bytes after the stream's end", errPacked, src.Len())
	}
	return doc, nil
}

// StoredSize is the size DynamoDB counts for it as this store writes it:
// store.ItemSize with the document packed when the store packs it. That
// size, in KB rounded up, is what a write of it bills.
func (s *Store) StoredSize(it store.Item) int {
	if len(it.Data) == 0 {
		return store.ItemSize(it)
	}
	name, v := s.codec.document(it.Data)
	plain := it
	plain.Data = nil
	return store.ItemSize(plain) + len(name) + len(v)
}
