package httpapi

import (
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/event"
)

// Events is the Events group: the vendor's event log.
var Events = Group{Name: "events", Routes: func(s *Server) []Route {
	read := []auth.Scope{auth.WebhooksRead}
	return []Route{
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/events", Operation: "listEvents", Scopes: read, PageAhead: pageAhead(datamodel.EventPrefix, true), Handle: s.listEvents},
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/events/{event_id}", Operation: "getEvent", Scopes: read, Handle: s.getEvent},
	}
}}

func (s *Server) listEvents(c *Call) error {
	typ := c.R.URL.Query().Get("type")
	pr, err := c.PageParams("events", "type="+typ)
	if err != nil {
		return err
	}
	evs, last, more, err := event.Log{Store: gatedStore{Store: s.deps.Store}}.List(c.Ctx, c.Principal.Vendor.ID, typ, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return c.List(pr, evs, last, more)
}

func (s *Server) getEvent(c *Call) error {
	e, err := event.Log{Store: gatedStore{Store: s.deps.Store}}.Get(c.Ctx, c.Principal.Vendor.ID, c.R.PathValue("event_id"))
	if err != nil {
		return err
	}
	return c.Data(http.StatusOK, e)
}
