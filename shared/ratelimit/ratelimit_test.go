package ratelimit

import (
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
)

func TestRetryAfterIsWholeSecondsAtLeastOne(t *testing.T) {
	reset := clocktest.Date(2026, 1, 1, 0, 1, 0)
	for _, tc := range []struct {
		left time.Duration
		want int
	}{
		{60 * time.Second, 60}, {30 * time.Second, 30}, {29*time.Second + time.Millisecond, 30},
		{time.Millisecond, 1}, {0, 1}, {-time.Second, 1},
	} {
		if got := RetryAfter(reset.Add(-tc.left), reset); got != tc.want {
			t.Errorf("%s before reset: %d, want %d", tc.left, got, tc.want)
		}
	}
}
