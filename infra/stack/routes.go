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
	// Key is the route key, "GET /v1/vendors/{vendor_id}", "ANY /v1/..." or
	// DefaultRoute.
	Key string
	// Method and Path make the key; both are empty for DefaultRoute.
	Method, Path string
	// Function is the folder in functions/ that serves it.
	Function string
	// Public routes take no credential: every route the service declares
	// without scopes, the ANY route of a path that has one, and $default
	// (any unknown path). No vendor's rate window covers them, so the
	// stage throttles them tighter (Definition.PublicThrottle).
	Public bool
	// Throttle is the per-client window a public route spends
	// (ratelimit.Public or ratelimit.Exchange), "" for none.
	Throttle ratelimit.Class
}

// Routes derives the HTTP API's routes from the service's own route table:
// each group is mounted as its Lambda mounts it and every route it serves
// becomes "METHOD /v1/path" to that group's function (net/http's {name}
// wildcards are API Gateway's path parameters as they are). Each path also
// gets an ANY route to the same function, so that another method reaches
// the function that owns the path and answers 405 with Allow, as the local
// server does; everything else goes through $default to catchAll, which
// answers the service's problem+json 404.
func Routes(groups []httpapi.Group, catchAll string) ([]Route, error) {
	cfg := config.Default()
	base := cfg.BasePath()
	owner := map[string]string{} // path → function
	public := map[string]bool{}  // path → some route of it is public
	seen := map[string]bool{}    // route key
	var out []Route
	for _, g := range groups {
		// The route table needs no store: routes are listed, never served.
		srv, err := httpapi.New(httpapi.Deps{Config: cfg, CursorKey: make([]byte, 32)}, g)
		if err != nil {
			return nil, fmt.Errorf("stack: mount %s: %w", g.Name, err)
		}
		var paths []string
		for _, r := range srv.Routes() {
			if strings.ContainsAny(r.Path, " *") || strings.Contains(r.Path, "...}") || !strings.HasPrefix(r.Path, "/") {
				return nil, fmt.Errorf("stack: group %s: route %s %s has no API Gateway equivalent", g.Name, r.Method, r.Path)
			}
			if !slices.Contains(methods, r.Method) || r.Method == "ANY" {
				return nil, fmt.Errorf("stack: group %s: method %q of %s is not an HTTP API route method", g.Name, r.Method, r.Path)
			}
			path := base + r.Path
			if fn, ok := owner[path]; ok && fn != g.Name {
				return nil, fmt.Errorf("stack: path %s is served by both %s and %s; one function must own a path", path, fn, g.Name)
			}
			if _, ok := owner[path]; !ok {
				owner[path] = g.Name
				paths = append(paths, path)
			}
			key := r.Method + " " + path
			if seen[key] {
				return nil, fmt.Errorf("stack: route %s appears twice", key)
			}
			seen[key] = true
			out = append(out, Route{Key: key, Method: r.Method, Path: path, Function: g.Name, Public: r.Scopes == nil, Throttle: r.Throttle})
			public[path] = public[path] || r.Scopes == nil
		}
		for _, p := range paths {
			out = append(out, Route{Key: "ANY " + p, Method: "ANY", Path: p, Function: g.Name, Public: public[p]})
		}
	}
	if !slices.ContainsFunc(groups, func(g httpapi.Group) bool { return g.Name == catchAll }) {
		return nil, fmt.Errorf("stack: the catch-all function %q serves no group", catchAll)
	}
	out = append(out, Route{Key: DefaultRoute, Function: catchAll, Public: true})
	return out, nil
}

// methods API Gateway's HTTP API accepts in a route key.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions, "ANY"}
