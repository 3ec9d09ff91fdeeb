package lambdaapi

import (
	"log/slog"
	"time"
)

// WithRequestIDsReading is WithRequestIDs reading the high-water mark
// from status (a file in /proc/<pid>/status's format).
func WithRequestIDsReading(h slog.Handler, status string) slog.Handler {
	return requestIDs{h, &environment{began: time.Now(), status: status}}
}
