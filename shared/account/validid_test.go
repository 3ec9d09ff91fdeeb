package account_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/account"
)

// idPattern is the rule ValidID keeps, as the regexp it once was.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// FuzzValidID: the loop judges every string as the rule's regexp does.
func FuzzValidID(f *testing.F) {
	for _, s := range []string{"", "ven_01HZ", "a", strings.Repeat("a", 128), strings.Repeat("a", 129), "a/b", "ven é", "a\n", "x.y_z:w-1", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := account.ValidID(s), idPattern.MatchString(s); got != want {
			t.Fatalf("ValidID(%q) = %v, the rule says %v", s, got, want)
		}
	})
}
