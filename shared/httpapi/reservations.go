package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/reservation"
	"github.com/moku/sellerapi/shared/store"
)

// Reservations is the Reservations group.
var Reservations = Group{Name: "reservations", Routes: func(s *Server) []Route {
	read, write := []auth.Scope{auth.ReservationsRead}, []auth.Scope{auth.ReservationsWrite}
	base := "/vendors/{vendor_id}/inventory-reservations"
	one := base + "/{reservation_id}"
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listReservations", Scopes: read, PageAhead: pageAhead(datamodel.ReservationPrefix, false), Handle: s.listReservations},
		{Method: http.MethodPost, Path: base, Operation: "createReservation", Scopes: write,
			ReadAhead: aheadOf(aheadReservationBody, aheadAuthority, aheadReceipt("reservations.create", idempotency.ConnectionKeyPattern)), Handle: s.createReservation},
		{Method: http.MethodGet, Path: one, Operation: "getReservation", Scopes: read, ReadAhead: aheadOf(aheadReservation), Handle: s.getReservation},
		{Method: http.MethodPost, Path: one + "/renew", Operation: "renewReservation", Scopes: write, Handle: s.renewReservation},
		{Method: http.MethodPost, Path: one + "/commit", Operation: "commitReservation", Scopes: write, Handle: s.settleReservation("reservations.commit", reservation.Service.PrepareCommit)},
		{Method: http.MethodPost, Path: one + "/release", Operation: "releaseReservation", Scopes: write, Handle: s.settleReservation("reservations.release", reservation.Service.PrepareRelease)},
	}
}}

func (s *Server) listReservations(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := reservation.Filter{Status: q.Get("status"), ConnectionID: q.Get("connection_id")}
	return listedBy(ctx, c, "reservations", "status="+f.Status+"&connection_id="+f.ConnectionID, f, c.reservations().List)
}

func (s *Server) getReservation(ctx context.Context, c *Call) error {
	r, err := c.reservations().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("reservation_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, r.View())
}

func (c *Call) mutateReservation(ctx context.Context, operation string, status int, body []byte, prepare func(context.Context) (store.Prepared[reservation.View], error)) error {
	return c.Mutate(ctx, operation, idempotency.ConnectionKeyPattern, body, answer(status, prepare))
}

func (s *Server) createReservation(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, reservation.ParseCreate)
	if err != nil {
		return err
	}
	return c.mutateReservation(ctx, "reservations.create", http.StatusCreated, body, func(ctx context.Context) (store.Prepared[reservation.View], error) {
		return c.reservations().PrepareCreate(ctx, c.Principal.Vendor.ID, in)
	})
}

func (s *Server) renewReservation(ctx context.Context, c *Call) error {
	body, in, err := parsed(c, 0, reservation.ParseRenew)
	if err != nil {
		return err
	}
	return c.mutateReservation(ctx, "reservations.renew", http.StatusOK, body, func(ctx context.Context) (store.Prepared[reservation.View], error) {
		return c.reservations().PrepareRenew(ctx, c.Principal.Vendor.ID, c.R.PathValue("reservation_id"), in)
	})
}

type settleFunc = func(reservation.Service, context.Context, string, string, reservation.VersionInput) (store.Prepared[reservation.View], error)

func (s *Server) settleReservation(operation string, settle settleFunc) func(context.Context, *Call) error {
	return func(ctx context.Context, c *Call) error {
		body, in, err := parsed(c, 0, reservation.ParseVersion)
		if err != nil {
			return err
		}
		return c.mutateReservation(ctx, operation, http.StatusOK, body, func(ctx context.Context) (store.Prepared[reservation.View], error) {
			return settle(c.reservations(), ctx, c.Principal.Vendor.ID, c.R.PathValue("reservation_id"), in)
		})
	}
}
