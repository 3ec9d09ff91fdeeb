package ratelimit

import (
	"testing"
	"time"
)

func TestRetryAfterIsWholeSecondsAtLeastOne(t *testing.T) {
	reset := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
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
