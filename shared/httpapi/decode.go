package httpapi

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/moku/sellerapi/shared/errs"
)

// CheckJSON holds a JSON body to the rules encoding/json lets pass: every
// object's property names are distinct (encoding/json keeps the last of
// two, and matches names without regard to case, so "a" and "A" are two
// spellings of one property), strings are valid UTF-8 with no lone
// surrogate escapes (encoding/json turns both into U+FFFD silently), and
// no string holds a NUL (\u0000), which no field of the contract takes and
// which other systems cut strings at. b must already be valid JSON
// (json.Valid); every JSON body goes through here once, in Call.Body.
func CheckJSON(b []byte) error {
	type frame struct {
		object bool
		keys   map[string]bool
	}
	var stack []frame
	expectKey := false
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, frame{object: true, keys: map[string]bool{}})
			expectKey = true
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			end, s, err := jsonString(b, i)
			if err != nil {
				return err
			}
			if expectKey {
				top := stack[len(stack)-1]
				fold := strings.ToLower(strings.ToUpper(s))
				if top.keys[fold] {
					return errs.Ef(errs.CodeInvalidJSON, "body: the property %q appears more than once in one object (names are compared without regard to case)", s)
				}
				top.keys[fold] = true
				expectKey = false
			}
			i = end
		}
	}
	return nil
}

// jsonString reads the string literal starting at b[start] (a quote) and
// returns the index of its closing quote and its value, refusing invalid
// UTF-8, lone surrogates and NUL.
func jsonString(b []byte, start int) (int, string, error) {
	i := start + 1
	var out strings.Builder
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i, out.String(), nil
		case c == '\\':
			if i+1 >= len(b) {
				return 0, "", errs.E(errs.CodeInvalidJSON, "body: not valid JSON")
			}
			if b[i+1] != 'u' {
				out.WriteByte(unescape(b[i+1]))
				i += 2
				continue
			}
			r, n, err := unicodeEscape(b, i)
			if err != nil {
				return 0, "", err
			}
			out.WriteRune(r)
			i += n
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			i++
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n <= 1 {
				return 0, "", errs.Ef(errs.CodeInvalidJSON, "body: invalid UTF-8 at byte %d; JSON text must be UTF-8", i)
			}
			out.WriteRune(r)
			i += n
		}
	}
	return 0, "", errs.E(errs.CodeInvalidJSON, "body: not valid JSON")
}

func unescape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // " \ /
}

// unicodeEscape reads \uXXXX at b[i] (with its low surrogate when XXXX is
// a high one) and returns the rune and the bytes read.
func unicodeEscape(b []byte, i int) (rune, int, error) {
	hex4 := func(j int) (rune, bool) {
		if j+6 > len(b) || b[j] != '\\' || b[j+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[j+2:j+6]), 16, 16)
		return rune(v), err == nil
	}
	r, ok := hex4(i)
	switch {
	case !ok:
		return 0, 0, errs.E(errs.CodeInvalidJSON, "body: not valid JSON")
	case r == 0:
		return 0, 0, errs.Ef(errs.CodeInvalidJSON, "body: a string holds \\u0000 (NUL) at byte %d; NUL is not accepted in any field", i)
	case utf16.IsSurrogate(r):
		if r < 0xdc00 {
			if lo, ok := hex4(i + 6); ok && lo >= 0xdc00 && lo <= 0xdfff {
				return utf16.DecodeRune(r, lo), 12, nil
			}
		}
		return 0, 0, errs.Ef(errs.CodeInvalidJSON, "body: a string holds a lone UTF-16 surrogate escape (\\u%04x) at byte %d; it encodes no character", r, i)
	}
	return r, 6, nil
}
