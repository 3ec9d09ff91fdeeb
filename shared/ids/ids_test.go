package ids

import (
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
)

func TestNewIsUniqueAndPrefixed(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := New("ven")
		if !strings.HasPrefix(id, "ven_") || len(id) != 4+26 {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
}

func TestSortableOrdersByTime(t *testing.T) {
	base := clocktest.Date(2026, 1, 1, 0, 0, 0)
	prev := ""
	for i := 0; i < 500; i++ {
		id := Sortable("evt", base.Add(time.Duration(i)*time.Millisecond))
		if id <= prev {
			t.Fatalf("%q sorts before %q", id, prev)
		}
		prev = id
	}
}

func TestIssued(t *testing.T) {
	now := time.Now()
	for _, id := range []string{New("cfl"), Sortable("cfl", now)} {
		if !Issued("cfl", id) {
			t.Errorf("Issued(cfl, %s) = false", id)
		}
		if Issued("bop", id) || Issued("cf", id) {
			t.Errorf("%s passes for another prefix", id)
		}
		for _, bad := range []string{id + "a", id[:len(id)-1], id[:len(id)-1] + "_", id[:len(id)-1] + "A", id[:len(id)-1] + "#"} {
			if Issued("cfl", bad) {
				t.Errorf("Issued(cfl, %q) = true", bad)
			}
		}
	}
}

func TestSortableFloorBoundsItsMillisecond(t *testing.T) {
	at := clocktest.Date(2026, 1, 1, 0, 0, 0)
	floor := SortableFloor("evt", at)
	if !Issued("evt", floor) {
		t.Fatalf("floor %q is not an id's shape", floor)
	}
	for i := 0; i < 200; i++ {
		before, same := Sortable("evt", at.Add(-time.Millisecond)), Sortable("evt", at)
		if before >= floor || same < floor {
			t.Fatalf("floor %q: %q before it, %q at it", floor, before, same)
		}
	}
}
