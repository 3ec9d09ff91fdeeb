package dynamodb

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// productDoc is a variable product's document of eight variations, as the
// catalog stores it: 1,827 bytes.
const productDoc = `{"id":"prd_06ebgilm617mc9qsskh5b592vk","vendor_id":"ven_enaia4wjldybiujnsiaoxpo34e","status":"draft","kind":"variable","name":"Linen shirt","slug":"probe","description":"A shirt of washed linen.","price":4500,"original_price":6000,"category":"apparel","subcategory":"shirts","image_urls":["https://cdn.example.com/shirt.jpg"],"badge":null,"options":{"size":["s000","s001","s002","s003","s004","s005","s006","s007"]},"default_options":null,"variations":[{"id":"var_sji3pt52xf2b4hw6nsujrfiiqa","status":"active","options":{"size":"s000"},"price":4500,"original_price":null,"sku":"V-s000","seq":1},{"id":"var_k6zmbjrupspyjfdxicxqpmad7u","status":"active","options":{"size":"s001"},"price":4501,"original_price":null,"sku":"V-s001","seq":2},{"id":"var_fqavjnwf2pr7hkdo6ggskhegm4","status":"active","options":{"size":"s002"},"price":4502,"original_price":null,"sku":"V-s002","seq":3},{"id":"var_l3f7ruxww5o6fq52m4ri2rbaca","status":"active","options":{"size":"s003"},"price":4503,"original_price":null,"sku":"V-s003","seq":4},{"id":"var_cupccabno3objzx3xyzc5f4z7u","status":"active","options":{"size":"s004"},"price":4504,"original_price":null,"sku":"V-s004","seq":5},{"id":"var_2c2yoevhlqwf4vw57expa3st2q","status":"active","options":{"size":"s005"},"price":4505,"original_price":null,"sku":"V-s005","seq":6},{"id":"var_vz5vbzum57eligiv7kzcsrvwri","status":"active","options":{"size":"s006"},"price":4506,"original_price":null,"sku":"V-s006","seq":7},{"id":"var_sywszmlpxjkjcfospcvgjgrp24","status":"active","options":{"size":"s007"},"price":4507,"original_price":null,"sku":"V-s007","seq":8}],"features":["washed linen"],"related_product_ids":[],"tags":null,"sku":null,"weight_kg":0.3,"source_region":null,"created_at":"2026-03-04T10:00:30Z","updated_at":"2026-03-04T10:00:30Z","published_at":null,"archived_at":null,"next_seq":9}`

// effectDoc is an adjustment's stock effect (490 bytes).
const effectDoc = `{"id":"eff_06ebgilm617mc9qsskh5b592vk_001_000000000002","vendor_id":"ven_enaia4wjldybiujnsiaoxpo34e","inventory_item_id":"inv_06ebgilm617mc9qsskh5b592vk_001","product_id":"prd_06ebgilm617mc9qsskh5b592vk","on_hand_delta":1000,"reserved_delta":0,"before":{"on_hand":0,"reserved":0},"after":{"on_hand":1000,"reserved":0},"version":2,"cause":{"type":"adjustment","id":null,"action":"adjusted","record_key":null},"request_id":"req_ma2thx5dqsjgem4ov6vxlnsm3m","created_at":"2026-03-04T10:00:30Z"}`

// dict1's hash: stored items decode with it, so it can never change.
const dict1SHA256 = "a29577cee72bea7a9631e7fa711b3ddb6a7e42d5d7c043da784079b616fa0690"

func TestDict1IsFrozen(t *testing.T) {
	sum := sha256.Sum256([]byte(dict1))
	if got := hex.EncodeToString(sum[:]); got != dict1SHA256 {
		t.Fatalf("dict1 hashes to %s: packed documents in every table decode with it, so it must never change; add a format with a new dictionary instead", got)
	}
}

func TestPackRoundTrips(t *testing.T) {
	c := &codec{}
	for _, doc := range []string{productDoc, effectDoc + effectDoc, strings.Repeat(`{"x":"<&>"}`, 30000)} {
		for range 2 { // a fresh writer and reader, then reused ones
			p := c.pack([]byte(doc))
			if p == nil || p[0] != formatDict1 || len(p) >= len(doc) {
				t.Fatalf("pack of %d bytes: %d bytes, want fewer in format 1", len(doc), len(p))
			}
			got, err := c.unpack(p)
			if err != nil || string(got) != doc {
				t.Fatalf("unpack: %v, %d bytes of %d", err, len(got), len(doc))
			}
			if got, err := (*codec)(nil).unpack(p); err != nil || string(got) != doc {
				t.Fatalf("unpack without reuse: %v", err)
			}
		}
	}
}

// The product document of eight variations packs to well under half its
// size: with its 32 counters and keys, the item is under 1 KB.
func TestProductDocumentPacksUnderHalf(t *testing.T) {
	p := (&codec{}).pack([]byte(productDoc))
	if len(p) == 0 || len(p) > 550 {
		t.Fatalf("product document of %d bytes packs to %d, want at most 550", len(productDoc), len(p))
	}
}

func TestPackKeepsSmallAndIncompressibleDocuments(t *testing.T) {
	c := &codec{}
	if name, _ := c.document([]byte(effectDoc)); name != docAttr {
		t.Errorf("a stock effect of %d bytes was packed", len(effectDoc))
	}
	var noise []byte
	for sum := sha256.Sum256(nil); len(noise) < 2000; sum = sha256.Sum256(sum[:]) {
		noise = append(noise, sum[:]...)
	}
	if name, v := c.document(noise); name != docAttr || !bytes.Equal(v, noise) {
		t.Errorf("bytes that do not compress were stored as %s of %d bytes", name, len(v))
	}
}

func TestUnpackRefusesBadInput(t *testing.T) {
	c := &codec{}
	good := c.pack([]byte(productDoc))
	var bomb bytes.Buffer
	bomb.WriteByte(formatDict1)
	w, _ := flate.NewWriterDict(&bomb, flate.BestCompression, []byte(dict1))
	w.Write(make([]byte, maxUnpacked+1))
	w.Close()
	for name, b := range map[string][]byte{
		"empty":          nil,
		"unknown format": append([]byte{2}, good[1:]...),
		"truncated":      good[:len(good)/2],
		"trailing bytes": append(append([]byte{}, good...), 0),
		"too large":      bomb.Bytes(),
	} {
		if _, err := c.unpack(b); !errors.Is(err, errPacked) {
			t.Errorf("%s: %v, want errPacked", name, err)
		}
	}
}

// FuzzUnpack: a packed document comes from our own table, but its decoder
// must refuse what does not decode, never panic or expand past an item.
func FuzzUnpack(f *testing.F) {
	c := &codec{}
	f.Add(c.pack([]byte(productDoc)))
	f.Add(c.pack([]byte(effectDoc + effectDoc)))
	f.Add([]byte{formatDict1})
	f.Add([]byte{formatDict1, 0x03, 0x00})
	f.Add([]byte{2, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := c.unpack(b)
		if err != nil {
			if !errors.Is(err, errPacked) {
				t.Fatalf("error %v is not errPacked", err)
			}
			return
		}
		if len(doc) > maxUnpacked {
			t.Fatalf("unpacked to %d bytes", len(doc))
		}
	})
}

// FuzzPack: whatever the document, what pack stores unpacks to it, and it
// is smaller.
func FuzzPack(f *testing.F) {
	f.Add([]byte(productDoc))
	f.Add([]byte(effectDoc))
	f.Add([]byte(strings.Repeat("a", minPacked)))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c := &codec{}
		p := c.pack(doc)
		if p == nil {
			return
		}
		if len(p) >= len(doc) {
			t.Fatalf("packed %d bytes to %d", len(doc), len(p))
		}
		got, err := c.unpack(p)
		if err != nil || !bytes.Equal(got, doc) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// BenchmarkPack is the CPU a write spends packing the product document.
func BenchmarkPack(b *testing.B) {
	c := &codec{}
	doc := []byte(productDoc)
	b.ReportAllocs()
	for b.Loop() {
		c.pack(doc)
	}
}

// BenchmarkUnpack is the CPU a read spends unpacking it.
func BenchmarkUnpack(b *testing.B) {
	c := &codec{}
	p := c.pack([]byte(productDoc))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.unpack(p); err != nil {
			b.Fatal(err)
		}
	}
}
