// Command gogen writes Go types for the component schemas of an OpenAPI
// 3.1 document: the Go client's types.gen.go, from
// shared/openapi/openapi.json, the one source of truth for the API's
// shapes (the TypeScript tour's types come from the same document through
// openapi-typescript, scripts/typecheck-openapi).
//
//	gogen -o types.gen.go -package client -types Vendor,Product ../openapi/openapi.json
//	gogen -o types.gen.go -ops operations.gen.go -package client ../openapi/openapi.json
//
// One Go type per selected schema and per schema a selected one reaches
// through $ref (every schema without -types), sorted by name; fields
// sorted by property name, as oapi-codegen orders them. A property that
// may be null or absent is a pointer (slices, maps and raw JSON are nil
// instead) and an absent one is omitted; integer is int64, number
// float64, a date-time time.Time; an inline object, string enum or oneOf
// of $refs gets a type named for its schema and property (an enum with a
// constant per value, a oneOf From and As methods per branch); a oneOf
// whose branches are all strings is a string; anything else (an object
// the document leaves open, a mixed oneOf) stays json.RawMessage. Each
// schema's and property's description is its doc comment.
//
// With -ops it also writes the client's operations (see ops.go): a method
// per operation of the document, its request type and a page walker per
// list; they need every schema's type, so -ops takes no -types.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// config is what one run makes.
type config struct {
	out, ops, pkg, doc string
	roots              []string
}

// parseArgs reads gogen's command line.
func parseArgs(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("gogen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.out, "o", "", "the Go file to write")
	fs.StringVar(&c.ops, "ops", "", "the Go file of the client's operations to write (optional)")
	fs.StringVar(&c.pkg, "package", "", "its package name")
	list := fs.String("types", "", "comma-separated component schemas to declare, with those they reference (default: all)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.out == "" || c.pkg == "" || fs.NArg() != 1 {
		return c, fmt.Errorf("usage: gogen -o FILE [-ops FILE] -package NAME [-types A,B] OPENAPI.json")
	}
	if c.ops != "" && *list != "" {
		return c, fmt.Errorf("gogen: -ops needs every schema's type: leave out -types")
	}
	c.doc = fs.Arg(0)
	if *list != "" {
		c.roots = strings.Split(*list, ",")
	}
	return c, nil
}

// source is the Go source a config makes from its document.
func (c config) source() ([]byte, error) {
	doc, err := os.ReadFile(c.doc)
	if err != nil {
		return nil, fmt.Errorf("gogen: %w", err)
	}
	return generate(doc, c.pkg, filepath.Base(c.doc), c.roots)
}

// opsSource is the Go source of the operations file.
func (c config) opsSource() ([]byte, error) {
	doc, err := os.ReadFile(c.doc)
	if err != nil {
		return nil, fmt.Errorf("gogen: %w", err)
	}
	return generateOps(doc, c.pkg, filepath.Base(c.doc))
}

// write replaces file with src unless it already holds it.
func write(file string, src []byte) error {
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, src) {
		return nil
	}
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return fmt.Errorf("gogen: %w", err)
	}
	return nil
}

func run(args []string, stderr io.Writer) error {
	c, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	src, err := c.source()
	if err != nil {
		return err
	}
	if c.ops != "" {
		ops, err := c.opsSource()
		if err != nil {
			return err
		}
		if err := write(c.ops, ops); err != nil {
			return err
		}
	}
	return write(c.out, src)
}
