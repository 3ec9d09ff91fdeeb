package httpapi_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
)

// TestTourDoc runs the first curl blocks of docs/tour.md ("Calling the
// API" and "A tour") as written against a fresh server: each command is
// parsed (method, URL, headers, body), the placeholders the page elides
// (prd_..., inv_..._000, conn_..., res_...) become the ids the earlier
// answers returned, and every answer must be a success (apitest checks it
// against the OpenAPI document too). An edit of the page that breaks the
// tour fails here.
func TestTourDoc(t *testing.T) {
	raw, err := os.ReadFile("../../docs/tour.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	var blocks []string
	for _, heading := range []string{"\n## Calling the API\n", "\n## A tour: catalog, stock, a channel and a reservation\n"} {
		i := strings.Index(page, heading)
		if i < 0 {
			t.Fatalf("docs/tour.md lacks %q", heading)
		}
		rest := page[i:]
		start := strings.Index(rest, "```sh\n")
		end := strings.Index(rest[start+6:], "```")
		if start < 0 || end < 0 {
			t.Fatalf("no sh block after %q", heading)
		}
		blocks = append(blocks, rest[start+6:start+6+end])
	}
	e := apitest.New(t, apitest.Options{})
	vars := map[string]string{"TOKEN": e.Token, "VENDOR": e.Vendor.ID, "BASE": e.URL}
	latest := map[string]string{} // placeholder → the id an answer gave
	ran := 0
	for _, block := range blocks {
		for _, cmd := range commands(block) {
			words, err := shellWords(cmd)
			if err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
			if len(words) == 0 {
				continue
			}
			if strings.Contains(words[0], "=") && len(words) == 1 {
				k, v, _ := strings.Cut(words[0], "=")
				if _, preset := vars[k]; !preset { // TOKEN, VENDOR and BASE are this server's
					vars[k] = expand(v, vars)
				}
				continue
			}
			if words[0] != "curl" {
				t.Fatalf("the tour runs %q, which this test does not know", words[0])
			}
			req := apitest.Req{Method: "GET", Headers: map[string]string{}}
			var url string
			for i := 1; i < len(words); i++ {
				w := expand(words[i], vars)
				switch w {
				case "-s":
				case "-X":
					i++
					req.Method = words[i]
				case "-H":
					i++
					k, v, _ := strings.Cut(fill(expand(words[i], vars), latest), ":")
					req.Headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
				case "-d":
					i++
					req.Body = fill(expand(words[i], vars), latest)
					if req.Method == "GET" {
						req.Method = "POST"
					}
				default:
					url = fill(w, latest)
				}
			}
			if !strings.HasPrefix(url, e.URL) {
				t.Fatalf("%s: URL %q is not under the base", cmd, url)
			}
			req.Path = strings.TrimPrefix(url, e.URL)
			if a, ok := req.Headers["Authorization"]; ok {
				req.Token = strings.TrimPrefix(a, "Bearer ")
				delete(req.Headers, "Authorization")
			}
			res := e.Do(req)
			if res.Status >= 300 {
				t.Fatalf("tour command %q answered %d: %s", cmd, res.Status, res.Body)
			}
			ran++
			for _, m := range idPattern.FindAllStringSubmatch(string(res.Body), -1) {
				id := m[1]
				switch {
				case strings.HasPrefix(id, "inv_"):
					if _, seen := latest["inv_..._000"]; !seen {
						latest["inv_..._000"] = id
					}
				default:
					p := id[:strings.Index(id, "_")+1] + "..."
					if _, seen := latest[p]; !seen || !strings.HasPrefix(id, "evt_") {
						latest[p] = id
					}
				}
			}
		}
	}
	if ran < 10 {
		t.Fatalf("ran %d tour commands; the blocks were not found whole", ran)
	}
}

// idPattern finds the ids an answer names (the resource's own id first).
var idPattern = regexp.MustCompile(`"id":\s*"((?:prd|inv|conn|res)_[A-Za-z0-9_]+)"`)

// commands splits a sh block into commands: comments dropped, lines ending
// in a backslash joined.
func commands(block string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(block, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") && cur.Len() == 0 {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
		if strings.Count(cur.String(), "'")%2 == 1 {
			continue // a quoted body spans lines
		}
		out = append(out, stripComment(cur.String()))
		cur.Reset()
	}
	return out
}

// stripComment drops a trailing "# ..." outside quotes.
func stripComment(cmd string) string {
	quote := byte(0)
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote == 0 && c == '#' && i > 0 && (cmd[i-1] == ' ' || cmd[i-1] == '\t'):
			return cmd[:i]
		}
	}
	return cmd
}

// shellWords splits a command as sh would for the quoting the tour uses:
// single quotes literal, double quotes keeping $VAR for expand (marked).
func shellWords(cmd string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(cmd[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '")
			}
			cur.WriteString(strings.ReplaceAll(cmd[i+1:i+1+j], "$", "\x00"))
			i += j + 1
			in = true
		case c == '"':
			j := strings.IndexByte(cmd[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unclosed \"")
			}
			cur.WriteString(cmd[i+1 : i+1+j])
			i += j + 1
			in = true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

var varPattern = regexp.MustCompile(`\$([A-Z_]+)`)

// expand replaces $VAR outside single quotes (marked by shellWords).
func expand(s string, vars map[string]string) string {
	s = varPattern.ReplaceAllStringFunc(s, func(m string) string { return vars[m[1:]] })
	return strings.ReplaceAll(s, "\x00", "$")
}

// fill replaces the tour's elided ids with the ones answers gave.
func fill(s string, latest map[string]string) string {
	for p, id := range latest {
		s = strings.ReplaceAll(s, p, id)
	}
	return s
}
