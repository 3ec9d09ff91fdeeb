package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
)

// TestSleep: a pause ends with its context, saying why, and otherwise
// once its time is up.
func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v, want context.Canceled", err)
	}
	if err := clock.Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("elapsed: %v", err)
	}
}
