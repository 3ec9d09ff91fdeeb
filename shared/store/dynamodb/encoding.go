package dynamodb

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/store"
)

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func keyAttrs(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(k.PK), "sk": str(k.SK)}
}

// marshal encodes an item, its document packed when that makes it
// smaller (packed.go).
func (c *codec) marshal(it store.Item) map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 5+len(it.Nums))
	for name, v := range it.Nums {
		m[name] = num(v)
	}
	m["pk"], m["sk"], m["v"] = str(it.PK), str(it.SK), num(it.Version)
	if len(it.Data) > 0 {
		name, v := c.document(it.Data)
		m[name] = &types.AttributeValueMemberB{Value: v}
	}
	if it.ExpiresAt != 0 {
		m["ttl"] = num(it.ExpiresAt)
	}
	return m
}

// document is the attribute that stores a non-empty document, and its
// value.
func (c *codec) document(doc []byte) (name string, value []byte) {
	if p := c.pack(doc); p != nil {
		return packedAttr, p
	}
	return docAttr, doc
}

// unmarshal decodes an item the adapter wrote, its document plain or
// packed.
func (c *codec) unmarshal(m map[string]types.AttributeValue) (store.Item, error) {
	var it store.Item
	var packed []byte
	for name, av := range m {
		switch v := av.(type) {
		case *types.AttributeValueMemberS:
			switch name {
			case "pk":
				it.PK = v.Value
			case "sk":
				it.SK = v.Value
			}
		case *types.AttributeValueMemberB:
			switch name {
			case docAttr:
				it.Data = v.Value
			case packedAttr:
				packed = v.Value
			}
		case *types.AttributeValueMemberN:
			n, err := strconv.ParseInt(v.Value, 10, 64)
			if err != nil {
				return store.Item{}, fmt.Errorf("attribute %s: %w", name, err)
			}
			switch name {
			case "v":
				it.Version = n
			case "ttl":
				it.ExpiresAt = n
			default:
				if it.Nums == nil {
					it.Nums = make(map[string]int64)
				}
				it.Nums[name] = n
			}
		}
	}
	if packed != nil && it.Data == nil { // a plain document is the newer one
		doc, err := c.unpack(packed)
		if err != nil {
			return store.Item{}, fmt.Errorf("item %s/%s: %w", it.PK, it.SK, err)
		}
		it.Data = doc
	}
	return it, nil
}

// live decodes an item read from the table; ok is false when it is absent
// or expired.
func (s *Store) live(m map[string]types.AttributeValue) (store.Item, bool, error) {
	if len(m) == 0 {
		return store.Item{}, false, nil
	}
	it, err := s.codec.unmarshal(m)
	if err != nil || it.Expired(s.now()) {
		return store.Item{}, false, err
	}
	return it, true, nil
}
