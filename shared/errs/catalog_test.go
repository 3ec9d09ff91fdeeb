package errs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
)

// declared reads the Code constants of catalog.go: name to value.
func declared(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "catalog.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, n := range vs.Names {
				v, err := strconv.Unquote(vs.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatal(err)
				}
				out[n.Name] = v
			}
		}
	}
	return out
}

// TestEachCodeMapsOnce: every declared code is in the catalog exactly once,
// with a title and a kind of its own; no two codes share a value, a title or
// a problem type slug.
func TestEachCodeMapsOnce(t *testing.T) {
	consts := declared(t)
	if len(consts) < 40 {
		t.Fatalf("read only %d Code constants from catalog.go", len(consts))
	}
	entries := map[errs.Code]int{}
	titles := map[string]errs.Code{}
	slugs := map[string]errs.Code{}
	for _, info := range errs.Catalog() {
		entries[info.Code]++
		if info.Title == "" || info.Title == "Error" {
			t.Errorf("%s has no title of its own", info.Code)
		}
		if other, dup := titles[info.Title]; dup {
			t.Errorf("%s and %s share the title %q", info.Code, other, info.Title)
		}
		titles[info.Title] = info.Code
		if other, dup := slugs[info.Code.Slug()]; dup {
			t.Errorf("%s and %s share the slug %q", info.Code, other, info.Code.Slug())
		}
		slugs[info.Code.Slug()] = info.Code
		if info.Code.Kind() != info.Kind || info.Code.Title() != info.Title {
			t.Errorf("%s: the lookups disagree with its entry", info.Code)
		}
	}
	values := map[string]string{}
	screaming := regexp.MustCompile(`^[A-Z]+(_[A-Z]+)*$`)
	for name, v := range consts {
		if other, dup := values[v]; dup {
			t.Errorf("%s and %s are both %q", name, other, v)
		}
		values[v] = name
		if !screaming.MatchString(v) {
			t.Errorf("%s = %q is not SCREAMING_SNAKE", name, v)
		}
		if n := entries[errs.Code(v)]; n != 1 {
			t.Errorf("%s (%s) has %d catalog entries, want 1", name, v, n)
		}
	}
	if len(entries) != len(consts) {
		t.Errorf("%d catalog entries for %d declared codes", len(entries), len(consts))
	}
}

// TestContractCodes: the codes the SPEC names exactly, with their statuses'
// kinds.
func TestContractCodes(t *testing.T) {
	for code, kind := range map[errs.Code]errs.Kind{
		"UNAUTHENTICATED":            errs.Unauthenticated,
		"INVENTORY_VERSION_CONFLICT": errs.Conflict,
		"MEDIA_QUOTA_EXCEEDED":       errs.Conflict,
		"INVALID_MEDIA":              errs.Invalid,
		"MEDIA_TOO_LARGE":            errs.TooLarge,
		"BULK_OPERATION_STOPPED":     errs.Conflict, // record-level only
	} {
		if got := code.Kind(); got != kind {
			t.Errorf("%s: kind %v, want %v", code, got, kind)
		}
	}
	if s := errs.CodeInventoryVersion.Slug(); s != "inventory-version-conflict" {
		t.Errorf("slug %q, want inventory-version-conflict", s)
	}
	if s := errs.CodeUnauthenticated.Slug(); s != "unauthenticated" {
		t.Errorf("slug %q", s)
	}
	if k, title := errs.Code("NO_SUCH_CODE").Kind(), errs.Code("NO_SUCH_CODE").Title(); k != errs.Internal || title != "Error" {
		t.Errorf("an unknown code: kind %v title %q", k, title)
	}
}
