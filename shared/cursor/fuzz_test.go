package cursor

import (
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
)

// FuzzCursor drives Decode and Position with the page_after a client
// sends. Nothing panics; every refusal is 400 INVALID_CURSOR; a cursor
// Decode accepts is positioned where Position says; a sort key survives a round
// trip through Encode and Decode, and only under its own binding.
func FuzzCursor(f *testing.F) {
	c, err := NewCodec([]byte(strings.Repeat("k", 32)))
	if err != nil {
		f.Fatal(err)
	}
	b := Binding{Resource: "products", VendorID: "ven_1", TokenID: "tok_1", Filters: "status=active"}
	good, err := c.Encode(b, "PRODUCT#prd_123")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{good, "", ".", "abc.", ".abc", "UFJPRFVDVA.AAAA", good + "=", strings.Repeat("A", MaxLen+1), "a.b.c", "\x00.\xff"} {
		f.Add(seed, "PRODUCT#prd_1")
	}
	other := b
	other.Filters += "&x=1"
	f.Fuzz(func(t *testing.T, cursor, after string) {
		pos, posOK := Position(cursor)
		if got, err := c.Decode(b, cursor); err != nil {
			if e := errs.As(err); e.Code != errs.CodeInvalidCursor {
				t.Fatalf("Decode(%q) = %v, want INVALID_CURSOR", cursor, err)
			}
		} else if got == "" {
			t.Fatalf("Decode(%q) accepted an empty sort key", cursor)
		} else if !posOK || pos != got {
			// What a list reads ahead from is what the cursor, once
			// checked, continues after.
			t.Fatalf("Position(%q) = %q, %v; Decode gave %q", cursor, pos, posOK, got)
		}
		if posOK && pos == "" {
			t.Fatalf("Position(%q) named an empty sort key", cursor)
		}
		cur, err := c.Encode(b, after)
		if err != nil || after == "" {
			return // too long to be a cursor, or nothing to continue after
		}
		if got, err := c.Decode(b, cur); err != nil || got != after {
			t.Fatalf("round trip of %q: %q, %v", after, got, err)
		}
		if _, err := c.Decode(other, cur); err == nil {
			t.Fatalf("cursor of %q accepted under another binding", after)
		}
	})
}
