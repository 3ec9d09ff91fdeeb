package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The import rules of docs/architecture.md, held over every package of the
// module by its non-test imports.

const module = "github.com/moku/sellerapi/"

// Layers, from the process inwards (docs/architecture.md).
const (
	layerMain    = "main (functions/*)"
	layerWiring  = "wiring (shared/app, shared/lambdaapi)"
	layerHTTP    = "http (shared/httpapi)"
	layerDomain  = "domain"
	layerPort    = "port (shared/store, shared/queue, shared/blob)"
	layerBeside  = "beside the store port (store/roundtrip, store/readahead, store/decoded)"
	layerAdapter = "adapter (a port's subpackage)"
	layerBase    = "base (clock, errs, ids, fields, config, openapi, resources, client, webhook/signature)"
	layerTest    = "test support (a package named *test)"
	layerTool    = "tool (scripts, infra)"
)

var ports = []string{"shared/store", "shared/queue", "shared/blob"}

// besidePorts are what the store's callers keep beside it, which the port
// itself does not hold: the request's count of round trips and capacity
// (the adapters report to it), queries started ahead, and decoded
// documents.
var besidePorts = []string{"shared/store/roundtrip", "shared/store/readahead", "shared/store/decoded"}

// base are the leaf packages every layer may use: they know no domain.
var base = []string{"shared/clock", "shared/errs", "shared/ids", "shared/fields", "shared/config",
	"shared/openapi", "shared/resources", "shared/client", "shared/webhook/signature"}

// layer classifies a package of the module by its path; whatever is not
// named here is domain, so that a new domain package (a schema package
// included) needs no change to the rules.
func layer(p string) string {
	p = strings.TrimPrefix(p, module)
	under := func(roots ...string) bool {
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, r+"/") {
				return true
			}
		}
		return false
	}
	switch {
	case strings.HasSuffix(p, "test"):
		return layerTest
	case under("scripts", "infra", "localstack", "events"):
		return layerTool
	case under("functions"):
		return layerMain
	case under("shared/app", "shared/lambdaapi"):
		return layerWiring
	case under("shared/httpapi"):
		return layerHTTP
	case slices.Contains(ports, p):
		return layerPort
	case slices.Contains(besidePorts, p):
		return layerBeside
	case under(ports...):
		return layerAdapter
	case under(base...):
		return layerBase
	}
	return layerDomain
}

// mayImport is, for each layer, the layers its packages may import.
var mayImport = map[string][]string{
	layerMain:    {layerWiring, layerHTTP, layerDomain, layerPort, layerBeside, layerAdapter, layerBase},
	layerWiring:  {layerWiring, layerHTTP, layerDomain, layerPort, layerBeside, layerAdapter, layerBase},
	layerHTTP:    {layerHTTP, layerDomain, layerPort, layerBeside, layerBase},
	layerDomain:  {layerDomain, layerPort, layerBeside, layerBase},
	layerPort:    {layerPort, layerBase},
	layerBeside:  {layerPort, layerBeside, layerBase},
	layerAdapter: {layerPort, layerBeside, layerBase},
	layerBase:    {layerPort, layerBase},
}

// embeddedOnly are the packages only the local binary (and tests) may
// link: the embedded store, its queue and their wiring.
var embeddedOnly = []string{"modernc.org/sqlite", module + "shared/store/sqlite", module + "shared/queue/sqlitequeue",
	module + "shared/app/embedded"}

// goList runs go list at the module's root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestLayers: every package imports only the layers its own may, and the
// wiring's core (shared/app) and the Lambda front (shared/lambdaapi) import
// no embedded adapter.
func TestLayers(t *testing.T) {
	lines := goList(t, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	checked := 0
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		from := layer(pkg)
		allowed, ruled := mayImport[from]
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module) {
				if strings.HasPrefix(imp, "modernc.org/sqlite") && from != layerAdapter {
					t.Errorf("%s (%s) imports %s: only the embedded store's adapter may", pkg, from, imp)
				}
				continue
			}
			to := layer(imp)
			if to == layerTest && from != layerTest && from != layerTool {
				t.Errorf("%s (%s) imports the test support package %s", pkg, from, imp)
			}
			if ruled && !slices.Contains(allowed, to) {
				t.Errorf("%s (%s) imports %s (%s): %s may import only %s", pkg, from, imp, to, from, strings.Join(allowed, ", "))
			}
			checked++
		}
		core := pkg == module+"shared/app" || pkg == module+"shared/lambdaapi"
		for _, imp := range imports {
			if core && (slices.Contains(embeddedOnly, imp) || pkg == module+"shared/app" && layer(imp) == layerAdapter) {
				t.Errorf("%s imports the adapter %s: the process's main wires adapters (app/awsapp, app/embedded)", pkg, imp)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked %d imports of the module's own packages; go list found too few", checked)
	}
}

// encoder is the image encoder's packages: only the media Lambda (and the
// local binary) take uploads.
var encoder = []string{module + "shared/media/canonical", module + "shared/media/vp8enc"}

// TestLambdasLinkNoEmbeddedAdapter: no function deployed to Lambda links
// the embedded store, its queue or their wiring (the local binary does),
// and none but the media function links the image encoder.
func TestLambdasLinkNoEmbeddedAdapter(t *testing.T) {
	dirs, err := os.ReadDir(filepath.Join("..", "..", "functions"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "local" {
			continue
		}
		n++
		deps := goList(t, "-deps", "./functions/"+d.Name())
		for _, bad := range embeddedOnly {
			if slices.Contains(deps, bad) {
				t.Errorf("functions/%s links %s", d.Name(), bad)
			}
		}
		for _, enc := range encoder {
			if slices.Contains(deps, enc) != (d.Name() == "media") {
				t.Errorf("functions/%s links %s: %v; only the media function should", d.Name(), enc, slices.Contains(deps, enc))
			}
		}
		// The deploy hook serves CodeDeploy, not the service: it wires no
		// store, queue or blob, only the CodeDeploy and Lambda clients.
		if d.Name() != "deploy-hook" && !slices.Contains(deps, module+"shared/app/awsapp") {
			t.Errorf("functions/%s does not link shared/app/awsapp: how does it wire its adapters?", d.Name())
		}
	}
	if n < 20 {
		t.Fatalf("found %d Lambdas under functions/", n)
	}
}
