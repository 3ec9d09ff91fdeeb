package dynamodb_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// variableProduct is a product of n variations and its item as the catalog
// keeps it: the document and the four counters of each inventory item.
func variableProduct(t *testing.T, n int) store.Item {
	t.Helper()
	type variation struct {
		ID      string            `json:"id"`
		Status  string            `json:"status"`
		Options map[string]string `json:"options"`
		Price   int               `json:"price"`
		Orig    *int              `json:"original_price"`
		SKU     string            `json:"sku"`
		Seq     int               `json:"seq"`
	}
	doc := map[string]any{"id": "prd_06ebgilm617mc9qsskh5b592vk", "vendor_id": "ven_enaia4wjldybiujnsiaoxpo34e",
		"status": "draft", "kind": "variable", "name": "Linen shirt", "slug": "linen-shirt", "description": "A shirt of washed linen.",
		"price": 4500, "original_price": 6000, "category": "apparel", "subcategory": "shirts",
		"image_urls": []string{"https://cdn.example.com/shirt.jpg"}, "features": []string{"washed linen"},
		"badge": nil, "default_options": nil, "related_product_ids": []string{}, "tags": nil, "sku": nil, "weight_kg": 0.3,
		"source_region": nil, "published_at": nil, "archived_at": nil,
		"created_at": "2026-03-04T10:00:30Z", "updated_at": "2026-03-04T10:00:30Z", "next_seq": n + 1}
	nums := map[string]int64{}
	var vars []variation
	var sizes []string
	for i := 1; i <= n; i++ {
		size := fmt.Sprintf("s%03d", i)
		sizes = append(sizes, size)
		// Variation ids are random in the catalog: make them so here.
		vars = append(vars, variation{ID: fmt.Sprintf("var_%026x", uint64(i)*0x9e3779b97f4a7c15)[:30], Status: "active",
			Options: map[string]string{"size": size}, Price: 4500 + i, SKU: "V-" + size, Seq: i})
		for _, c := range []string{"oh", "rs", "av", "iv"} {
			nums[fmt.Sprintf("%s_%03d", c, i)] = 1
		}
	}
	doc["variations"], doc["options"] = vars, map[string][]string{"size": sizes}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return store.Item{PK: "VENDOR#ven_enaia4wjldybiujnsiaoxpo34e", SK: "PRODUCT#prd_06ebgilm617mc9qsskh5b592vk", Version: 1, Data: b, Nums: nums}
}

func raw(t *testing.T, c *ddb.Client, table string, k store.Key) map[string]types.AttributeValue {
	t.Helper()
	out, err := c.GetItem(context.Background(), &ddb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: k.PK}, "sk": &types.AttributeValueMemberS{Value: k.SK}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// The product item of eight inventory items, 2.1 KB as JSON, is stored
// under 1 KB: DynamoDB itself bills its write 1 unit, where the plain item
// cost 3, and an adjustment's counter update on it 1 (2 in a
// transaction, not 6). It reads back as written.
func TestLargeDocumentIsStoredPacked(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	it := variableProduct(t, 8)
	if n := store.ItemSize(it); n <= 2048 {
		t.Fatalf("the plain item is %d bytes; the test wants one over 2 KB", n)
	}
	units := func(op store.Op) float64 {
		ctx, rt := roundtrip.With(context.Background())
		if err := s.Transact(ctx, op); err != nil {
			t.Fatal(err)
		}
		_, w := rt.Capacity()
		return w
	}
	if w := units(store.Put(it, store.IfAbsent())); w != 1 {
		t.Errorf("writing the product item took %v write units, want 1", w)
	}
	if n := s.StoredSize(it); n >= 1024 {
		t.Errorf("StoredSize = %d, want under 1 KB", n)
	}
	if w := units(store.Add(it.Key(), map[string]int64{"oh_001": 5, "av_001": 5, "iv_001": 1}, 0, store.IfVersion(1))); w != 1 {
		t.Errorf("a counter update on it took %v write units, want 1", w)
	}
	m := raw(t, c, table, it.Key())
	if _, ok := m["d"]; ok || m["Z"] == nil {
		t.Errorf("stored attributes %v, want the document packed in Z only", keys(m))
	}
	got, err := s.Get(context.Background(), it.Key())
	if err != nil || !bytes.Equal(got.Data, it.Data) || got.Nums["oh_001"] != 6 || got.Nums["oh_002"] != 1 {
		t.Fatalf("read back %v: %s %v", err, got.Data, got.Nums)
	}
	page, err := s.Query(context.Background(), store.Query{PK: it.PK, Prefix: "PRODUCT#", Limit: 10})
	if err != nil || len(page) != 1 || !bytes.Equal(page[0].Data, it.Data) {
		t.Fatalf("query: %v, %d items", err, len(page))
	}
}

func keys(m map[string]types.AttributeValue) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Items written before packing, with the plain document in d, read as
// before; an update that sets a document packs it and drops the plain one,
// and one that sets a short document drops the packed one.
func TestPlainItemsStillRead(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	it := variableProduct(t, 8)
	legacy := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: it.PK}, "sk": &types.AttributeValueMemberS{Value: it.SK},
		"v": &types.AttributeValueMemberN{Value: "1"}, "d": &types.AttributeValueMemberB{Value: it.Data},
		"oh_001": &types.AttributeValueMemberN{Value: "7"}}
	if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(table), Item: legacy}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, it.Key())
	if err != nil || !bytes.Equal(got.Data, it.Data) || got.Nums["oh_001"] != 7 {
		t.Fatalf("plain item read as %v: %d bytes, %v", err, len(got.Data), got.Nums)
	}
	if err := s.Transact(ctx, store.Update(it.Key(), it.Data, 2, map[string]int64{"oh_001": 1}, store.IfVersion(1))); err != nil {
		t.Fatal(err)
	}
	if m := raw(t, c, table, it.Key()); m["d"] != nil || m["Z"] == nil {
		t.Errorf("after an update: attributes %v, want Z and no d", keys(m))
	}
	short := []byte(`{"id":"prd_06ebgilm617mc9qsskh5b592vk"}`)
	if err := s.Transact(ctx, store.Update(it.Key(), short, 3, nil, store.IfVersion(2))); err != nil {
		t.Fatal(err)
	}
	if m := raw(t, c, table, it.Key()); m["Z"] != nil || m["d"] == nil {
		t.Errorf("after a short document: attributes %v, want d and no Z", keys(m))
	}
	if got, err := s.Get(ctx, it.Key()); err != nil || !bytes.Equal(got.Data, short) || got.Nums["oh_001"] != 8 || got.Version != 3 {
		t.Fatalf("read %v: %s %v v%d", err, got.Data, got.Nums, got.Version)
	}
	// An empty document removes both forms.
	if err := s.Transact(ctx, store.Update(it.Key(), it.Data, 4, nil, store.Cond{}), store.Check(store.Key{PK: "P", SK: "none"}, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, store.Update(it.Key(), []byte{}, 5, nil, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	if m := raw(t, c, table, it.Key()); m["Z"] != nil || m["d"] != nil {
		t.Errorf("after an empty document: attributes %v, want neither d nor Z", keys(m))
	}
}

// A build from before packing updates an item's document with SET d and
// leaves the packed one beside it: the plain one, the newer, wins.
func TestPlainDocumentWinsOverPacked(t *testing.T) {
	c, table := ddbtest.NewTable(t)
	s := dynamodb.New(c, table, dynamodb.WithClock(clock.System{}.Now))
	ctx := context.Background()
	it := variableProduct(t, 8)
	if err := s.Transact(ctx, store.Put(it, store.Cond{})); err != nil {
		t.Fatal(err)
	}
	newer := []byte(`{"id":"newer"}`)
	if _, err := c.UpdateItem(ctx, &ddb.UpdateItemInput{TableName: aws.String(table),
		Key:              map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: it.PK}, "sk": &types.AttributeValueMemberS{Value: it.SK}},
		UpdateExpression: aws.String("SET d = :d"), ExpressionAttributeValues: map[string]types.AttributeValue{":d": &types.AttributeValueMemberB{Value: newer}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, it.Key()); err != nil || !bytes.Equal(got.Data, newer) {
		t.Fatalf("read %v: %s, want the plain document", err, got.Data)
	}
}

// A stream record of a packed item converts to the item's document, as
// Lambda delivers it and as DynamoDB Streams does (stream_test.go).
func TestPackedImageFromLambda(t *testing.T) {
	it := variableProduct(t, 8)
	img := dynamodb.LambdaImage(it)
	if _, ok := img["Z"]; !ok {
		t.Fatalf("image attributes %v, want Z", img)
	}
	ch, err := dynamodb.ChangeFromLambda(events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "1", Keys: dynamodb.LambdaImage(store.Item{PK: it.PK, SK: it.SK}), NewImage: img}})
	if err != nil || ch.New == nil || !bytes.Equal(ch.New.Data, it.Data) || ch.New.Nums["iv_008"] != 1 {
		t.Fatalf("change %v: %+v", err, ch.New)
	}
	img["Z"] = events.NewBinaryAttribute([]byte{9, 9})
	if _, err := dynamodb.ChangeFromLambda(events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "2", Keys: dynamodb.LambdaImage(store.Item{PK: it.PK, SK: it.SK}), NewImage: img}}); err == nil {
		t.Fatal("a record whose packed document does not decode converted")
	}
}
