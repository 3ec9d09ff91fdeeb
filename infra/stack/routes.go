package stack

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/ratelimit"
)

// DefaultRoute is API Gateway's catch-all route key.
const DefaultRoute = "$default"

// Route is one HTTP API route and the function it goes to.
type Route struct {
	// Key is the route key, "GET /v1/vendors/{vendor_id}" or DefaultRoute.
	Key string
	// Method and Path make the key; both are empty for DefaultRoute.
	Method, Path string
	// Function is the folder in functions/ that serves it.
	Function string
	// Public routes take no credential: every route the service declares
	// without scopes, and $default (an unknown path, or a method a path
	// does not take). No vendor's rate window covers them, so the stage
	// throttles them tighter (Definition.PublicThrottle).
	Public bool
	// Throttle is the per-client window a public route spends
	// (ratelimit.Public or ratelimit.Exchange), "" for none.
	Throttle ratelimit.Class
}

// Routes derives the HTTP API's routes from the service's own route table:
// each group is mounted as its Lambda mounts it and every route it serves
// becomes "METHOD /v1/path" to that group's function (net/http's {name}
// wildcards are API Gateway's path parameters as they are). Everything
// else goes through $default to catchAll, which knows every group's paths
// (httpapi.Elsewhere, mounted by app.Handler): it answers a method a
// path does not take 405 with the path's Allow, as the path's function
// would, and an unknown path the service's problem+json 404. A route per
// path (ANY) would send the former to the path's own function, at a
// resource of the stack's 500 each (docs/decisions.md, "Wrong methods
// through the catch-all").
func Routes(groups []httpapi.Group, catchAll string) ([]Route, error) {
	cfg := config.Default()
	base := cfg.BasePath()
	owner := map[string]string{} // path → function
	seen := map[string]bool{}    // route key
	var out []Route
	for _, g := range groups {
		// The route table needs no store: routes are listed, never served.
		srv, err := httpapi.New(httpapi.Deps{Config: cfg, CursorKey: make([]byte, 32)}, g)
		if err != nil {
			return nil, fmt.Errorf("stack: mount %s: %w", g.Name, err)
		}
		for _, r := range srv.Routes() {
			if strings.ContainsAny(r.Path, " *") || strings.Contains(r.Path, "...}") || !strings.HasPrefix(r.Path, "/") {
				return nil, fmt.Errorf("stack: group %s: route %s %s has no API Gateway equivalent", g.Name, r.Method, r.Path)
			}
			if !slices.Contains(methods, r.Method) {
				return nil, fmt.Errorf("stack: group %s: method %q of %s is not an HTTP API route method", g.Name, r.Method, r.Path)
			}
			path := base + r.Path
			if fn, ok := owner[path]; ok && fn != g.Name {
				return nil, fmt.Errorf("stack: path %s is served by both %s and %s; one function must own a path", path, fn, g.Name)
			}
			owner[path] = g.Name
			key := r.Method + " " + path
			if seen[key] {
				return nil, fmt.Errorf("stack: route %s appears twice", key)
			}
			seen[key] = true
			out = append(out, Route{Key: key, Method: r.Method, Path: path, Function: g.Name, Public: r.Scopes == nil, Throttle: r.Throttle})
		}
	}
	if !slices.ContainsFunc(groups, func(g httpapi.Group) bool { return g.Name == catchAll }) {
		return nil, fmt.Errorf("stack: the catch-all function %q serves no group", catchAll)
	}
	out = append(out, Route{Key: DefaultRoute, Function: catchAll, Public: true})
	return out, nil
}

// methods are the HTTP API's route key methods a route may have (not ANY:
// a wrong method goes through $default).
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}
