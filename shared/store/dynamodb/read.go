package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
)

// Get reads one live item with a strongly consistent read.
func (s *Store) Get(ctx context.Context, k store.Key) (store.Item, error) {
	it, ok, err := s.get(ctx, k)
	if err != nil {
		return store.Item{}, err
	}
	if !ok {
		return store.Item{}, store.ErrNotFound
	}
	return it, nil
}

func (s *Store) get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyAttrs(k),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return store.Item{}, false, fmt.Errorf("dynamodb: get %s/%s: %w", k.PK, k.SK, err)
	}
	it, ok, err := s.live(out.Item)
	if err != nil {
		return store.Item{}, false, fmt.Errorf("dynamodb: get %s/%s: %w", k.PK, k.SK, err)
	}
	return it, ok, nil
}

// batchGetSize is BatchGetItem's limit of keys per request.
const batchGetSize = 100

// GetMany reads items with BatchGetItem, 100 keys a request. Like the API it
// is not a snapshot: each item is read on its own, consistently.
func (s *Store) GetMany(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	found := make(map[store.Key]store.Item, len(keys))
	var uniq []store.Key
	seen := make(map[store.Key]bool, len(keys))
	for _, k := range keys {
		if !seen[k] { // BatchGetItem refuses duplicate keys
			seen[k] = true
			uniq = append(uniq, k)
		}
	}
	for start := 0; start < len(uniq); start += batchGetSize {
		chunk := uniq[start:min(start+batchGetSize, len(uniq))]
		req := make([]map[string]types.AttributeValue, len(chunk))
		for i, k := range chunk {
			req[i] = keyAttrs(k)
		}
		pending := map[string]types.KeysAndAttributes{s.table: {Keys: req, ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(pending) > 0; attempt++ {
			if attempt > 0 {
				if err := clock.Sleep(ctx, backoff(attempt)); err != nil {
					return nil, fmt.Errorf("dynamodb: get many: %w", err)
				}
			}
			out, err := s.client.BatchGetItem(ctx, &ddb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("dynamodb: get many: %w", err)
			}
			for _, m := range out.Responses[s.table] {
				it, ok, err := s.live(m)
				if err != nil {
					return nil, fmt.Errorf("dynamodb: get many: %w", err)
				}
				if ok {
					found[it.Key()] = it
				}
			}
			pending = out.UnprocessedKeys
			if len(pending) > 0 && attempt >= 10 {
				return nil, errors.New("dynamodb: get many: keys still unprocessed after 10 retries")
			}
		}
	}
	items := make([]store.Item, len(keys))
	for i, k := range keys {
		items[i] = found[k]
	}
	return items, nil
}

// Query reads live items of one partition in sort-key order. Expired items
// are dropped here, so it pages on until it has Limit live items or the
// partition range ends.
func (s *Store) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if q.Limit <= 0 {
		return nil, errors.New("dynamodb: query needs a positive limit")
	}
	e := newExpr()
	cond := e.name("pk") + " = " + e.value(str(q.PK))
	if q.Prefix != "" {
		cond += " AND begins_with(" + e.name("sk") + ", " + e.value(str(q.Prefix)) + ")"
	}
	in := &ddb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String(cond),
		ExpressionAttributeNames:  e.names,
		ExpressionAttributeValues: e.values,
		ScanIndexForward:          aws.Bool(!q.Desc),
		ConsistentRead:            aws.Bool(true),
	}
	if q.After != "" {
		// DynamoDB refuses a start key outside the key condition's range, so
		// an After beyond the prefix range is resolved here.
		switch {
		case q.Prefix == "" || strings.HasPrefix(q.After, q.Prefix):
			in.ExclusiveStartKey = keyAttrs(store.Key{PK: q.PK, SK: q.After})
		case (q.After < q.Prefix) == q.Desc:
			return nil, nil // every prefixed key is on the wrong side of After
		}
	}
	var out []store.Item
	for {
		in.Limit = aws.Int32(int32(min(q.Limit-len(out), 1000)))
		page, err := s.client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("dynamodb: query %s: %w", q.PK, err)
		}
		for _, m := range page.Items {
			it, ok, err := s.live(m)
			if err != nil {
				return nil, fmt.Errorf("dynamodb: query %s: %w", q.PK, err)
			}
			if ok {
				out = append(out, it)
			}
		}
		if len(out) >= q.Limit || len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}
