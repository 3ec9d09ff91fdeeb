// Package httpapi turns HTTP into service calls. It owns the platform rules
// that hold for every route (request ids, problem+json errors, bearer
// authentication, vendor grants, scopes, rate windows, JSON bodies, cursor
// pages, fail-closed behaviour) and one file per operation group that maps
// routes to the domain services. A Lambda mounts the groups it serves; the
// local server mounts them all.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/ids"
	"github.com/moku/sellerapi/shared/media"
	"github.com/moku/sellerapi/shared/openapi"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/roundtrip"
)

// Deps are what the server needs from its process.
type Deps struct {
	Config config.Config
	// Store is the process's store: what each request's view of it
	// (Call.store) and its reads ahead go to.
	Store store.Store
	Clock clock.Clock
	Log   *slog.Logger
	// Cursors signs and checks page cursors: the keyring's live keys
	// (cursor.Keyring.Live).
	Cursors cursor.Signer
	// CursorKey, when Cursors is nil, is one fixed key instead: for a
	// server that only lists its routes (infra's route table).
	CursorKey []byte
	// Services are the services the server calls, built by the process's
	// root (app.NewServices); a server that only lists its routes needs
	// none.
	Services Services
	// Observe, when set, is told about every finished request; benchmarks
	// and budget tests read the store round trips from it.
	Observe func(Observation)
}

// Observation describes a finished request.
type Observation struct {
	Operation string
	Status    int
	// RoundTrips counts every store call; SequentialRoundTrips the waits
	// among them (calls made side by side count once).
	RoundTrips           int64
	SequentialRoundTrips int64
	// ConsumedCapacity is the capacity units the store reported (DynamoDB):
	// ReadUnits and WriteUnits, summed.
	ConsumedCapacity      float64
	ReadUnits, WriteUnits float64
	Duration              time.Duration
}

// Route is one operation.
type Route struct {
	Method string
	// Path is relative to the base path, in net/http pattern syntax.
	Path string
	// Operation is the OpenAPI operationId.
	Operation string
	// Scopes are all required; a nil Scopes makes the route public.
	Scopes []auth.Scope
	// Credential is the kind of bearer credential the route takes; the zero
	// value is a personal access token. A route for another kind has a
	// non-nil, empty Scopes.
	Credential Credential
	// Throttle, on a public route, is the class of the per-client window
	// the request spends before its handler runs; empty for routes that do
	// no work worth throttling (static documents).
	Throttle ratelimit.Class
	// ReadAhead, on a token route, names the items the handler will read
	// (its resource, the idempotency receipt of its mutation, the vendor's
	// authority): they are read in the request's admission batch beside
	// the token and the vendor, and the handler's reads of them cost no
	// further round trip. Keys derive from the path and headers only; the
	// items are answered only once the credentials are admitted.
	ReadAhead func(*Call) []store.Key
	// PageAhead, on a token list route, is the first query of the page its
	// handler will read, from the path, the query string and the cursor's
	// position (unchecked: the handler checks the cursor as before), then
	// any query whose range the handler reads by key; none when there is
	// nothing to start. The queries start beside the admission batch and,
	// once the request is admitted, answer the handler's identical first
	// query and its reads of keys in their ranges; on a refusal they are
	// dropped unread.
	PageAhead func(*Call) []store.Query
	Handle    func(context.Context, *Call) error

	// params are the document's checks of the operation's path and query
	// parameters, set by New; nil for an operation the document does not
	// list.
	params *paramChecks
	// elsewhere marks a route of a group another process serves
	// (Elsewhere): its path is known, its operation not served here.
	elsewhere bool
}

// Credential is a kind of bearer credential.
type Credential int

const (
	// TokenCredential is a personal access token (mkpat_).
	TokenCredential Credential = iota
	// DiscoveryCredential is a store-plugin pairing's discovery credential
	// (mkdsc_): it reaches only the routes that name it.
	DiscoveryCredential
)

// Group is an operation group: a name and the routes it contributes.
type Group struct {
	Name   string
	Routes func(*Server) []Route
}

// Elsewhere is the group of the routes that groups serve in other
// processes: a server that mounts it serves none of them but knows their
// paths. At such a path it answers a method none of the path's routes
// takes 405 with Allow, as the path's own server does, and a method one
// of them takes 404, as any path it does not serve (the path's own
// server, not this one, answers that). The routes of groups the server
// also mounts are its own. Every API Lambda mounts it with every group
// (app.Mounted), so that the one behind API Gateway's $default route
// answers a wrong method at any path as the path's function would, with
// no route per path to send it there (docs/decisions.md, "Wrong methods
// through the catch-all").
func Elsewhere(groups ...Group) Group {
	return Group{Name: "elsewhere", Routes: func(s *Server) []Route {
		var out []Route
		for _, g := range groups {
			for _, r := range g.Routes(s) {
				out = append(out, Route{Method: r.Method, Path: r.Path, elsewhere: true})
			}
		}
		return out
	}}
}

// Server serves the mounted groups.
type Server struct {
	deps     Deps
	mux      *http.ServeMux
	routes   []Route
	basePath string
	cursors  cursor.Signer
	// svc are the services the root built (Deps.Services); a request
	// calls copies bound to its view of the store (services.go).
	svc Services
	// bodies holds list pages' response buffers (*[]byte) between
	// requests: a page of 50 is tens of KB, allocated and cleared anew
	// for each request otherwise.
	bodies sync.Pool
}

// New builds a server for the given groups.
func New(d Deps, groups ...Group) (*Server, error) {
	if d.Cursors == nil {
		codec, err := cursor.NewCodec(d.CursorKey)
		if err != nil {
			return nil, err
		}
		d.Cursors = cursor.Fixed{Codec: codec}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	// Every event a request's transaction writes names the request.
	d.Store = event.CausedStore{Store: d.Store}
	s := &Server{
		deps:     d,
		mux:      http.NewServeMux(),
		basePath: d.Config.BasePath(),
		cursors:  d.Cursors,
		svc:      d.Services,
	}
	var routes []Route
	served := map[string]bool{} // "METHOD path" of the mounted operations
	for _, g := range groups {
		for _, r := range g.Routes(s) {
			routes = append(routes, r)
			if !r.elsewhere {
				served[r.Method+" "+r.Path] = true
			}
		}
	}
	// The document's checks of the mounted operations' parameters.
	table, mounted := openapi.Parameters(), map[string][]openapi.Parameter{}
	for _, r := range routes {
		if p, ok := table[r.Operation]; ok && !r.elsewhere {
			mounted[r.Operation] = p
		}
	}
	checks, err := compileParams(mounted)
	if err != nil {
		return nil, err
	}
	byPath := map[string][]Route{}
	var paths []string
	for _, r := range routes {
		if r.elsewhere && served[r.Method+" "+r.Path] {
			continue
		}
		r.params = checks[r.Operation]
		if _, ok := byPath[r.Path]; !ok {
			paths = append(paths, r.Path)
		}
		byPath[r.Path] = append(byPath[r.Path], r)
		if !r.elsewhere {
			s.routes = append(s.routes, r)
		}
	}
	for _, p := range paths {
		s.mux.Handle(s.basePath+p, s.dispatch(byPath[p]))
	}
	s.mux.Handle("/", http.HandlerFunc(s.notFound))
	return s, nil
}

// notFound answers a request for no operation this server serves.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	ctx, c := s.newCall(w, r, Route{})
	defer c.finish(ctx)
	c.fail(ctx, errs.E(errs.CodeNotFound, "No operation exists at this path."))
}

// MediaDecodes reports the process's image decodes: the memory and slots
// they hold, how many wait, and the high-water marks.
func (s *Server) MediaDecodes() media.GateStats { return s.svc.Media.Gate.Stats() }

// Routes lists the mounted routes (not those of Elsewhere).
func (s *Server) Routes() []Route { return slices.Clone(s.routes) }

// ServeHTTP serves a request. A path that is not in canonical form (".",
// ".." or empty segments) is refused here with problem+json: the mux would
// answer it with a text/html redirect to the cleaned path, sending a client
// somewhere it did not name. Behind an edge (config.EdgeSecret), a request
// that did not pass it is refused first (edge.go).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.viaEdge(r) {
		s.refuseOffEdge(w, r)
		return
	}
	if p := r.URL.Path; r.Method != http.MethodConnect && !canonicalPath(p) {
		ctx, c := s.newCall(w, r, Route{})
		defer c.finish(ctx)
		c.fail(ctx, errs.Ef(errs.CodeInvalidRequest, "path: %q is not in canonical form (no \".\", \"..\" or empty segments); the service does not clean or redirect paths", p))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// canonicalPath reports whether p is an absolute path with no ".", ".."
// or empty segment (a trailing slash aside).
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	return c == p || c != "/" && c+"/" == p // "//" is not "/" with a trailing slash
}

// dispatch picks the route for the method, or answers 405 with Allow.
func (s *Server) dispatch(routes []Route) http.Handler {
	var allow []string
	for _, r := range routes {
		allow = append(allow, r.Method)
	}
	sort.Strings(allow)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, rt := range routes {
			if rt.Method == r.Method && rt.elsewhere {
				s.notFound(w, r)
				return
			}
			if rt.Method == r.Method {
				s.serve(w, r, rt)
				return
			}
		}
		ctx, c := s.newCall(w, r, Route{})
		defer c.finish(ctx)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		c.fail(ctx, errs.Ef(errs.CodeMethodNotAllowed, "%s is not allowed here; allowed: %s.", r.Method, strings.Join(allow, ", ")))
	})
}

// serve runs the platform rules, then the route's handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt Route) {
	ctx, c := s.newCall(w, r, rt)
	defer c.finish(ctx)
	defer func() {
		if p := recover(); p != nil {
			c.logger().ErrorContext(ctx, "panic", "panic", p)
			c.fail(ctx, errs.E(errs.CodeInternal, "An unexpected error occurred."))
		}
	}()
	if err := s.admit(ctx, c, rt); err != nil {
		c.fail(ctx, err)
		return
	}
	if c.hasReceivers {
		ctx = pipeline.WithReceivers(ctx, c.receivers)
	}
	if err := c.checkParams(); err != nil {
		c.fail(ctx, err)
		return
	}
	if err := rt.Handle(ctx, c); err != nil {
		c.fail(ctx, err)
	}
}

func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// newCall starts a request: its context (id, deadline, round-trip
// counter), which the caller hands to everything that serves it, and its
// Call.
func (s *Server) newCall(w http.ResponseWriter, r *http.Request, rt Route) (context.Context, *Call) {
	rid := ids.New("req")
	w.Header().Set("X-Request-Id", rid)
	ctx, cancel := context.WithTimeout(r.Context(), s.deps.Config.StoreTimeout)
	ctx, rts := roundtrip.With(ctx)
	ctx = ids.WithRequestID(ctx, rid)
	rec := &recorder{ResponseWriter: w}
	c := &Call{
		W: rec, RequestID: rid, Route: rt,
		s: s, rec: rec, cancel: cancel, start: time.Now(), roundTrips: rts,
		logAttrs: append(make([]slog.Attr, 0, 12), slog.String("request_id", rid)),
	}
	c.R = r.WithContext(ctx)
	// The request's view of the store, which the services it calls are
	// bound to; its rate gate is set once admission starts the decision.
	c.view = gatedStore{Store: s.deps.Store}
	return ctx, c
}

// decodeSlots is the decodes a process runs at once: its cores, and at
// least two, so that with one vendor's share (half the slots) taken another
// vendor's upload still finds one (media.Gate).
func decodeSlots() int { return max(2, runtime.GOMAXPROCS(0)) }
