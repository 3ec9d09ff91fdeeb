package clocktest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The constructors that take a clock, by import path and name: a test that
// calls one must name the clock (an option called WithClock), so that the
// store, queue or app decides time by the test's clock, not the wall's.
var needsClock = map[string]string{
	"github.com/moku/sellerapi/shared/store/sqlite.Open":  "sqlite.WithClock(c.Now)",
	"github.com/moku/sellerapi/shared/store/dynamodb.New": "dynamodb.WithClock(c.Now)",
	"github.com/moku/sellerapi/shared/app.New":            "app.WithClock(c)",
}

// Literal is the marker of a time.Date that is a constant of a format, not
// a moment a test lives at (the zip format's 1980 epoch): a line comment
// with it, beside the call, exempts the call from the fixed-date rule.
const Literal = "clocktest:literal"

// lint reports where a test file could decide time by two clocks: a fixed
// date written as a time.Date literal (the shifted run cannot move it), a
// store or app opened without naming its clock, or a queue handed the
// wall clock's time.Now.
func lint(fset *token.FileSet, f *ast.File) []string {
	exempt := map[int]bool{}
	for _, g := range f.Comments {
		if strings.Contains(g.Text(), Literal) {
			exempt[fset.Position(g.Pos()).Line] = true
		}
	}
	imports := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndex(p, "/")+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		imports[name] = p
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		fn := qualified(imports, call.Fun)
		at := fset.Position(call.Pos()).String()
		switch {
		case fn == "time.Date" && !exempt[fset.Position(call.Pos()).Line]:
			out = append(out, at+": a fixed date as a time.Date literal: use clocktest.Date, which the shifted run moves")
		case needsClock[fn] != "" && !hasClockOption(call):
			out = append(out, at+": "+fn[strings.LastIndex(fn, "/")+1:]+" without the test's clock: pass "+needsClock[fn]+" (clock.System{} where the test runs on the wall clock)")
		case fn == "github.com/moku/sellerapi/shared/queue/sqlitequeue.New" && len(call.Args) > 1 && qualified(imports, call.Args[1]) == "time.Now":
			out = append(out, at+": a queue on time.Now: pass the test's clock (c.Now, or clock.System{}.Now)")
		}
		return true
	})
	return out
}

// qualified names a selector pkg.Name by its import path, or "".
func qualified(imports map[string]string, e ast.Expr) string {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || imports[x.Name] == "" {
		return ""
	}
	return imports[x.Name] + "." + sel.Sel.Name
}

func hasClockOption(call *ast.CallExpr) bool {
	for _, a := range call.Args {
		if c, ok := a.(*ast.CallExpr); ok {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "WithClock" {
				return true
			}
		}
	}
	return false
}

// testCode tells whether a file is test code: a _test.go file, or a file of
// a test-support package (apitest, storetest, lambdatest, …).
func testCode(path string, f *ast.File) bool {
	return strings.HasSuffix(path, "_test.go") || strings.HasSuffix(f.Name.Name, "test")
}

// TestEveryTestTakesItsClock holds the rule of docs/decisions.md over the
// whole repository, both modules: no test reads the wall clock where an
// injected clock exists.
func TestEveryTestTakesItsClock(t *testing.T) {
	root := repoRoot(t)
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".tools", "node_modules", "cdk.out", "testdata", "dist", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Base(path) == "clocktest.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if !testCode(path, f) {
			return nil
		}
		files++
		for _, finding := range lint(fset, f) {
			t.Error(finding)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d test files under %s: the walk is not seeing the repository", files, root)
	}
}

// TestLintCatchesTheExpiredFixture: the defect that turned main red on
// 2026-11-22 (a job fixture on a fake clock, its store on the wall clock)
// is found, and so is each other shape the rule names; the repaired
// fixture is not.
func TestLintCatchesTheExpiredFixture(t *testing.T) {
	const src = `package jobrun_test

import (
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/clock"
	ddb "github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/queue/sqlitequeue"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

func broken() {
	st, _ := sqlite.Open(dir)
	c := clock.NewFake(time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC))
	_ = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC) // clocktest:literal: a format's epoch
	_ = ddb.New(client, table)
	_, _ = app.New(ctx, cfg, app.WithStore(st))
	_, _ = sqlitequeue.New(db, time.Now)
}

func repaired() {
	c := clocktest.Fake(2026, 11, 22, 8, 0, 0)
	st, _ := sqlite.Open(dir, sqlite.WithClock(c.Now))
	_ = ddb.New(client, table, ddb.WithClock(c.Now))
	_, _ = app.New(ctx, cfg, app.WithStore(st), app.WithClock(c))
	_, _ = sqlitequeue.New(db, c.Now)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fixture_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := lint(fset, f)
	want := []string{"sqlite.Open without", "time.Date literal", "dynamodb.New without", "app.New without", "queue on time.Now"}
	if len(got) != len(want) {
		t.Fatalf("findings %q, want one each of %q", got, want)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) || !strings.HasPrefix(got[i], "fixture_test.go:") {
			t.Errorf("finding %d = %q, want it to say %q", i, got[i], w)
		}
	}
}

// repoRoot is the folder of the main module's go.mod.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/moku/sellerapi\n") {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod of github.com/moku/sellerapi above the test")
		}
		dir = parent
	}
}
