package extorder_test

import (
	"fmt"
	"testing"

	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/extorder"
	"github.com/moku/sellerapi/shared/inventory"
)

func inventoryAdjust(target, version int64) inventory.Adjustment {
	return inventory.Adjustment{TargetOnHand: target, ExpectedVersion: version}
}

func importBody(lines []map[string]any, extra map[string]any) []byte {
	return dt.Body(map[string]any{"connection_id": "conn_a", "external_order_id": "ext-1", "lines": lines}, extra)
}

func lines(n, items int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"line_id": fmt.Sprintf("l%d", i), "inventory_item_id": fmt.Sprintf("inv_p_%03d", i%items), "quantity": 1, "unit_price": 0}
	}
	return out
}

// TestImportBody: 1..50 lines, unique line ids, at most 45 distinct items,
// quantity at least 1.
func TestImportBody(t *testing.T) {
	for _, c := range []struct {
		name string
		body []byte
		ok   bool
	}{
		{"one line", importBody(lines(1, 1), nil), true},
		{"no lines", importBody(lines(0, 1), nil), false},
		{"50 lines over 45 items", importBody(lines(50, 45), nil), true},
		{"51 lines", importBody(lines(51, 1), nil), false},
		{"46 distinct items", importBody(lines(46, 46), nil), false},
		{"line id twice", importBody([]map[string]any{lines(1, 1)[0], lines(1, 1)[0]}, nil), false},
		{"zero quantity", importBody([]map[string]any{{"line_id": "l", "inventory_item_id": "inv_p_000", "quantity": 0, "unit_price": 1}}, nil), false},
		{"negative price", importBody([]map[string]any{{"line_id": "l", "inventory_item_id": "inv_p_000", "quantity": 1, "unit_price": -1}}, nil), false},
		{"no connection", importBody(lines(1, 1), map[string]any{"connection_id": nil}), false},
		{"no external id", importBody(lines(1, 1), map[string]any{"external_order_id": nil}), false},
		{"extra field", importBody(lines(1, 1), map[string]any{"status": "committed"}), false},
	} {
		if _, err := extorder.ParseImport(c.body); c.ok != (err == nil) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// A plugin's import names its connection by the pairing, never the body.
	if in, err := extorder.ParsePluginImport(importBody(lines(1, 1), map[string]any{"connection_id": nil}), "conn_p"); err != nil || in.ConnectionID != "conn_p" {
		t.Errorf("plugin import: %+v %v", in, err)
	}
	if _, err := extorder.ParsePluginImport(importBody(lines(1, 1), nil), "conn_p"); err == nil {
		t.Error("a plugin import naming a connection accepted")
	}
}

// TestFingerprint: the content of an import decides its fingerprint.
func TestFingerprint(t *testing.T) {
	a := extorder.ImportInput{ConnectionID: "c", ExternalOrderID: "e", Lines: []extorder.Line{line("l1", "inv_p_000", 1)}}
	b := a
	b.Lines = []extorder.Line{line("l1", "inv_p_000", 2)}
	c := a
	c.ExternalOrderID = "e2"
	if a.Fingerprint() != a.Fingerprint() {
		t.Fatal("fingerprint is not stable")
	}
	if a.Fingerprint() == b.Fingerprint() || a.Fingerprint() == c.Fingerprint() {
		t.Fatal("different content, same fingerprint")
	}
}
