package extorder_test

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/extorder"
)

// TestCounting: which statuses count as unresolved and as an active
// channel fulfillment, per the package's rule.
func TestCounting(t *testing.T) {
	for _, c := range []struct {
		status, fulfillment string
		unresolved, channel bool
	}{
		{extorder.StatusReserved, connection.Moku, true, false},
		{extorder.StatusReserved, connection.Channel, true, false},
		{extorder.StatusUnreservable, connection.Moku, true, false},
		{extorder.StatusCommitted, connection.Moku, false, false},
		{extorder.StatusCommitted, connection.Channel, true, true},
		{extorder.StatusFulfilled, connection.Channel, false, false},
		{extorder.StatusCancelled, connection.Channel, false, false},
		{extorder.StatusRejected, connection.Moku, false, false},
	} {
		if got := extorder.Unresolved(c.status, c.fulfillment); got != c.unresolved {
			t.Errorf("Unresolved(%s, %s) = %v", c.status, c.fulfillment, got)
		}
		if got := extorder.ChannelFulfilling(c.status, c.fulfillment); got != c.channel {
			t.Errorf("ChannelFulfilling(%s, %s) = %v", c.status, c.fulfillment, got)
		}
	}
}

// start brings a fresh order to status on a connection with fulfillment.
func (f *fixture) start(t *testing.T, status, fulfillment string) (order extorder.View, conn string) {
	t.Helper()
	conn = f.connection(t, connection.Enabled, fulfillment)
	q := int64(3)
	if status == extorder.StatusUnreservable || status == extorder.StatusRejected {
		q = 11 // more than the 10 on hand
	}
	o, _, err := f.importOrder(t, conn, "ext-1", line("l1", f.item, q))
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	switch status {
	case extorder.StatusCommitted:
		path = []string{extorder.Commit}
	case extorder.StatusFulfilled:
		path = []string{extorder.Commit, extorder.Fulfill}
	case extorder.StatusCancelled:
		path = []string{extorder.Cancel}
	case extorder.StatusRejected:
		path = []string{extorder.Reject}
	}
	for _, a := range path {
		if o, err = f.move(t, o.ID, a, o.Version); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
	}
	if o.Status != status {
		t.Fatalf("reached %s, want %s", o.Status, status)
	}
	return o, conn
}

// TestTransitions: reserved -> committed -> (channel fulfillment only)
// fulfilled; reserved and unreservable -> cancelled; unreservable ->
// rejected; unreservable -> reserved once it can be held. Every other
// pair is a state conflict.
func TestTransitions(t *testing.T) {
	allowed := map[[2]string]string{
		{extorder.StatusReserved, extorder.Commit}:     extorder.StatusCommitted,
		{extorder.StatusReserved, extorder.Cancel}:     extorder.StatusCancelled,
		{extorder.StatusUnreservable, extorder.Cancel}: extorder.StatusCancelled,
		{extorder.StatusUnreservable, extorder.Reject}: extorder.StatusRejected,
		{extorder.StatusCommitted, extorder.Fulfill}:   extorder.StatusFulfilled, // channel only
	}
	statuses := []string{extorder.StatusReserved, extorder.StatusUnreservable, extorder.StatusCommitted,
		extorder.StatusFulfilled, extorder.StatusCancelled, extorder.StatusRejected}
	actions := []string{extorder.Reserve, extorder.Commit, extorder.Cancel, extorder.Reject, extorder.Fulfill}
	for _, fulfillment := range []string{connection.Channel, connection.Moku} {
		for _, from := range statuses {
			if from == extorder.StatusFulfilled && fulfillment == connection.Moku {
				continue // unreachable
			}
			for _, action := range actions {
				if from == extorder.StatusUnreservable && action == extorder.Reserve {
					continue // decided by stock: TestReserveAgain
				}
				t.Run(fulfillment+"/"+from+"/"+action, func(t *testing.T) {
					f := newFixture(t)
					o, _ := f.start(t, from, fulfillment)
					want, ok := allowed[[2]string{from, action}]
					if action == extorder.Fulfill && fulfillment == connection.Moku {
						ok = false
					}
					got, err := f.move(t, o.ID, action, o.Version)
					if !ok {
						dt.WantCode(t, err, errs.CodeExternalOrderState)
						if cur, _ := f.svc.Get(context.Background(), vendorID, o.ID); cur.Status != from || cur.Version != o.Version {
							t.Fatalf("a refused %s moved the order to %s v%d", action, cur.Status, cur.Version)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					if got.Status != want || got.Version != o.Version+1 {
						t.Fatalf("%s -> %s v%d, want %s v%d", from, got.Status, got.Version, want, o.Version+1)
					}
				})
			}
		}
	}
}

// TestStockFollowsTheOrder: a reserved order holds its lines' stock; a
// commit takes it from on_hand; a cancel returns it; an unreservable order
// holds nothing.
func TestStockFollowsTheOrder(t *testing.T) {
	f := newFixture(t)
	conn := f.connection(t, connection.Enabled, connection.Channel)
	o, _, err := f.importOrder(t, conn, "ext-1", line("l1", f.item, 2), line("l2", f.item, 1))
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != extorder.StatusReserved {
		t.Fatalf("import: %s", o.Status)
	}
	if b := f.buckets(t, f.product); b != [3]int64{10, 3, 7} {
		t.Fatalf("after reserving 2+1 of one item: %v", b)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 1 || c.ActiveChannelFulfillment != 0 {
		t.Fatalf("reserved order's counters %+v", c)
	}
	o, err = f.move(t, o.ID, extorder.Commit, o.Version)
	if err != nil {
		t.Fatal(err)
	}
	if b := f.buckets(t, f.product); b != [3]int64{7, 0, 7} {
		t.Fatalf("after committing: %v", b)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 1 || c.ActiveChannelFulfillment != 1 {
		t.Fatalf("committed channel order's counters %+v", c)
	}
	if _, err = f.move(t, o.ID, extorder.Fulfill, o.Version); err != nil {
		t.Fatal(err)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 0 || c.ActiveChannelFulfillment != 0 {
		t.Fatalf("fulfilled order's counters %+v", c)
	}

	o2, _, err := f.importOrder(t, conn, "ext-2", line("l1", f.item, 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.move(t, o2.ID, extorder.Cancel, o2.Version); err != nil {
		t.Fatal(err)
	}
	if b := f.buckets(t, f.product); b != [3]int64{7, 0, 7} {
		t.Fatalf("after cancelling a reserved order: %v", b)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 0 {
		t.Fatalf("cancelled order still counted: %+v", c)
	}
}

// TestUnreservableAndReserveAgain: an order whose lines cannot all be held
// is stored unreservable with a problem per line and an open conflict,
// holds nothing, and is reserved once the stock is there.
func TestUnreservableAndReserveAgain(t *testing.T) {
	f := newFixture(t)
	_, other := f.Stocked(t, "cup", 1)
	conn := f.connection(t, connection.Enabled, connection.Moku)
	o, _, err := f.importOrder(t, conn, "ext-1", line("l1", f.item, 2), line("l2", other, 3), line("l3", "inv_nope_000", 1))
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != extorder.StatusUnreservable || o.ConflictID == nil {
		t.Fatalf("import: %s conflict %v", o.Status, o.ConflictID)
	}
	problems := map[string]string{}
	for _, l := range o.Lines {
		if l.Problem != nil {
			problems[l.LineID] = *l.Problem
		}
	}
	if len(problems) != 2 || problems["l2"] != extorder.ProblemInsufficientStock || problems["l3"] != extorder.ProblemNotFound {
		t.Fatalf("problems %v, want l2 insufficient_stock and l3 item_not_found", problems)
	}
	if b := f.buckets(t, f.product); b != [3]int64{10, 0, 10} {
		t.Fatalf("an unreservable order held stock: %v", b)
	}
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 1 || c.OpenConflicts != 1 {
		t.Fatalf("unreservable order's counters %+v", c)
	}
	_, err = f.move(t, o.ID, extorder.Reserve, o.Version)
	dt.WantCode(t, err, errs.CodeInsufficientStock)

	// A second order without the missing item, once stock arrives.
	o2, _, err := f.importOrder(t, conn, "ext-2", line("l1", other, 3))
	if err != nil || o2.Status != extorder.StatusUnreservable {
		t.Fatalf("ext-2: %s %v", o2.Status, err)
	}
	prep, err := f.inv.PrepareAdjust(context.Background(), vendorID, other, inventoryAdjust(5, 2))
	ops := prep.Ops
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(t, ops...)
	got, err := f.move(t, o2.ID, extorder.Reserve, o2.Version)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != extorder.StatusReserved {
		t.Fatalf("reserve again: %s", got.Status)
	}
	for _, l := range got.Lines {
		if l.Problem != nil {
			t.Fatalf("a held order keeps a problem: %+v", l)
		}
	}
	// The first order's conflict is still open, the second's is closed.
	if c := f.counters(t, conn); c.UnresolvedExternalOrders != 2 || c.OpenConflicts != 1 {
		t.Fatalf("counters after reserving ext-2: %+v", c)
	}
}

// TestImportIsIdempotentByContent: the same (connection, external id) with
// the same content answers with the first order; other content is a 409.
func TestImportIsIdempotentByContent(t *testing.T) {
	f := newFixture(t)
	conn := f.connection(t, connection.Enabled, connection.Moku)
	first, created, err := f.importOrder(t, conn, "ext-1", line("l1", f.item, 2))
	if err != nil || !created {
		t.Fatalf("first import: %v %v", created, err)
	}
	again, created, err := f.importOrder(t, conn, "ext-1", line("l1", f.item, 2))
	if err != nil || created || again.ID != first.ID {
		t.Fatalf("repeat: created %v id %s err %v, want the first order %s", created, again.ID, err, first.ID)
	}
	_, _, err = f.importOrder(t, conn, "ext-1", line("l1", f.item, 3))
	dt.WantCode(t, err, errs.CodeExternalOrderDuplicate)
	if b := f.buckets(t, f.product); b != [3]int64{10, 2, 8} {
		t.Fatalf("repeats moved stock: %v", b)
	}
	// The same external id on another connection is another order.
	conn2 := f.connection(t, connection.Enabled, connection.Moku)
	if _, created, err := f.importOrder(t, conn2, "ext-1", line("l1", f.item, 3)); err != nil || !created {
		t.Fatalf("same id, other connection: %v %v", created, err)
	}
}

// TestImportNeedsIngress: a connection with order_ingress disabled, or
// disconnected, imports nothing.
func TestImportNeedsIngress(t *testing.T) {
	f := newFixture(t)
	off := f.connection(t, connection.Disabled, connection.Moku)
	_, _, err := f.importOrder(t, off, "ext-1", line("l1", f.item, 1))
	dt.WantCode(t, err, errs.CodeConnectionState)
	gone := f.connection(t, connection.Enabled, connection.Moku)
	if _, err := f.conns.Transition(context.Background(), vendorID, gone, connection.Disconnect, 1); err != nil {
		t.Fatal(err)
	}
	_, _, err = f.importOrder(t, gone, "ext-1", line("l1", f.item, 1))
	dt.WantCode(t, err, errs.CodeConnectionState)
	_, _, err = f.importOrder(t, "conn_nope", "ext-1", line("l1", f.item, 1))
	dt.WantCode(t, err, errs.CodeNotFound)
}

// TestStaleVersion: every transition names the version it read.
func TestStaleVersion(t *testing.T) {
	f := newFixture(t)
	o, _ := f.start(t, extorder.StatusReserved, connection.Moku)
	_, err := f.move(t, o.ID, extorder.Commit, o.Version+1)
	dt.WantCode(t, err, errs.CodeExternalOrderVersion)
}
