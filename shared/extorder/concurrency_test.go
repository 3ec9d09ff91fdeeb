package extorder_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/idempotency"
)

// TestConcurrentImports: orders imported at once compete for ten units;
// every order ends reserved or unreservable, the reserved ones hold exactly
// what the item shows as reserved, and nothing is held beyond on_hand. A
// repeated external id makes one order.
func TestConcurrentImports(t *testing.T) {
	f := newFixture(t)
	conn := f.connection(t, connection.Enabled, connection.Moku)
	keeper := idempotency.Keeper{Store: f.Store, Clock: f.Clock}
	const n = 12
	ids := make([]string, n)
	results := dt.Race(n, func(i int) error {
		ext := fmt.Sprintf("ext-%d", i%10) // orders 10 and 11 repeat 0 and 1
		in := extorder.ImportInput{ConnectionID: conn, ExternalOrderID: ext, Lines: []extorder.Line{line("l1", f.item, 3)}}
		sc := idempotency.Scope{VendorID: vendorID, TokenID: "tok_1", Operation: "external_orders.import", Key: fmt.Sprintf("key-%05d", i)}
		_, err := keeper.Run(context.Background(), sc, in.Fingerprint(), func(ctx context.Context) (idempotency.Mutation, error) {
			p, err := f.svc.PrepareImport(ctx, vendorID, in)
			ids[i] = p.View.ID
			if err != nil || len(p.Ops) == 0 {
				return idempotency.Mutation{Status: 200, Body: p.View}, err
			}
			return idempotency.Mutation{Ops: p.Ops, Status: 201, Body: p.View, Explain: p.Explain}, nil
		})
		return err
	})
	if imported := dt.Succeeded(t, results); len(imported) != n {
		t.Fatalf("%d of %d imports succeeded", len(imported), n)
	}
	for i := 10; i < n; i++ {
		if ids[i] != ids[i-10] {
			t.Errorf("external id ext-%d made two orders: %s and %s", i-10, ids[i-10], ids[i])
		}
	}
	orders, err := f.svc.List(context.Background(), vendorID, "", 50, extorder.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(orders.Items) != 10 {
		t.Fatalf("%d orders, want 10", len(orders.Items))
	}
	reserved := int64(0)
	counts := map[string]int{}
	for _, o := range orders.Items {
		counts[o.Status]++
		if o.Status == extorder.StatusReserved {
			reserved += 3
		}
	}
	if counts[extorder.StatusReserved] != 3 || counts[extorder.StatusUnreservable] != 7 {
		t.Fatalf("statuses %v, want 3 reserved (9 of 10 units) and 7 unreservable", counts)
	}
	if b := f.buckets(t, f.product); b != [3]int64{10, reserved, 10 - reserved} {
		t.Fatalf("buckets %v, want 10 on hand, %d reserved", b, reserved)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 10 || c.OpenConflicts != 7 {
		t.Fatalf("counters %+v", c)
	}
}
