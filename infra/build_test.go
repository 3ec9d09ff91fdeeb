package main

import (
	"archive/zip"
	"bytes"
	"debug/elf"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBuildOutput checks what `make build` made in SELLERAPI_DIST (make
// test builds into a fresh directory and sets it): a zip for every function
// in functions/ but the local binary, each holding exactly one executable
// entry named bootstrap with the fixed timestamp, a static stripped
// linux/arm64 ELF, and matching the binary beside it.
func TestBuildOutput(t *testing.T) {
	dist := os.Getenv("SELLERAPI_DIST")
	if dist == "" {
		t.Skip("SELLERAPI_DIST not set: run scripts/build (make build) and point SELLERAPI_DIST at its output; make test does")
	}
	entries, err := os.ReadDir(filepath.Join("..", "functions"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "local" {
			continue
		}
		n++
		fn := e.Name()
		t.Run(fn, func(t *testing.T) {
			zr, err := zip.OpenReader(filepath.Join(dist, fn+".zip"))
			if err != nil {
				t.Fatalf("%s.zip: %v", fn, err)
			}
			defer zr.Close()
			if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" {
				var names []string
				for _, f := range zr.File {
					names = append(names, f.Name)
				}
				t.Fatalf("%s.zip holds %v, want only bootstrap", fn, names)
			}
			f := zr.File[0]
			if f.Mode().Perm()&0o111 == 0 {
				t.Errorf("bootstrap mode %v is not executable", f.Mode())
			}
			if !f.Modified.Equal(time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)) { // clocktest:literal: the zip format's epoch
				t.Errorf("bootstrap time %v: the zip is not reproducible", f.Modified)
			}
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			bin, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if beside, err := os.ReadFile(filepath.Join(dist, fn, "bootstrap")); err != nil || !bytes.Equal(bin, beside) {
				t.Errorf("the zip's bootstrap differs from %s/bootstrap (%v)", fn, err)
			}
			checkELF(t, bin)
		})
	}
	if n == 0 {
		t.Fatal("no functions found")
	}
}

// checkELF fails unless bin is a static, stripped linux/arm64 executable:
// no interpreter, no dynamic section, no symbol table.
func checkELF(t *testing.T, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("not an ELF file: %v", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_AARCH64 || f.Type != elf.ET_EXEC {
		t.Errorf("class %v machine %v type %v, want ELFCLASS64 EM_AARCH64 ET_EXEC", f.Class, f.Machine, f.Type)
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		t.Errorf("OS ABI %v, want Linux", f.OSABI)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: the binary is dynamically linked", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("needs shared libraries %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("has a symbol table: not stripped (-s)")
	}
}
