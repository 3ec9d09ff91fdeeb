package httpapi_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// onDynamoDB names the scenarios that run on DynamoDB Local as well as on
// the embedded store, each with the behaviour it is kept there for. The
// store port's semantics (conditions, transactions, queries, expiry, size,
// concurrent writers) are pinned on both adapters by the contract suite
// (shared/store/storetest); a scenario is repeated on DynamoDB Local only
// when what it checks depends on the adapter beneath the routes: round
// trips and read-ahead, pages over DynamoDB's Query, the item size and
// transaction limits, the change stream that drives the pipeline, and one
// race per kind of condition (DynamoDB refuses the losers with its own
// cancellation reasons). The rest run on the embedded store only,
// unless SELLERAPI_TEST_STORES=all (docs/decisions.md, "The test loop").
var onDynamoDB = map[string]string{
	// Round trips and read-ahead are per adapter.
	"TestRoundTripBudgets":                "round trips per operation on DynamoDB",
	"TestListPageBudgets":                 "round trips per list page on DynamoDB",
	"TestPageAheadRefusals":               "a query started ahead, then refused",
	"TestCursorPages":                     "cursors over DynamoDB's Query and its LastEvaluatedKey",
	"TestInventoryPagesWalkEveryItemOnce": "pages of items on the product item's bucket",
	// Limits DynamoDB sets. (TestFaultsOnEveryStoreCall is not here: its
	// faults are injected in front of the adapter, at the store port, so
	// the adapter beneath does not change what it checks; nor are
	// TestFilteredListScanIsBounded and TestRateRefusalComesBeforeTheScan:
	// the bound is the service's count of records, and round trips per
	// list page on DynamoDB are TestListPageBudgets'.)
	"TestRecordSizeLimit":   "the 400 KB item limit, measured alike on both stores",
	"TestHundredVariations": "a transaction at DynamoDB's 100-item limit",
	// Races: one per kind of condition the services write. (The last
	// units, TestExternalOrdersCompeteForTheLastUnits and
	// TestReserveLastUnits, is a bounded add: the contract suite's bounds
	// and concurrent increments on DynamoDB Local, and
	// TestAdjustmentRace here; on DynamoDB Local it took 25 to 136 s of
	// retried transaction conflicts.)
	"TestIdempotencyConcurrent":                    "receipts claimed by racing requests",
	"TestAdjustmentRace":                           "counters added in place by racing writers",
	"TestWebhookSubscriptionLimitUnderConcurrency": "a per-vendor count held by a condition",
	"TestSubscriptionCountsFollowEveryChange":      "per-type counts added in place by racing creates, changes and deletes",
	"TestConcurrentClosesOfOneConflict":            "a versioned record closed by racers",
	"TestAuthorityFencesWrites":                    "the authority fence as a condition on another item",
	"TestRateWindows":                              "rate windows as counters on the table",
	// The pipeline on DynamoDB's stream: one scenario per worker.
	"TestBulkAccepted":                                   "bulk jobs routed from the stream",
	"TestSyncJobInventory":                               "sync jobs routed from the stream",
	"TestSellerOrdersProjectCommittedMokuOrders":         "seller-order projections from the stream",
	"TestStockEffectPerMovement":                         "stock effects routed from the stream",
	"TestReservationExpiryShardsAndSurvivesABrokenEntry": "expiry's sharded index queries",
	"TestStorePairingFlow":                               "pairing codes looked up by their own key",
	"TestWebhookRecovery":                                "a recovery's pages, counters and delivered marks on the table",
	"TestWebhookReenableWithRecovery":                    "a recovery stored in the re-enable's transaction",
	"TestWebhookRecoveryRefusals":                        "a recovery's idempotency, rate and refusals on the table",
}

// forEachStore runs a scenario on the embedded store, and on DynamoDB Local
// when onDynamoDB names it (apitest.ScenarioStores).
func forEachStore(t *testing.T, fn func(t *testing.T, kind apitest.StoreKind)) {
	top, _, _ := strings.Cut(t.Name(), "/")
	_, keep := onDynamoDB[top]
	for _, kind := range apitest.ScenarioStores(keep) {
		t.Run(string(kind), func(t *testing.T) { fn(t, kind) })
	}
}

// TestDynamoDBScenariosExist: every name in onDynamoDB is a test of this
// package that runs through forEachStore, so renaming a scenario cannot
// quietly take it off DynamoDB Local.
func TestDynamoDBScenariosExist(t *testing.T) {
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	eachStore := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Test") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "forEachStore" {
						eachStore[fn.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	if len(eachStore) < 50 {
		t.Fatalf("found %d tests calling forEachStore: the parse is not seeing the package", len(eachStore))
	}
	for name := range onDynamoDB {
		if !eachStore[name] {
			t.Errorf("onDynamoDB names %s, which is not a test of this package calling forEachStore", name)
		}
	}
}
