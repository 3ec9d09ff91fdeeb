package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/store"
)

// Events is the Events group: the vendor's event log.
var Events = Group{Name: "events", Routes: func(s *Server) []Route {
	read := []auth.Scope{auth.WebhooksRead}
	return []Route{
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/events", Operation: "listEvents", Scopes: read, PageAhead: pageEvents, Handle: s.listEvents},
		{Method: http.MethodGet, Path: "/vendors/{vendor_id}/events/{event_id}", Operation: "getEvent", Scopes: read, Handle: s.getEvent},
	}
}}

// pageEvents is the first query of an events page: in the order asked
// for, from the cursor's position, or else from the after event's.
func pageEvents(c *Call) []store.Query {
	q := c.R.URL.Query()
	pq, ok := c.pageQuery(datamodel.EventPrefix, q.Get("order") != "asc", nil)
	if after := q.Get("after"); ok && pq.After == "" && after != "" {
		if !ids.Issued("evt", after) {
			return nil
		}
		pq.After = datamodel.EventPrefix + after
	}
	return pageOr(pq, ok)
}

// eventsQuery is a list request's filter and the event it starts after
// ("" for the start of the order).
func (s *Server) eventsQuery(c *Call) (f event.Filter, after, binding string, err error) {
	q := c.R.URL.Query()
	f = event.Filter{Asc: q.Get("order") == "asc", Now: s.deps.Clock.Now()}
	if v := q.Get("type"); v != "" {
		for _, t := range strings.Split(v, ",") {
			if !event.Known(t) {
				return f, "", "", errs.Ef(errs.CodeInvalidParameter, "type: %.64q is not an event type (GET /openapi.json lists them)", t)
			}
			if !slices.Contains(f.Types, t) {
				f.Types = append(f.Types, t)
			}
		}
	}
	after = q.Get("after")
	if after != "" && !ids.Issued("evt", after) {
		return f, "", "", errs.E(errs.CodeInvalidParameter, "after: must be the id of an event of this log (evt_...)")
	}
	// The binding of a newest-first list with at most one type is what it
	// was before order and after existed, so cursors issued then still work.
	binding = "type=" + strings.Join(f.Types, ",")
	if f.Asc {
		binding += "&order=asc"
	}
	if after != "" {
		binding += "&after=" + after
	}
	return f, after, binding, nil
}

func (s *Server) listEvents(ctx context.Context, c *Call) error {
	f, after, binding, err := s.eventsQuery(c)
	if err != nil {
		return err
	}
	pr, err := c.PageParams(ctx, "events", binding)
	if err != nil {
		return err
	}
	if pr.After == "" && after != "" {
		pr.After = datamodel.EventPrefix + after
	}
	evs, err := c.events().Page(ctx, c.Principal.Vendor.ID, f, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, evs)
}

func (s *Server) getEvent(ctx context.Context, c *Call) error {
	e, err := c.events().Get(ctx, c.Principal.Vendor.ID, c.R.PathValue("event_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, e)
}
