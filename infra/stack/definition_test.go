package stack

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/resources"
)

// These tests need no synthesis: they check the definition and the route
// plan before any construct is made.

func group(name string, routes ...httpapi.Route) httpapi.Group {
	for i := range routes {
		routes[i].Scopes = []auth.Scope{auth.VendorsRead}
		routes[i].Handle = func(context.Context, *httpapi.Call) error { return nil }
	}
	return httpapi.Group{Name: name, Routes: func(*httpapi.Server) []httpapi.Route { return routes }}
}

func TestRoutesRefuseWhatAPIGatewayCannotRoute(t *testing.T) {
	get := func(p string) httpapi.Route { return httpapi.Route{Method: http.MethodGet, Path: p} }
	post := func(p string) httpapi.Route { return httpapi.Route{Method: http.MethodPost, Path: p} }
	for _, c := range []struct {
		name   string
		groups []httpapi.Group
		want   string
	}{
		{"a path in two functions", []httpapi.Group{group("a", get("/x")), group("b", post("/x"))}, "served by both"},
		{"a wildcard to the end", []httpapi.Group{group("a", get("/files/{path...}"))}, "no API Gateway equivalent"},
		{"an unknown catch-all", []httpapi.Group{group("a", get("/x"))}, "catch-all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Routes(c.groups, "vendors")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	rs, err := Routes([]httpapi.Group{group("vendors", get("/v"), post("/v"))}, "vendors")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range rs {
		keys = append(keys, r.Key+"→"+r.Function)
	}
	if got := strings.Join(keys, " "); got != "GET /v1/v→vendors POST /v1/v→vendors $default→vendors" {
		t.Errorf("routes = %s", got)
	}
}

func TestDefinitionChecks(t *testing.T) {
	ok := Default("dev")
	ok.Placeholder = t.TempDir()
	if err := ok.check(); err != nil {
		t.Fatalf("default: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*Definition)
		want string
	}{
		{"no build", func(d *Definition) { d.Placeholder, d.Assets = "", t.TempDir() }, "run make build"},
		{"bad stage", func(d *Definition) { d.Stage = "Dev" }, "stage"},
		{"workers without router", func(d *Definition) { d.StreamRouter = "" }, "stream router"},
		{"worker without env", func(d *Definition) {
			d.StreamRouter, d.Workers = "r", []Worker{{Name: "w"}}
		}, "QueueURLEnv"},
		{"sends to a stranger", func(d *Definition) {
			d.StreamRouter, d.Workers = "r", []Worker{{Name: "w", QueueURLEnv: "X", SendsTo: []string{"v"}}}
		}, "not a worker"},
		{"duplicate function", func(d *Definition) { d.Admin = "vendors" }, "used twice"},
		{"odd rate", func(d *Definition) { d.Scheduled = []Scheduled{{Name: "s", Every: 90 * time.Second}} }, "whole number of minutes"},
		{"domain without certificate", func(d *Definition) { d.Domain = &Domain{Name: "api.example.com"} }, "certificate"},
		{"a group the catch-all does not know", func(d *Definition) {
			d.API = append(d.API, API{Group: group("extra", httpapi.Route{Method: http.MethodGet, Path: "/extra"})})
		}, "catch-all knows"},
		{"a group the catch-all knows left out", func(d *Definition) { d.API = d.API[1:] }, "catch-all knows"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := ok
			c.edit(&d)
			if err := d.check(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestWorkersMatchTheSharedNames keeps the stack's workers and the
// LocalStack bootstrap's queues (both from shared/resources) in step.
func TestWorkersMatchTheSharedNames(t *testing.T) {
	deployed := map[string]string{}
	for _, w := range Default("dev").Workers {
		for _, q := range w.queues() {
			deployed[q.Name] = q.QueueURLEnv
		}
	}
	shared := resources.Workers()
	if len(deployed) != len(shared) {
		t.Fatalf("the stack deploys %d workers, shared/resources names %d", len(deployed), len(shared))
	}
	for _, w := range shared {
		if env, ok := deployed[w.Name]; !ok || env != w.URLEnv {
			t.Errorf("worker queue %s: the stack has %q, shared/resources %q", w.Name, env, w.URLEnv)
		}
	}
}
