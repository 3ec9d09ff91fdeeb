// Package reference renders the human API reference served at GET /docs
// from the OpenAPI document itself, on the server, as one HTML page with
// its style inline: no script, no CDN, nothing to fetch, and nothing that
// can drift from the document, because it is the document.
package reference

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
)

type document struct {
	Info struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
	} `json:"info"`
	Tags []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tags"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Parameters map[string]parameter `json:"parameters"`
		Responses  map[string]response  `json:"responses"`
	} `json:"components"`
}

type parameter struct {
	Ref         string `json:"$ref"`
	Name        string `json:"name"`
	In          string `json:"in"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
}

type response struct {
	Ref         string `json:"$ref"`
	Description string `json:"description"`
}

type operation struct {
	OperationID string              `json:"operationId"`
	Tags        []string            `json:"tags"`
	Summary     string              `json:"summary"`
	Description string              `json:"description"`
	Scopes      []string            `json:"x-scopes"`
	Security    *[]any              `json:"security"`
	Parameters  []parameter         `json:"parameters"`
	RequestBody *json.RawMessage    `json:"requestBody"`
	Responses   map[string]response `json:"responses"`
}

// Operation is one entry of the page.
type Operation struct {
	ID, Method, Path, Summary, Description string
	Scopes                                 []string
	Public                                 bool
	Parameters                             []parameter
	HasBody                                bool
	Responses                              []Status
}

// Status is one documented answer.
type Status struct{ Code, Description string }

// Group is a tag with its operations.
type Group struct {
	Name, Anchor, Description string
	Operations                []Operation
}

// Page is what the template renders.
type Page struct {
	Title, Version, Description string
	Groups                      []Group
}

// Build reads the document into the page's groups, in the document's tag
// order; operations keep the order of their paths.
func Build(doc []byte) (Page, error) {
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		return Page{}, fmt.Errorf("reference: %w", err)
	}
	p := Page{Title: d.Info.Title, Version: d.Info.Version, Description: d.Info.Description}
	index := map[string]int{}
	for _, t := range d.Tags {
		index[t.Name] = len(p.Groups)
		p.Groups = append(p.Groups, Group{Name: t.Name, Anchor: anchor(t.Name), Description: t.Description})
	}
	for _, path := range slices.Sorted(maps.Keys(d.Paths)) {
		for _, method := range []string{"get", "post", "put", "patch", "delete"} {
			raw, ok := d.Paths[path][method]
			if !ok {
				continue
			}
			var o operation
			if err := json.Unmarshal(raw, &o); err != nil {
				return Page{}, fmt.Errorf("reference: %s %s: %w", method, path, err)
			}
			op := Operation{ID: o.OperationID, Method: strings.ToUpper(method), Path: path, Summary: o.Summary, Description: o.Description,
				Scopes: o.Scopes, Public: o.Security != nil && len(*o.Security) == 0, HasBody: o.RequestBody != nil}
			for _, prm := range o.Parameters {
				if prm.Ref != "" {
					prm = d.Components.Parameters[strings.TrimPrefix(prm.Ref, "#/components/parameters/")]
				}
				op.Parameters = append(op.Parameters, prm)
			}
			for _, code := range slices.Sorted(maps.Keys(o.Responses)) {
				r := o.Responses[code]
				if r.Ref != "" {
					r = d.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
				}
				op.Responses = append(op.Responses, Status{Code: code, Description: r.Description})
			}
			tag := "Other"
			if len(o.Tags) > 0 {
				tag = o.Tags[0]
			}
			i, ok := index[tag]
			if !ok {
				i = len(p.Groups)
				index[tag] = i
				p.Groups = append(p.Groups, Group{Name: tag, Anchor: anchor(tag)})
			}
			p.Groups[i].Operations = append(p.Groups[i].Operations, op)
		}
	}
	return p, nil
}

func anchor(name string) string { return "tag-" + strings.ReplaceAll(strings.ToLower(name), " ", "-") }

// HTML renders the page.
func HTML(doc []byte) ([]byte, error) {
	p, err := Build(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := page.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("reference: render: %w", err)
	}
	return b.Bytes(), nil
}

var page = template.Must(template.New("reference").Funcs(template.FuncMap{"lower": strings.ToLower}).Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}} reference</title>
<link rel="icon" href="data:,">
<style>
body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex;color:#1b1f24}
nav{position:sticky;top:0;height:100vh;overflow:auto;width:17rem;flex:none;background:#f4f5f7;padding:1rem;box-sizing:border-box}
nav a{display:block;color:#1b1f24;text-decoration:none;padding:.1rem 0}
nav a.op{font-size:13px;padding-left:.8rem;color:#444}
main{padding:1rem 2rem;max-width:60rem}
section.op{border-top:1px solid #ddd;padding:.6rem 0}
.m{display:inline-block;min-width:4.2rem;font:600 12px monospace;padding:.1rem .3rem;border-radius:3px;color:#fff;text-align:center}
.get{background:#2b7bb9}.post{background:#2e8b57}.put{background:#b8860b}.patch{background:#8a5cb8}.delete{background:#c0392b}
code,.path{font-family:ui-monospace,monospace}
table{border-collapse:collapse;margin:.3rem 0}td,th{border:1px solid #ddd;padding:.15rem .5rem;text-align:left;vertical-align:top;font-size:14px}
.muted{color:#666;font-size:13px}
</style>
</head>
<body>
<nav>
<strong>{{.Title}}</strong><div class="muted">{{.Version}} · <a href="openapi.json" style="display:inline">openapi.json</a></div>
{{range .Groups}}<a href="#{{.Anchor}}">{{.Name}}</a>{{range .Operations}}<a class="op" href="#{{.ID}}">{{.Summary}}</a>{{end}}
{{end}}</nav>
<main>
<h1>{{.Title}} <span class="muted">{{.Version}}</span></h1>
<p>{{.Description}}</p>
{{range .Groups}}<section class="group" id="{{.Anchor}}" data-tag="{{.Name}}">
<h2>{{.Name}}</h2>
{{if .Description}}<p>{{.Description}}</p>{{end}}
{{range .Operations}}<section class="op" id="{{.ID}}" data-operation="{{.ID}}">
<h3><span class="m {{lower .Method}}">{{.Method}}</span> <span class="path">{{.Path}}</span></h3>
<p><strong>{{.Summary}}</strong> <span class="muted">({{.ID}}{{if .Public}}, public{{else}}{{range .Scopes}}, {{.}}{{end}}{{end}})</span></p>
<p>{{.Description}}</p>
{{if .Parameters}}<table><tr><th>parameter</th><th>in</th><th></th></tr>{{range .Parameters}}<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="muted">required</span>{{end}}</td><td>{{.In}}</td><td>{{.Description}}</td></tr>{{end}}</table>{{end}}
{{if .HasBody}}<p class="muted">Takes a JSON body: see <a href="openapi.json">openapi.json</a> for its schema.</p>{{end}}
<table><tr><th>status</th><th></th></tr>{{range .Responses}}<tr><td><code>{{.Code}}</code></td><td>{{.Description}}</td></tr>{{end}}</table>
</section>
{{end}}</section>
{{end}}</main>
</body>
</html>
`))
