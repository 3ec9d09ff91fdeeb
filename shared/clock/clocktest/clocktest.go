// Package clocktest holds the dates that tests are fixed at.
//
// A test's fixed date comes from Date, never from a time.Date literal, so
// that one environment variable (ShiftEnv) can move every fixture far from
// the wall clock. `make test` runs the clock-sensitive tests again shifted
// decades into the past and into the future: a test that decides anything
// by the wall clock where the fixture's clock exists then fails at once,
// instead of on the day the fixture's date goes by.
package clocktest

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/moku/sellerapi/shared/clock"
)

// ShiftEnv names the variable that moves every fixture date by a whole
// number of years, such as -30 or 30. Unset or empty means no shift.
const ShiftEnv = "SELLERAPI_TEST_CLOCK_SHIFT_YEARS"

// Date is the fixture time year-month-day hour:min:sec UTC, moved by the
// years of ShiftEnv.
func Date(year int, month time.Month, day, hour, min, sec int) time.Time {
	return time.Date(year+ShiftYears(), month, day, hour, min, sec, 0, time.UTC)
}

// Fake is a fake clock at Date(year, month, day, hour, min, sec).
func Fake(year int, month time.Month, day, hour, min, sec int) *clock.Fake {
	return clock.NewFake(Date(year, month, day, hour, min, sec))
}

// ShiftYears reads ShiftEnv. A value that is not a whole number panics:
// a typo must not quietly turn the shifted run into an unshifted one.
func ShiftYears() int {
	v := os.Getenv(ShiftEnv)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("clocktest: %s=%q is not a whole number of years: %v", ShiftEnv, v, err))
	}
	return n
}
