// Package docs holds the repository's pages for readers; its test keeps
// them short where they must be and their links whole.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is what a newcomer reads in five minutes; the rest of
// what the README once held lives in docs/ (issue #28).
const readmeMaxLines = 250

func TestReadmeIsShort(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; at most %d: move the detail to a page of docs/ and link it", n, readmeMaxLines)
	}
}

var (
	linkPattern     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanPattern = regexp.MustCompile("`[^`]*`")
	headingPattern  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// TestLinks: every link of every Markdown page of the repository points
// into the repository, at a file that exists, and at a heading of it when
// it names one; no page names a path above the repository's root.
func TestLinks(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := markdownPages(t, root)
	if len(pages) < 5 {
		t.Fatalf("found %d Markdown pages under %s", len(pages), root)
	}
	checked := 0
	for _, page := range pages {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		prose, spans := split(string(raw))
		for _, m := range linkPattern.FindAllStringSubmatch(prose, -1) {
			checked++
			if err := checkLink(root, page, m[1]); err != "" {
				t.Errorf("%s: link %s: %s", rel, m[1], err)
			}
		}
		for _, span := range spans {
			if !strings.HasPrefix(span, "../") {
				continue
			}
			if !inside(root, filepath.Join(filepath.Dir(page), span)) {
				t.Errorf("%s: names %s, which is outside the repository", rel, span)
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked %d links; the pages link more than that", checked)
	}
}

// checkLink returns why target, linked from page, is broken ("" if not).
func checkLink(root, page, target string) string {
	if i := strings.Index(target, ":"); i > 0 && !strings.ContainsAny(target[:i], "/#.") {
		return "links outside the repository (the repository's own pages and files only)"
	}
	path, fragment, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
	}
	if !inside(root, file) {
		return "points outside the repository"
	}
	info, err := os.Stat(file)
	if err != nil {
		return "no such file or folder"
	}
	if fragment == "" {
		return ""
	}
	if info.IsDir() || !strings.HasSuffix(file, ".md") {
		return "names a heading of something that is not a Markdown page"
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	if !anchors(string(raw))[fragment] {
		return "no heading has that anchor"
	}
	return ""
}

func inside(root, path string) bool {
	rel, err := filepath.Rel(root, filepath.Clean(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// markdownPages lists the repository's .md files, skipping hidden folders
// and what tools install or builds make.
func markdownPages(t *testing.T, root string) []string {
	t.Helper()
	var pages []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "cdk.out" || name == "bin" || name == "dist") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			pages = append(pages, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// split returns a page's prose (fenced blocks and code spans blanked) and
// its code spans' contents.
func split(page string) (string, []string) {
	var prose strings.Builder
	var spans []string
	fenced := false
	for _, line := range strings.SplitAfter(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			prose.WriteString("\n")
			continue
		}
		if fenced {
			prose.WriteString("\n")
			continue
		}
		for _, s := range codeSpanPattern.FindAllString(line, -1) {
			spans = append(spans, strings.Trim(s, "`"))
		}
		prose.WriteString(codeSpanPattern.ReplaceAllString(line, "code"))
	}
	return prose.String(), spans
}

// anchors returns the anchors GitHub gives a page's headings: the text
// lowercased, spaces as hyphens, punctuation but hyphens and underscores
// dropped, a repeated one suffixed -1, -2, ...
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		m := headingPattern.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		text := linkPattern.ReplaceAllStringFunc(m[1], func(l string) string { return l[1:strings.Index(l, "](")] })
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				slug.WriteRune(r)
			case r == ' ':
				slug.WriteByte('-')
			}
		}
		s := slug.String()
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDecisionsIndex fails when a decision's section is missing from the
// index by area at the top of docs/decisions.md, so that a section added at
// the end is found by its area too.
func TestDecisionsIndex(t *testing.T) {
	b, err := os.ReadFile("decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	_, body, ok := strings.Cut(page, "\n## Index by area\n")
	if !ok {
		t.Fatal("docs/decisions.md has no \"## Index by area\"")
	}
	index, rest, _ := strings.Cut(body, "\n## ")
	for _, line := range strings.Split("## "+rest, "\n") {
		title, ok := strings.CutPrefix(line, "## ")
		if !ok {
			continue
		}
		for a := range anchors(line) {
			if !strings.Contains(index, "](#"+a+")") {
				t.Errorf("section %q (#%s) is not in the index by area", title, a)
			}
		}
	}
}
