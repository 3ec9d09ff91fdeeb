package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/store"
)

// Page is the page object of list responses.
type Page struct {
	NextCursor *string `json:"next_cursor"`
}

type listEnvelope struct {
	Data any  `json:"data"`
	Page Page `json:"page"`
}

// PageRequest is a parsed list request.
type PageRequest struct {
	Limit int
	// After is the sort key to continue after; empty for the first page.
	After   string
	binding cursor.Binding
}

// PageParams reads limit and page_after for a list of resource under the
// given canonical filters.
func (c *Call) PageParams(ctx context.Context, resource, filters string) (PageRequest, error) {
	q := c.R.URL.Query()
	for name := range q {
		if name != "limit" && name != "page_after" && !c.allowedFilter(name) {
			return PageRequest{}, errs.Ef(errs.CodeInvalidParameter, "%s: unknown query parameter", name)
		}
	}
	pr := PageRequest{binding: cursor.Binding{
		Resource: resource, VendorID: c.Principal.Vendor.ID, TokenID: c.Principal.Token.ID, Filters: filters}}
	n, ok := pageLimit(q)
	if !ok {
		return PageRequest{}, errs.E(errs.CodeInvalidParameter, "limit: must be an integer from 1 to 100")
	}
	pr.Limit = n
	if v, ok := q["page_after"]; ok {
		if len(v) > 1 {
			return PageRequest{}, errs.E(errs.CodeInvalidCursor, "page_after: give one cursor")
		}
		after, err := c.s.cursors.Decode(ctx, pr.binding, v[0])
		if err != nil {
			return PageRequest{}, err
		}
		pr.After = after
	}
	return pr, nil
}

// pageLimit is the page size the limit parameter asks for: 50 when it is
// absent, false unless it is one integer from 1 to 100.
func pageLimit(q url.Values) (int, bool) {
	v, ok := q["limit"]
	if !ok {
		return 50, true
	}
	n, err := strconv.Atoi(v[0])
	return n, err == nil && len(v) == 1 && n >= 1 && n <= maxPageLimit
}

// maxPageLimit is the largest page a client may ask for.
const maxPageLimit = 100

// pageAhead declares the page query (Route.PageAhead) of a list of the
// path vendor's records whose sort keys start with prefix, newest first
// when desc.
func pageAhead(prefix string, desc bool) func(*Call) []store.Query {
	return func(c *Call) []store.Query { return pageOr(c.pageQuery(prefix, desc, nil)) }
}

// pageOr is the declaration of q when ok, none otherwise.
func pageOr(q store.Query, ok bool) []store.Query {
	if !ok {
		return nil
	}
	return []store.Query{q}
}

// pageQuery is the first query of a page of the path vendor's records
// under prefix: limit+1 of them after the cursor's position, passed
// through start when set (a list whose cursor names a position of its
// own). False when the handler will refuse the limit or the cursor (which
// it checks in full), or would not query at all.
func (c *Call) pageQuery(prefix string, desc bool, start func(after string) (string, bool)) (store.Query, bool) {
	q := c.R.URL.Query()
	limit, ok := pageLimit(q)
	if !ok {
		return store.Query{}, false
	}
	var after string
	if v, ok := q["page_after"]; ok {
		if after, ok = cursor.Position(v[0]); !ok || len(v) > 1 {
			return store.Query{}, false
		}
		if start != nil {
			if after, ok = start(after); !ok {
				return store.Query{}, false
			}
		}
		if !strings.HasPrefix(after, prefix) || !utf8.ValidString(after) {
			return store.Query{}, false
		}
	}
	return store.Query{PK: datamodel.VendorPartition(c.R.PathValue("vendor_id")), Prefix: prefix, After: after, Limit: limit + 1, Desc: desc}, true
}

// allowedFilter reports whether a list route accepts the query parameter
// name besides the page parameters: the document declares it for the
// operation, or a route the document does not list named it through
// AllowFilters.
func (c *Call) allowedFilter(name string) bool {
	if c.Route.params != nil && c.Route.params.query[name] {
		return true
	}
	for _, f := range c.filters {
		if f == name {
			return true
		}
	}
	return false
}

// AllowFilters declares filter parameters of a list the document does not
// describe (a documented operation's come from the document).
func (c *Call) AllowFilters(names ...string) { c.filters = append(c.filters, names...) }

// ListPage writes page, read for pr, as a list response: a cursor to
// its Last when More says items follow it.
func ListPage[T any](ctx context.Context, c *Call, pr PageRequest, page store.PageOf[T]) error {
	var p Page
	if page.More {
		cur, err := c.s.cursors.Encode(ctx, pr.binding, page.Last)
		if err != nil {
			return err
		}
		p.NextCursor = &cur
	}
	if rows, ok := any(page.Items).([]json.RawMessage); ok {
		return c.encodedList(ctx, rows, p)
	}
	return c.JSON(ctx, 200, listEnvelope{Data: page.Items, Page: p})
}

// encodedList writes a page whose rows are already encoded, the bytes
// json.Marshal writes for a listEnvelope of them.
func (c *Call) encodedList(ctx context.Context, rows []json.RawMessage, p Page) error {
	page, err := json.Marshal(p)
	if err != nil {
		return err
	}
	n := len(`{"data":[],"page":}`) + len(page) + len(rows)
	for _, r := range rows {
		n += len(r)
	}
	held, _ := c.s.bodies.Get().(*[]byte)
	if held == nil || cap(*held) < n {
		b := make([]byte, 0, n)
		held = &b
	}
	b := append((*held)[:0], `{"data":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(b, `],"page":`...)
	b = append(b, page...)
	b = append(b, '}')
	c.raw(ctx, 200, b)
	// raw has copied b into the response: the buffer can serve another.
	if cap(b) <= maxHeldBody {
		*held = b[:0]
		c.s.bodies.Put(held)
	}
	return nil
}

// maxHeldBody bounds the buffers bodies keeps: a rare huge page is
// allocated for itself and not kept.
const maxHeldBody = 256 << 10

// pageReader reads one page of the caller's vendor: rows after the sort
// key after, at most limit.
type pageReader[V any] func(ctx context.Context, vendorID, after string, limit int) (store.PageOf[V], error)

// listed answers a list route of resource under the canonical filters with
// the page list reads.
func listed[V any](ctx context.Context, c *Call, resource, filters string, list pageReader[V]) error {
	pr, err := c.PageParams(ctx, resource, filters)
	if err != nil {
		return err
	}
	page, err := list(ctx, c.Principal.Vendor.ID, pr.After, pr.Limit)
	if err != nil {
		return err
	}
	return ListPage(ctx, c, pr, page)
}

// listedBy is listed for a list narrowed by the filter f.
func listedBy[F, V any](ctx context.Context, c *Call, resource, filters string, f F, list func(context.Context, string, string, int, F) (store.PageOf[V], error)) error {
	return listed(ctx, c, resource, filters, func(ctx context.Context, vendorID, after string, limit int) (store.PageOf[V], error) {
		return list(ctx, vendorID, after, limit, f)
	})
}
