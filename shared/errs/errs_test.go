package errs_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
)

// TestE: the kind comes from the catalog; the detail is formatted.
func TestE(t *testing.T) {
	e := errs.Ef(errs.CodeRevisionConflict, "at revision %d", 4)
	if e.Kind != errs.Conflict || e.Code != errs.CodeRevisionConflict || e.Detail != "at revision 4" {
		t.Fatalf("Ef = %+v", e)
	}
	if got := e.Error(); got != "PRODUCT_REVISION_CONFLICT: at revision 4" {
		t.Fatalf("Error() = %q", got)
	}
}

// TestWrapKeepsTheCause: a cause is logged (Error, Unwrap) but is not the
// detail a client sees.
func TestWrapKeepsTheCause(t *testing.T) {
	cause := errors.New("disk on fire")
	e := errs.Wrap(errs.CodeConflict, "retry", cause)
	if !errors.Is(e, cause) || e.Detail != "retry" || !strings.Contains(e.Error(), "disk on fire") {
		t.Fatalf("Wrap = %+v", e)
	}
	u := errs.Unavailablef(cause, "store %s", "down")
	if u.Kind != errs.Unavailable || u.Code != errs.CodeServiceUnavailable || u.RetryAfter < 1 || !errors.Is(u, cause) || u.Detail != "store down" {
		t.Fatalf("Unavailablef = %+v", u)
	}
}

// TestAsAndIs: found through wrapping; anything else is an internal error
// whose detail leaks nothing.
func TestAsAndIs(t *testing.T) {
	inner := errs.E(errs.CodeNotFound, "product not found")
	wrapped := fmt.Errorf("loading: %w", inner)
	if got := errs.As(wrapped); got != inner {
		t.Fatalf("As found %+v", got)
	}
	if !errs.Is(wrapped, errs.CodeNotFound) || errs.Is(wrapped, errs.CodeConflict) {
		t.Fatal("Is through wrapping")
	}
	plain := errors.New("secret path /var/lib/x")
	got := errs.As(plain)
	if got.Kind != errs.Internal || got.Code != errs.CodeInternal || strings.Contains(got.Detail, "secret") || !errors.Is(got, plain) {
		t.Fatalf("As(plain) = %+v", got)
	}
	if errs.Is(plain, errs.CodeInternal) {
		t.Fatal("a plain error carries no code")
	}
}

// TestForeignCursor: the first page and a position under the list's
// prefix pass; a position of another list is an invalid cursor.
func TestForeignCursor(t *testing.T) {
	for _, after := range []string{"", "PRODUCT#", "PRODUCT#prd_1"} {
		if err := errs.ForeignCursor(after, "PRODUCT#"); err != nil {
			t.Errorf("ForeignCursor(%q) = %v", after, err)
		}
	}
	for _, after := range []string{"EVENT#evt_1", "PRODUCT", "product#prd_1"} {
		if err := errs.ForeignCursor(after, "PRODUCT#"); !errs.Is(err, errs.CodeInvalidCursor) {
			t.Errorf("ForeignCursor(%q) = %v, want an invalid cursor", after, err)
		}
	}
}

// TestRaced: a failed re-read gives its error, a moved version the stale
// error with the current version, an unmoved one the other explanation.
func TestRaced(t *testing.T) {
	stale := func(current int64) error { return errs.Ef(errs.CodeInventoryVersion, "at version %d", current) }
	elsewhere := func(cur string) error { return errs.E(errs.CodeConflict, "lost to "+cur) }
	gone := errs.E(errs.CodeNotFound, "gone")
	for _, c := range []struct {
		read func() (string, int64, error)
		want string
	}{
		{func() (string, int64, error) { return "", 0, gone }, "NOT_FOUND: gone"},
		{func() (string, int64, error) { return "rec", 4, nil }, "INVENTORY_VERSION_CONFLICT: at version 4"},
		{func() (string, int64, error) { return "a stock change", 3, nil }, "CONFLICT: lost to a stock change"},
	} {
		if err := errs.Raced(c.read, 3, stale, elsewhere); err == nil || err.Error() != c.want {
			t.Errorf("Raced = %v, want %s", err, c.want)
		}
	}
}

// TestAbsentAndStaleVersion: the services' not found and stale version
// read the same for every record.
func TestAbsentAndStaleVersion(t *testing.T) {
	if got := errs.Absent("listing"); !errs.Is(got, errs.CodeNotFound) || got.Error() != "NOT_FOUND: listing not found" {
		t.Fatalf("Absent = %v", got)
	}
	got := errs.StaleVersion(errs.CodeListingVersion, "listing", 7)
	if errs.As(got).Kind != errs.Conflict || got.Error() != "LISTING_VERSION_CONFLICT: expected_version: the listing is at version 7; read it again and retry" {
		t.Fatalf("StaleVersion = %v", got)
	}
}

// TestRecord: a record's not found and unavailable say what the package
// wrote them as, and the unavailable keeps its cause and asks for a retry.
func TestRecord(t *testing.T) {
	r := errs.Record{Name: "listing", Unreadable: "listing state could not be read safely (100%)"}
	if got := r.NotFound(); got.Error() != "NOT_FOUND: listing not found" {
		t.Fatalf("NotFound = %v", got)
	}
	cause := errors.New("store down")
	got := errs.As(r.Unavailable(cause))
	if got.Code != errs.CodeServiceUnavailable || got.Detail != "listing state could not be read safely (100%)" || got.RetryAfter != 1 || !errors.Is(got, cause) {
		t.Fatalf("Unavailable = %+v", got)
	}
}
