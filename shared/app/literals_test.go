package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// built are the types that are services: a composite literal of one that
// sets a field builds a service. Service is one in any package; the rest
// are named with their package. An empty literal (the zero value a failed
// constructor returns) builds nothing.
var built = map[string]bool{
	"idempotency.Keeper": true, "ratelimit.Limiter": true, "event.Log": true,
	"webhook.Deliverer": true, "webhook.Replayer": true, "sellerorder.Projector": true,
}

// root is the one package that builds services (NewServices and the works
// over them) for every process. A binary's own main (package main: the
// tools under scripts/) is its composition root too.
const root = "shared/app"

// serviceLiterals lists, in the module's non-test Go files under dir (the
// repository's root), every literal that builds a service outside root and
// the mains, as "file:line: pkg.Type".
func serviceLiterals(t *testing.T, dir string) (found []string, files int) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			// infra is its own module; node_modules and testdata hold no
			// code of the service; a package named *test is test support.
			if rel != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || rel == "infra" || strings.HasSuffix(name, "test")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.ToSlash(filepath.Dir(rel)) == root {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		if f.Name.Name == "main" {
			return nil
		}
		// The local name of each import, for the literal's package.
		imports := map[string]string{}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				imports[im.Name.Name] = name
			} else {
				imports[name] = name
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok || len(lit.Elts) == 0 {
				return true
			}
			var pkg, typ string
			switch x := lit.Type.(type) {
			case *ast.Ident:
				pkg, typ = f.Name.Name, x.Name
			case *ast.SelectorExpr:
				id, ok := x.X.(*ast.Ident)
				if !ok {
					return true
				}
				pkg, typ = imports[id.Name], x.Sel.Name
			default:
				return true
			}
			if typ == "Service" || built[pkg+"."+typ] {
				found = append(found, fset.Position(lit.Pos()).String()[len(dir)+1:]+": "+pkg+"."+typ)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found, files
}

// TestServicesBuiltAtTheRoot: no service is built outside the composition
// root (shared/app's NewServices and the works over its services) and the
// tests; the handlers, the workers and the domain packages receive built
// services and copy them (bound to a request's view of the store, say),
// never build their own.
func TestServicesBuiltAtTheRoot(t *testing.T) {
	found, files := serviceLiterals(t, filepath.Join("..", ".."))
	if files < 200 {
		t.Fatalf("parsed %d files; the walk found too few", files)
	}
	for _, f := range found {
		t.Errorf("%s is built here: build it in %s (NewServices) and hand it in", f, root)
	}
}

// TestServiceLiteralsFound: the walk finds a service built outside the
// root, in any package's spelling (another package's, its own, renamed),
// and lets the root, a main, a test and a zero value be.
func TestServiceLiteralsFound(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, src string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shared/x/x.go", `package x
import (
	"github.com/moku/sellerapi/shared/catalog"
	rl "github.com/moku/sellerapi/shared/ratelimit"
)
var a = catalog.Service{Store: nil}
var b = rl.Limiter{Reads: 1}
var zero = catalog.Service{}
`)
	write("shared/y/y.go", "package y\ntype Service struct{ N int }\nvar s = Service{N: 1}\n")
	write("shared/x/x_test.go", "package x\nvar c = catalog.Service{Store: nil}\n")
	write("shared/app/root.go", "package app\nvar d = catalog.Service{Store: nil}\n")
	write("scripts/tool/main.go", "package main\nvar e = catalog.Service{Store: nil}\n")
	write("shared/xtest/x.go", "package xtest\nvar f = catalog.Service{Store: nil}\n")
	found, files := serviceLiterals(t, dir)
	want := []string{"shared/x/x.go:6:9: catalog.Service", "shared/x/x.go:7:9: ratelimit.Limiter", "shared/y/y.go:3:9: y.Service"}
	if files != 3 || !slices.Equal(found, want) {
		t.Fatalf("found %q in %d files, want %q in 3", found, files, want)
	}
}
