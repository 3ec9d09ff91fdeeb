// Package dynamodb is the store port over one DynamoDB table.
//
// Layout: the string key attributes pk (hash) and sk (range); v (N) holds the
// item's version, d (B) its JSON document (absent when empty), ttl (N) its
// expiry in Unix seconds (absent when the item never expires; the table's TTL
// attribute), and every numeric attribute of Item.Nums is a top-level N
// attribute of its own name, so that conditions and ADD updates can use it.
//
// DynamoDB deletes expired items only eventually, so every read filters them
// out and every condition treats an item whose ttl has passed as absent. The
// clock that decides expiry is injectable (WithClock) so the contract suite
// can move it.
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/moku/sellerapi/shared/store"
)

// Store is the DynamoDB store.
type Store struct {
	client *ddb.Client
	table  string
	now    func() time.Time
}

var _ store.Store = (*Store)(nil)

// Option configures New.
type Option func(*Store)

// WithClock sets the clock that decides which items have expired.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// New returns a store over table. The client should count round trips
// (NewClient's does; see RoundTripCounter).
func New(client *ddb.Client, table string, opts ...Option) *Store {
	s := &Store{client: client, table: table, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Close does nothing: the client holds no resources of the store's own.
func (s *Store) Close() error { return nil }

// NewClient loads the default AWS configuration (so AWS_ENDPOINT_URL_DYNAMODB
// or AWS_ENDPOINT_URL can point it at DynamoDB Local or LocalStack) and
// returns a client that counts round trips.
func NewClient(ctx context.Context, optFns ...func(*config.LoadOptions) error) (*ddb.Client, error) {
	cfg, err := config.LoadDefaultConfig(ctx, optFns...)
	if err != nil {
		return nil, fmt.Errorf("dynamodb: load AWS config: %w", err)
	}
	return ddb.NewFromConfig(cfg, func(o *ddb.Options) {
		o.APIOptions = append(o.APIOptions, RoundTripCounter())
		// The SDK checks a CRC32 header that DynamoDB (and its emulators)
		// leave off error responses, and logs a spurious warning for every
		// failed condition (aws/aws-sdk-go-v2#3545); TLS guards integrity.
		o.DisableValidateResponseChecksum = true
	}), nil
}

// RoundTripCounter is an SDK stack option that calls store.CountRoundTrip for
// every HTTP attempt. It sits at the end of the Finalize step, after the
// retry middleware, so that retried attempts count too.
func RoundTripCounter() func(*middleware.Stack) error {
	return func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("store.RoundTripCounter",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				store.CountRoundTrip(ctx)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// TableOption configures CreateTable.
type TableOption func(*tableOptions)

type tableOptions struct{ noTTL bool }

// WithoutTTL leaves the table's TTL off. Tests against DynamoDB Local use
// it: the emulator deletes items within seconds of their ttl by the wall
// clock, while the tests decide expiry with a clock of their own.
func WithoutTTL() TableOption { return func(o *tableOptions) { o.noTTL = true } }

// CreateTable creates the table (on-demand, with a NEW_AND_OLD_IMAGES stream),
// waits until it is active and enables TTL on the ttl attribute. An existing
// table is left as it is.
func CreateTable(ctx context.Context, client *ddb.Client, name string, opts ...TableOption) error {
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	_, err := client.CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	})
	var inUse *types.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return fmt.Errorf("dynamodb: create table %s: %w", name, err)
	}
	if err := ddb.NewTableExistsWaiter(client).Wait(ctx, &ddb.DescribeTableInput{TableName: aws.String(name)}, 5*time.Minute); err != nil {
		return fmt.Errorf("dynamodb: wait for table %s: %w", name, err)
	}
	if o.noTTL {
		return nil
	}
	ttl, err := client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("dynamodb: describe TTL of %s: %w", name, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = client.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("ttl"), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("dynamodb: enable TTL on %s: %w", name, err)
	}
	return nil
}

// ---- encoding ----

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func keyAttrs(k store.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": str(k.PK), "sk": str(k.SK)}
}

func marshal(it store.Item) map[string]types.AttributeValue {
	m := make(map[string]types.AttributeValue, 5+len(it.Nums))
	for name, v := range it.Nums {
		m[name] = num(v)
	}
	m["pk"], m["sk"], m["v"] = str(it.PK), str(it.SK), num(it.Version)
	if len(it.Data) > 0 {
		m["d"] = &types.AttributeValueMemberB{Value: it.Data}
	}
	if it.ExpiresAt != 0 {
		m["ttl"] = num(it.ExpiresAt)
	}
	return m
}

func unmarshal(m map[string]types.AttributeValue) (store.Item, error) {
	var it store.Item
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
			if name == "d" {
				it.Data = v.Value
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
	return it, nil
}

// live decodes an item read from the table; ok is false when it is absent
// or expired.
func (s *Store) live(m map[string]types.AttributeValue) (store.Item, bool, error) {
	if len(m) == 0 {
		return store.Item{}, false, nil
	}
	it, err := unmarshal(m)
	if err != nil || it.Expired(s.now()) {
		return store.Item{}, false, err
	}
	return it, true, nil
}

// ---- reads ----

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
				if err := sleep(ctx, backoff(attempt)); err != nil {
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

// ---- expressions ----

// expr collects the placeholders of one request's expressions; every name
// goes through a placeholder, so reserved words never matter.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// name returns the placeholder of an attribute name (valid names are
// [a-z][a-z0-9_]*, so "#"+name is a valid placeholder).
func (e *expr) name(n string) string {
	ph := "#" + n
	e.names[ph] = n
	return ph
}

func (e *expr) value(v types.AttributeValue) string {
	ph := ":v" + strconv.Itoa(len(e.values))
	e.values[ph] = v
	return ph
}

func (e *expr) namesOrNil() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

func (e *expr) valuesOrNil() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}

// absent holds when no live item has the key.
func (e *expr) absent(now int64) string {
	return "(attribute_not_exists(" + e.name("pk") + ") OR " + e.name("ttl") + " <= " + e.value(num(now)) + ")"
}

// exists holds when a live item has the key.
func (e *expr) exists(now int64) string {
	ttl := e.name("ttl")
	return "(attribute_exists(" + e.name("pk") + ") AND (attribute_not_exists(" + ttl + ") OR " + ttl + " > " + e.value(num(now)) + "))"
}

// notExpired holds when the key is absent or its item is live; it is the
// precondition of an ADD that may create the item.
func (e *expr) notExpired(now int64) string {
	ttl := e.name("ttl")
	return "(attribute_not_exists(" + ttl + ") OR " + ttl + " > " + e.value(num(now)) + ")"
}

var cmps = map[store.Cmp]bool{store.LT: true, store.LE: true, store.GE: true, store.GT: true, store.EQ: true}

// bound translates a bound, counting a missing attribute as zero: whether
// zero satisfies it is known here, so a missing attribute either passes or
// fails outright.
func (e *expr) bound(b store.Bound) string {
	if !cmps[b.Cmp] {
		// Never holds, as in the embedded store (Bounds imply the item
		// exists, so this contradicts them).
		return "attribute_not_exists(" + e.name("pk") + ")"
	}
	a := e.name(b.Attr)
	c := a + " " + string(b.Cmp) + " " + e.value(num(b.Value))
	if b.Holds(0) {
		return "(attribute_not_exists(" + a + ") OR " + c + ")"
	}
	return c
}

func needsLive(c store.Cond) bool { return c.Exists || c.HasVersion || len(c.Bounds) > 0 }

// cond translates a condition; "" when it always holds.
func (e *expr) cond(c store.Cond, now int64) string {
	var parts []string
	if c.Absent {
		parts = append(parts, e.absent(now))
	}
	if needsLive(c) {
		parts = append(parts, e.exists(now))
	}
	if c.HasVersion {
		parts = append(parts, e.name("v")+" = "+e.value(num(c.Version)))
	}
	for _, b := range c.Bounds {
		parts = append(parts, e.bound(b))
	}
	return strings.Join(parts, " AND ")
}

// ---- writes ----

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
		return write{put: &types.Put{TableName: table, Item: marshal(op.Item),
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
		return write{synthetic: synthetic, put: &types.Put{TableName: table, Item: marshal(it),
			ConditionExpression: aws.String(c), ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
	}
	upd := addExpr(e, op.Item, op.Deltas)
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
func addExpr(e *expr, it store.Item, deltas map[string]int64) string {
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
		set = append(set, e.name("d")+" = "+e.value(&types.AttributeValueMemberB{Value: it.Data}))
	case it.Data != nil:
		remove = " REMOVE " + e.name("d") // an empty document is stored as none
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
		if err := sleep(ctx, conflictBackoff(attempt+1)); err != nil {
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
			_, err = s.client.PutItem(ctx, &ddb.PutItemInput{TableName: aws.String(s.table), Item: marshal(it),
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
				it, err := unmarshal(out.Attributes)
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

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
