package conflict

import (
	"strings"
	"testing"
)

func TestParseClosing(t *testing.T) {
	long := strings.Repeat("x", MaxReason)
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"expected_version": 1, "reason": "counted again"}`, true},
		{`{"expected_version": 0, "reason": "` + long + `"}`, true},
		{`{"expected_version": 1, "reason": "` + long + `x"}`, false},
		{`{"expected_version": 1, "reason": ""}`, false},
		{`{"expected_version": 1, "reason": "   "}`, false},
		{`{"expected_version": -1, "reason": "x"}`, false},
		{`{"expected_version": "1", "reason": "x"}`, false},
		{`{"reason": "x"}`, false},
		{`{"expected_version": 1}`, false},
		{`{"expected_version": 1, "reason": "x", "status": "resolved"}`, false},
		{`[]`, false},
	} {
		_, err := ParseClosing([]byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%.60s: err %v, want ok %v", c.body, err, c.ok)
		}
	}
}

// TestOpenKeyNamesTheTriple: the open index separates every part of
// (type, connection, resource), so no two triples share an entry.
func TestOpenKeyNamesTheTriple(t *testing.T) {
	conn, other := "conn_a", "conn_ab"
	keys := map[string]string{}
	for name, k := range map[string]string{
		"base":       OpenKey("v", TypeStockMismatch, &conn, Resource{ResourceInventoryItem, "b_1"}).SK,
		"no conn":    OpenKey("v", TypeStockMismatch, nil, Resource{ResourceInventoryItem, "b_1"}).SK,
		"other type": OpenKey("v", TypePriceMismatch, &conn, Resource{ResourceInventoryItem, "b_1"}).SK,
		"shifted":    OpenKey("v", TypeStockMismatch, &other, Resource{ResourceInventoryItem, "_1"}).SK,
		"resource":   OpenKey("v", TypeStockMismatch, &conn, Resource{ResourceProduct, "b_1"}).SK,
	} {
		if prev, dup := keys[k]; dup {
			t.Fatalf("%s and %s share the open key %s", prev, name, k)
		}
		keys[k] = name
	}
	if OpenKey("v", TypeStockMismatch, &conn, Resource{ResourceInventoryItem, "b_1"}).SK != OpenKey("v", TypeStockMismatch, &conn, Resource{ResourceInventoryItem, "b_1"}).SK {
		t.Fatal("the open key is not stable")
	}
}
