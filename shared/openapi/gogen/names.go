package main

import (
	"fmt"
	"strings"
	"unicode"
)

// doc is a declaration's comment: where it comes from, then the
// document's description.
func doc(name, where, description string) string {
	s := fmt.Sprintf("// %s is %s.\n", name, where)
	if description != "" {
		s += "//\n" + comment(description, "")
	}
	return s
}

// comment wraps text into // lines of at most about 80 columns.
func comment(text, indent string) string {
	var b strings.Builder
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(indent)*4+3+len(line)+1+len(w) > 80 {
			fmt.Fprintf(&b, "%s// %s\n", indent, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		fmt.Fprintf(&b, "%s// %s\n", indent, line)
	}
	return b.String()
}

// initialisms are the words Go spells in capitals.
var initialisms = map[string]string{
	"api": "API", "http": "HTTP", "https": "HTTPS", "id": "ID", "ids": "IDs", "ip": "IP", "json": "JSON",
	"sku": "SKU", "skus": "SKUs", "ttl": "TTL", "uri": "URI", "url": "URL", "urls": "URLs", "uuid": "UUID",
}

// goName is the exported Go name of a property or enum value: its words
// (split at anything not a letter or digit) capitalised, initialisms in
// capitals.
func goName(s string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.ToLower(w)
		if up, ok := initialisms[w]; ok {
			b.WriteString(up)
			continue
		}
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		b.WriteString(string(r))
	}
	return b.String()
}
