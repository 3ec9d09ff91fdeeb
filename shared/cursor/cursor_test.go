package cursor

import (
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
)

func TestRoundTripAndBinding(t *testing.T) {
	c, err := NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	b := Binding{Resource: "products", VendorID: "ven_1", TokenID: "tok_1", Filters: "color=red"}
	cur, err := c.Encode(b, "PRODUCT#123")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Decode(b, cur); err != nil || got != "PRODUCT#123" {
		t.Fatalf("Decode = %q, %v", got, err)
	}
	for name, other := range map[string]Binding{
		"resource": {Resource: "inventory", VendorID: "ven_1", TokenID: "tok_1", Filters: "color=red"},
		"vendor":   {Resource: "products", VendorID: "ven_2", TokenID: "tok_1", Filters: "color=red"},
		"token":    {Resource: "products", VendorID: "ven_1", TokenID: "tok_2", Filters: "color=red"},
		"filters":  {Resource: "products", VendorID: "ven_1", TokenID: "tok_1", Filters: "color=blue"},
	} {
		if _, err := c.Decode(other, cur); !errs.Is(err, errs.CodeInvalidCursor) {
			t.Errorf("another %s accepted the cursor: %v", name, err)
		}
	}
	// Field boundaries are part of the MAC: shifting text between fields fails.
	shifted := Binding{Resource: "products", VendorID: "ven_1t", TokenID: "ok_1", Filters: "color=red"}
	if _, err := c.Decode(shifted, cur); err == nil {
		t.Error("a shifted binding accepted the cursor")
	}
	other, _ := NewCodec([]byte(strings.Repeat("x", 32)))
	if _, err := other.Decode(b, cur); err == nil {
		t.Error("another key accepted the cursor")
	}
	if _, err := c.Encode(b, strings.Repeat("s", 800)); err == nil {
		t.Error("a cursor over 1024 characters was made")
	}
	if _, err := NewCodec([]byte("short")); err == nil {
		t.Error("a short key was accepted")
	}
}
