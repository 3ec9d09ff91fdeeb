package pairing

import (
	"strings"
	"testing"
)

func TestParseDiscoveryLimits(t *testing.T) {
	const ok = `{"store": {"domain": "shop.example.com", "name": "Shop", "platform": "storeplatform", "currency": "EUR"}, "catalog": {"product_count": 1, "variation_count": 2}}`
	if _, err := ParseDiscovery([]byte(ok)); err != nil {
		t.Fatalf("valid report refused: %v", err)
	}
	for _, c := range []struct{ name, body, field string }{
		{"no store", `{"catalog": {"product_count": 1, "variation_count": 2}}`, "store"},
		{"no catalog", `{"store": {"domain": "a.example", "name": "S", "platform": "p", "currency": "EUR"}}`, "catalog"},
		{"domain with a path", strings.Replace(ok, "shop.example.com", "shop.example.com/x", 1), "store.domain"},
		{"domain too long", strings.Replace(ok, "shop.example.com", strings.Repeat("a.", 127)+"com", 1), "store.domain"},
		{"name on two lines", strings.Replace(ok, `"Shop"`, `"Sh\nop"`, 1), "store.name"},
		{"name too long", strings.Replace(ok, `"Shop"`, `"`+strings.Repeat("s", 121)+`"`, 1), "store.name"},
		{"platform upper case", strings.Replace(ok, "storeplatform", "StorePlatform", 1), "store.platform"},
		{"currency lower case", strings.Replace(ok, "EUR", "eur", 1), "store.currency"},
		{"negative count", strings.Replace(ok, `"product_count": 1`, `"product_count": -1`, 1), "catalog.product_count"},
		{"count too large", strings.Replace(ok, `"product_count": 1`, `"product_count": 100000001`, 1), "catalog.product_count"},
		{"unknown field", strings.Replace(ok, `"currency": "EUR"`, `"currency": "EUR", "secret": "x"`, 1), "store.secret"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseDiscovery([]byte(c.body))
			if err == nil || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("err = %v, want one naming %s", err, c.field)
			}
		})
	}
}

func TestCodesForgiveTyping(t *testing.T) {
	code := newCode()
	if len(code) != 19 || strings.Count(code, "-") != 3 {
		t.Fatalf("code %q", code)
	}
	want, _ := normalizeCode(code)
	for _, typed := range []string{code, strings.ToLower(code), strings.ReplaceAll(code, "-", ""), " " + strings.ReplaceAll(code, "-", " ") + " "} {
		if got, ok := normalizeCode(typed); !ok || got != want {
			t.Errorf("%q normalized to %q, %v; want %q", typed, got, ok, want)
		}
	}
	if got, ok := normalizeCode("O1IL-0000-0000-0000"); !ok || got != "0111000000000000" {
		t.Errorf("O, I and L: %q %v", got, ok)
	}
	for _, bad := range []string{"", "ABC", "ABCD-EFGH-JKMN-PQRSX", "ABCD-EFGH-JKMN-PQR!"} {
		if _, ok := normalizeCode(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
