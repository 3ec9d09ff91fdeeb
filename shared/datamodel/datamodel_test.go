package datamodel

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/store"
)

// TestKeysMatchTheDocument checks every key against its row of
// docs/data-model.md: the row's pk and sk cells, with <...> placeholders,
// must describe the key this package builds.
func TestKeysMatchTheDocument(t *testing.T) {
	doc, err := os.ReadFile("../../docs/data-model.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][2]string
	for line := range strings.SplitSeq(string(doc), "\n") {
		cells := strings.Split(strings.ReplaceAll(line, `\|`, "\x00"), "|")
		for i := range cells {
			cells[i] = strings.ReplaceAll(cells[i], "\x00", "|") // an escaped pipe inside a cell
		}
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows = append(rows, [2]string{code(cells[1]), code(cells[2])})
	}
	at := clocktest.Date(2030, 1, 2, 3, 4, 5)
	keys := map[string]store.Key{
		"vendor":              VendorKey("v"),
		"vendor slug":         VendorSlugKey("s"),
		"registry":            {PK: VendorRegistry, SK: "v"},
		"token":               TokenKey("t"),
		"rate":                RateKey(VendorPartition("v"), "read", at),
		"receipt":             ReceiptKey("v", "t", "op", "k"),
		"product":             ProductKey("v", "p"),
		"product slug":        ProductSlugKey("v", "s"),
		"connection":          ConnectionKey("v", "c"),
		"connection health":   ConnectionHealthKey("v", "c"),
		"authority":           AuthorityKey("v"),
		"listing":             ListingKey("v", "l"),
		"listing unique":      ListingUniqueKey("v", "c", "p", nil),
		"external order":      ExternalOrderKey("v", "o"),
		"external order key":  ExternalOrderUniqueKey("v", "c", "x"),
		"conflict":            ConflictKey("v", "c"),
		"conflict open":       ConflictOpenKey("v", "t", "c", "r", "i"),
		"seller order":        SellerOrderKey("v", "o"),
		"reservation":         ReservationKey("v", "r"),
		"expiry":              {PK: ExpiryPartition("v"), SK: ExpirySK(at, "v", "r")},
		"stock effect":        StockEffectKey("v", "i", 1),
		"event":               EventKey("v", "e"),
		"bulk":                BulkKey("v", "b"),
		"sync job":            SyncJobKey("v", "s"),
		"media":               MediaKey("v", "d"),
		"media budget":        MediaBudgetKey("v"),
		"subscription":        SubscriptionKey("v", "s"),
		"subscription count":  SubscriptionCountKey("v"),
		"attempt":             AttemptKey("v", "s", "a"),
		"claim":               ClaimKey("v", "d", 1),
		"pending marker":      PendingKey(EventKey("v", "e")),
		"replay":              ReplayKey("v", "e", "r"),
		"replay destination":  ReplayDestinationKey("v", "r", "s"),
		"pairing":             PairingKey("v", "p"),
		"pairing secret":      PairingSecretKey("p"),
		"pairing code":        PairingCodeKey("h"),
		"cursor signing key":  CursorSigningKey(),
		"demo marker":         DemoKey(),
		"legacy expiry shard": {PK: LegacyExpiryPartition, SK: ExpirySK(at, "v", "r")},
	}
	for name, k := range keys {
		if name == "legacy expiry shard" {
			continue // documented in prose: "the unsharded RESEXP of earlier versions"
		}
		if !slices.ContainsFunc(rows, func(r [2]string) bool { return matches(r[0], k.PK) && matches(r[1], k.SK) }) {
			t.Errorf("%s: key %+v has no row in docs/data-model.md", name, k)
		}
	}
}

// code is the first `code span` of a cell.
func code(cell string) string {
	_, rest, _ := strings.Cut(cell, "`")
	span, _, _ := strings.Cut(rest, "`")
	return span
}

// matches reports whether s fits a cell: literal text, with each <...>
// standing for any non-empty text.
func matches(cell, s string) bool {
	lit, rest, found := strings.Cut(cell, "<")
	if !strings.HasPrefix(s, lit) {
		return false
	}
	if !found {
		return s == lit
	}
	s = s[len(lit):]
	_, after, ok := strings.Cut(rest, ">")
	if !ok {
		return false
	}
	if after == "" {
		return s != ""
	}
	next, _, _ := strings.Cut(after, "<")
	for i := 1; i <= len(s); i++ {
		if strings.HasPrefix(s[i:], next) && matches(after, s[i:]) {
			return true
		}
	}
	return false
}

func TestExpiryPartitionIsOneOfTheShards(t *testing.T) {
	var shards []string
	for i := range ExpiryShards {
		shards = append(shards, ExpiryShard(i))
	}
	for _, v := range []string{"", "ven_1", "ven_2", strings.Repeat("x", 128)} {
		if p := ExpiryPartition(v); !slices.Contains(shards, p) {
			t.Errorf("ExpiryPartition(%q) = %q, not a shard", v, p)
		}
	}
}

func TestSortKeysOrderAsTheirReadersNeed(t *testing.T) {
	early, late := clocktest.Date(2030, 1, 2, 3, 4, 5), clocktest.Date(2031, 1, 2, 3, 4, 5)
	if a, b := ExpirySK(early, "v", "r"), ExpirySK(late, "v", "r"); a >= b {
		t.Errorf("expiry entries out of time order: %q >= %q", a, b)
	}
	if a, b := StockEffectKey("v", "i", 9).SK, StockEffectKey("v", "i", 10).SK; a >= b {
		t.Errorf("stock effects out of version order: %q >= %q", a, b)
	}
}

func TestConflictOpenKeySeparatesTriples(t *testing.T) {
	a := ConflictOpenKey("v", "t", "c", "r", "i")
	if a != ConflictOpenKey("v", "t", "c", "r", "i") {
		t.Error("the same triple gave two keys")
	}
	// The separator keeps "ab"+"c" apart from "a"+"bc".
	if ConflictOpenKey("v", "t", "ab", "c", "i") == ConflictOpenKey("v", "t", "a", "bc", "i") {
		t.Error("different triples share a key")
	}
}
