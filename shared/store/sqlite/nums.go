package sqlite

import (
	"encoding/json"
	"strconv"
	"strings"
)

// decodeNums reads the numeric attributes column. encodeNums writes it as
// encoding/json writes a map[string]int64 ({"name":1,"other":-2}), which
// parseNums reads without reflection (a sixth of a list page's CPU went to
// decoding these maps); anything else goes to encoding/json.
func decodeNums(s string) (map[string]int64, error) {
	if m, ok := parseNums(s); ok {
		return m, nil
	}
	var m map[string]int64
	err := json.Unmarshal([]byte(s), &m)
	return m, err
}

// parseNums parses {"name":int,...} with names of a-z, 0-9 and "_" (the
// attribute names store.ValidAttr allows) and integers in JSON's form;
// ok is false for anything else, which it leaves to encoding/json.
func parseNums(s string) (map[string]int64, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	m := make(map[string]int64, strings.Count(body, ",")+1)
	for body != "" {
		if body[0] != '"' {
			return nil, false
		}
		end := strings.IndexByte(body[1:], '"')
		if end < 0 {
			return nil, false
		}
		name := body[1 : 1+end]
		for i := 0; i < len(name); i++ {
			if b := name[i]; !('a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '_') {
				return nil, false
			}
		}
		body = body[2+end:]
		if body == "" || body[0] != ':' {
			return nil, false
		}
		num, rest, more := strings.Cut(body[1:], ",")
		if more && rest == "" || !jsonInt(num) {
			return nil, false
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return nil, false
		}
		m[name] = n
		body = rest
	}
	return m, true
}

// jsonInt reports whether s is an integer as JSON writes one:
// -?(0|[1-9][0-9]*).
func jsonInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
