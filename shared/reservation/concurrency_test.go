package reservation_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

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
	var wg sync.WaitGroup
	results := make([]error, buyers)
	for i := range buyers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := idempotency.Scope{VendorID: vendorID, TokenID: "tok_1", Operation: "reservations.create", Key: fmt.Sprintf("buyer-%05d", i)}
			_, results[i] = keeper.Run(context.Background(), sc, "fp", func(ctx context.Context) (idempotency.Mutation, error) {
				p, err := f.svc.PrepareCreate(ctx, vendorID, reservation.CreateInput{ConnectionID: f.conn, InventoryItemID: f.item, Quantity: 1, Hold: reservation.DefaultHold})
				return idempotency.Mutation{Ops: p.Ops, Status: 201, Body: p.View, Explain: p.Explain}, err
			})
		}()
	}
	wg.Wait()
	held := 0
	for i, err := range results {
		switch {
		case err == nil:
			held++
		case errs.Is(err, errs.CodeInsufficientStock):
		default:
			t.Errorf("buyer %d: %v", i, err)
		}
	}
	if held != 10 {
		t.Fatalf("%d holds of 1 on 10 units, want exactly 10", held)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{10, 10, 0} || c.ConnReservations != 10 || c.ServiceReservations != 10 {
		t.Fatalf("after the race: %+v", c)
	}
}
