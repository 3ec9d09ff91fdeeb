package reservation_test

import (
	"context"
	"fmt"
	"testing"

	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/reservation"
)

// TestConcurrentCreatesNeverOversell: twenty buyers race for ten units
// through the idempotency keeper, as the HTTP layer runs them: exactly ten
// holds succeed, the rest see INSUFFICIENT_STOCK, and every counter agrees.
func TestConcurrentCreatesNeverOversell(t *testing.T) {
	f := newFixture(t)
	keeper := idempotency.Keeper{Store: f.Store, Clock: f.Clock}
	const buyers = 20
	results := dt.Race(buyers, func(i int) error {
		sc := idempotency.Scope{VendorID: vendorID, TokenID: "tok_1", Operation: "reservations.create", Key: fmt.Sprintf("buyer-%05d", i)}
		_, err := keeper.Run(context.Background(), sc, "fp", func(ctx context.Context) (idempotency.Mutation, error) {
			p, err := f.svc.PrepareCreate(ctx, vendorID, reservation.CreateInput{ConnectionID: f.conn, InventoryItemID: f.item, Quantity: 1, Hold: reservation.DefaultHold})
			return idempotency.Mutation{Ops: p.Ops, Status: 201, Body: p.View, Explain: p.Explain}, err
		})
		return err
	})
	if held := len(dt.Succeeded(t, results, errs.CodeInsufficientStock)); held != 10 {
		t.Fatalf("%d holds of 1 on 10 units, want exactly 10", held)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{10, 10, 0} || c.ConnReservations != 10 || c.ServiceReservations != 10 {
		t.Fatalf("after the race: %+v", c)
	}
}
