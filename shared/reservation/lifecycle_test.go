package reservation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/connection"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
)

// TestCreateHoldsStock: a reservation moves quantity from available to
// reserved, and counts itself on its connection and as service-owned.
func TestCreateHoldsStock(t *testing.T) {
	f := newFixture(t)
	r := f.mustCreate(t, 4)
	if r.Status != reservation.StatusActive || r.Version != 1 || r.Quantity != 4 || r.Owner != connection.Moku {
		t.Fatalf("new reservation %+v", r)
	}
	if want := f.Clock.Now().Add(reservation.DefaultHold).Truncate(time.Second); !r.ExpiresAt.Equal(want) {
		t.Fatalf("expires_at %v, want %v", r.ExpiresAt, want)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{10, 4, 6} || c.ConnReservations != 1 || c.ServiceReservations != 1 {
		t.Fatalf("after holding 4 of 10: %+v", c)
	}
	stored, err := f.svc.Get(context.Background(), vendorID, r.ID)
	if err != nil || stored.Status != reservation.StatusActive || stored.Version != 1 {
		t.Fatalf("stored %+v %v", stored, err)
	}
}

// TestCreateRefusals: the conditions of a create, each refused without
// moving stock.
func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	t.Run("more than available", func(t *testing.T) {
		f := newFixture(t)
		f.mustCreate(t, 7)
		_, err := f.create(4)
		dt.WantCode(t, err, errs.CodeInsufficientStock)
		if _, err := f.create(3); err != nil {
			t.Fatalf("exactly what is available: %v", err)
		}
	})
	t.Run("paused connection", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.conns.Transition(ctx, vendorID, f.conn, connection.Pause, 1); err != nil {
			t.Fatal(err)
		}
		_, err := f.create(1)
		dt.WantCode(t, err, errs.CodeConnectionInactive)
		if c := f.counts(t); c.stock() != [3]int64{10, 0, 10} {
			t.Fatalf("stock moved: %+v", c)
		}
	})
	t.Run("inventory mastered by a channel", func(t *testing.T) {
		f := newFixture(t)
		f.connection(t, "marketplace_b", connection.Source)
		_, err := f.create(1)
		dt.WantCode(t, err, errs.CodeInventoryExternal)
	})
	t.Run("archived product", func(t *testing.T) {
		f := newFixture(t)
		if _, err := f.catalog.Transition(ctx, vendorID, f.product.ID, catalog.Archive, catalog.Transition{ExpectedRevision: 1}); err != nil {
			t.Fatal(err)
		}
		_, err := f.create(1)
		dt.WantCode(t, err, errs.CodeProductState)
	})
	t.Run("unknown item or connection", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.run(f.svc.PrepareCreate(ctx, vendorID, reservation.CreateInput{ConnectionID: f.conn, InventoryItemID: catalog.InventoryItemID(f.product.ID, 1), Quantity: 1, Hold: time.Minute}))
		dt.WantCode(t, err, errs.CodeNotFound)
		_, err = f.run(f.svc.PrepareCreate(ctx, vendorID, reservation.CreateInput{ConnectionID: "conn_nope", InventoryItemID: f.item, Quantity: 1, Hold: time.Minute}))
		dt.WantCode(t, err, errs.CodeNotFound)
	})
}

// TestCommit: on_hand and reserved both fall; available does not move.
func TestCommit(t *testing.T) {
	f := newFixture(t)
	r := f.mustCreate(t, 4)
	_, err := f.commit(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationVersion)
	got, err := f.commit(r.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != reservation.StatusCommitted || got.Version != 2 || got.CommittedAt == nil || !got.CommittedAt.Equal(f.Clock.Now()) {
		t.Fatalf("committed %+v", got)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{6, 0, 6} || c.ConnReservations != 0 || c.ServiceReservations != 0 {
		t.Fatalf("after committing 4: %+v", c)
	}
	// A settled reservation moves no more.
	_, err = f.commit(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
	_, err = f.release(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
	_, err = f.renew(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
}

// TestRelease: the hold returns to available; on_hand does not move.
func TestRelease(t *testing.T) {
	f := newFixture(t)
	r := f.mustCreate(t, 4)
	got, err := f.release(r.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != reservation.StatusReleased || got.ReleasedAt == nil || got.CommittedAt != nil {
		t.Fatalf("released %+v", got)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{10, 0, 10} || c.ConnReservations != 0 || c.ServiceReservations != 0 {
		t.Fatalf("after releasing 4: %+v", c)
	}
	_, err = f.commit(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
}

// TestRenew: extends the hold from now, moves the version, not the stock;
// an ended hold cannot be renewed or committed.
func TestRenew(t *testing.T) {
	f := newFixture(t)
	r := f.mustCreate(t, 2)
	f.Clock.Advance(10 * time.Minute)
	got, err := f.renew(r.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := f.Clock.Now().Add(reservation.DefaultHold).Truncate(time.Second); got.Version != 2 || !got.ExpiresAt.Equal(want) {
		t.Fatalf("renewed %+v, want version 2 expiring %v", got, want)
	}
	if c := f.counts(t); c.stock() != [3]int64{10, 2, 8} {
		t.Fatalf("renew moved stock: %+v", c)
	}
	_, err = f.renew(r.ID, 1)
	dt.WantCode(t, err, errs.CodeReservationVersion)

	f.Clock.Set(got.ExpiresAt) // the hold ends at expires_at
	_, err = f.renew(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
	_, err = f.commit(r.ID, 2)
	dt.WantCode(t, err, errs.CodeReservationState)
}

// TestExpiry: a hold is expired at expires_at, not before, and the system
// releases it exactly as a manual release would; a renewal moves it.
func TestExpiry(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	a := f.mustCreate(t, 2)
	f.Clock.Advance(5 * time.Minute)
	b := f.mustCreate(t, 3)
	f.Clock.Advance(5 * time.Minute)
	if _, err := f.renew(a.ID, 1); err != nil { // a now ends 15 minutes from here, after b
		t.Fatal(err)
	}

	f.Clock.Set(b.ExpiresAt.Add(-time.Second))
	if run, err := f.svc.ExpireDue(ctx, 10); err != nil || run.Expired != 0 || run.Failed != 0 {
		t.Fatalf("before any hold ends: %+v, %v", run, err)
	}
	f.Clock.Set(b.ExpiresAt)
	if run, err := f.svc.ExpireDue(ctx, 10); err != nil || run.Expired != 1 || run.Failed != 0 {
		t.Fatalf("at b's expiry: %+v, %v", run, err)
	}
	gotB, _ := f.svc.Get(ctx, vendorID, b.ID)
	gotA, _ := f.svc.Get(ctx, vendorID, a.ID)
	if gotB.Status != reservation.StatusExpired || gotB.ExpiredAt == nil || gotA.Status != reservation.StatusActive {
		t.Fatalf("a %s, b %s; want a active (renewed), b expired", gotA.Status, gotB.Status)
	}
	c := f.counts(t)
	if c.stock() != [3]int64{10, 2, 8} || c.ConnReservations != 1 || c.ServiceReservations != 1 {
		t.Fatalf("after b expired: %+v", c)
	}
	_, err := f.release(b.ID, gotB.Version)
	dt.WantCode(t, err, errs.CodeReservationState)

	f.Clock.Advance(time.Hour)
	if run, err := f.svc.ExpireDue(ctx, 10); err != nil || run.Expired != 1 || run.Failed != 0 {
		t.Fatalf("after a's renewed expiry: %+v, %v", run, err)
	}
	if c := f.counts(t); c.stock() != [3]int64{10, 0, 10} || c.ConnReservations != 0 || c.ServiceReservations != 0 {
		t.Fatalf("after everything expired: %+v", c)
	}
	if run, err := f.svc.ExpireDue(ctx, 10); err != nil || run.Expired != 0 || run.Failed != 0 {
		t.Fatalf("a second sweep: %+v, %v", run, err)
	}
}

// TestSettleLostRace: a movement of the item between prepare and write
// makes the settle worth running again, never a silent wrong count.
func TestSettleLostRace(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	r := f.mustCreate(t, 2)
	prep, err := f.svc.PrepareCommit(ctx, vendorID, r.ID, reservation.VersionInput{ExpectedVersion: 1})
	ops, conflict := prep.Ops, prep.Explain
	if err != nil {
		t.Fatal(err)
	}
	f.mustCreate(t, 1) // moves the item's version
	err = f.Store.Transact(ctx, ops...)
	ce, ok := store.AsCondition(err)
	if !ok {
		t.Fatalf("commit over a moved item: %v", err)
	}
	if err := conflict(ce); !errors.Is(err, idempotency.ErrRetry) {
		t.Fatalf("conflict %v, want a retry", err)
	}
	if _, err := f.commit(r.ID, 1); err != nil {
		t.Fatalf("the retried commit: %v", err)
	}
	if c := f.counts(t); c.stock() != [3]int64{8, 1, 7} || c.ConnReservations != 1 {
		t.Fatalf("after committing 2 beside a hold of 1: %+v", c)
	}
}

// TestBodies: quantity at least 1; the hold from 1 minute to 24 hours,
// 15 minutes when omitted; expected_version required on every move.
func TestBodies(t *testing.T) {
	for body, want := range map[string]time.Duration{
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1}`:                            reservation.DefaultHold,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1,"expires_in_seconds":60}`:    time.Minute,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1,"expires_in_seconds":86400}`: 24 * time.Hour,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1,"expires_in_seconds":59}`:    -1,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1,"expires_in_seconds":86401}`: -1,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":0}`:                            -1,
		`{"connection_id":"conn a","inventory_item_id":"inv_x_000","quantity":1}`:                            -1,
		`{"inventory_item_id":"inv_x_000","quantity":1}`:                                                     -1,
		`{"connection_id":"conn_a","inventory_item_id":"inv_x_000","quantity":1,"owner":"channel"}`:          -1,
	} {
		in, err := reservation.ParseCreate([]byte(body))
		if want < 0 {
			if err == nil {
				t.Errorf("%s accepted", body)
			}
			continue
		}
		if err != nil || in.Hold != want {
			t.Errorf("%s: hold %v err %v, want %v", body, in.Hold, err, want)
		}
	}
	if _, err := reservation.ParseVersion([]byte(`{}`)); err == nil {
		t.Error("a move without expected_version accepted")
	}
	if in, err := reservation.ParseRenew([]byte(`{"expected_version":3}`)); err != nil || in.Hold != reservation.DefaultHold || in.ExpectedVersion != 3 {
		t.Errorf("renew body: %+v %v", in, err)
	}
}
