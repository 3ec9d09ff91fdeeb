package lambdaapi

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// WithRequestIDs wraps a log handler so that every line logged while an
// invocation is served carries the id that joins it to the platform's
// records, beside the service's own request_id (the X-Request-Id a client
// quotes): API Gateway's (apigw_id) while serving an HTTP API request,
// which the stage's access log and every response (apigw-requestid) carry
// too; Lambda's (lambda_request_id) in the workers and the stream router.
// Lines carry no time of their own: CloudWatch Logs stamps every event it
// takes, and the embedded metrics carry theirs.
//
// The functions log at system level WARN, so Lambda writes no start and
// report lines per invocation (a third of a request's log bytes, issue
// 26); what an operator read in the report comes from the environment's
// own lines instead: its first line carries init_ms (from the logger's
// construction, early in init, to that line), and an invocation's first
// line carries mem_peak_mb when the process's resident high-water mark
// (VmHWM) has grown since it was last reported. Durations, errors and
// throttles are Lambda's metrics.
func WithRequestIDs(h slog.Handler) slog.Handler {
	return requestIDs{h, &environment{began: time.Now(), status: "/proc/self/status"}}
}

type requestIDs struct {
	slog.Handler
	env *environment
}

// environment is what the execution environment's lines have reported of
// it; the handler's copies (WithAttrs, WithGroup) share it.
type environment struct {
	began  time.Time
	status string // the file VmHWM is read from

	mu         sync.Mutex
	initSaid   bool   // the environment's first line is written
	invocation string // the request id whose first line was seen last
	peakMB     int64  // the high-water mark last reported
}

// report returns the attributes this line adds for the environment.
func (e *environment) report(requestID string) []slog.Attr {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []slog.Attr
	if !e.initSaid {
		e.initSaid = true
		out = append(out, slog.Int64("init_ms", time.Since(e.began).Milliseconds()))
	}
	if requestID == "" || requestID == e.invocation {
		return out
	}
	e.invocation = requestID
	if mb, ok := highWaterMB(e.status); ok && mb > e.peakMB {
		e.peakMB = mb
		out = append(out, slog.Int64("mem_peak_mb", mb))
	}
	return out
}

// highWaterMB reads the peak resident set size (VmHWM) from a
// /proc/<pid>/status file, in MiB rounded up.
func highWaterMB(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmHWM:"))
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte(" kB"))), 10, 64)
		if err != nil {
			return 0, false
		}
		return (kb + 1023) / 1024, true
	}
	return 0, false
}

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	r.Time = time.Time{} // the JSON handler omits a zero time
	var invocation string
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		invocation = lc.AwsRequestID
	}
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(ctx); ok && rc.RequestID != "" {
		r.AddAttrs(slog.String("apigw_id", rc.RequestID))
	} else if invocation != "" {
		r.AddAttrs(slog.String("lambda_request_id", invocation))
	}
	r.AddAttrs(h.env.report(invocation)...)
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs), h.env}
}

func (h requestIDs) WithGroup(name string) slog.Handler {
	return requestIDs{h.Handler.WithGroup(name), h.env}
}
