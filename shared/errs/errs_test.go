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
