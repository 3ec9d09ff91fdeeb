package lambdaapi

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// WithRequestIDs wraps a log handler so that every line logged while an
// invocation is served carries Lambda's request id (lambda_request_id)
// beside the service's own request_id: the stage's access log names both
// (with API Gateway's own id), so a line of the access log, the
// function's log, its REPORT line and the X-Request-Id a client quotes
// all find each other. Lines carry no time of their own: CloudWatch Logs
// stamps every event it takes, and the embedded metrics carry theirs.
func WithRequestIDs(h slog.Handler) slog.Handler { return requestIDs{h} }

type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	r.Time = time.Time{} // the JSON handler omits a zero time
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("lambda_request_id", lc.AwsRequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler { return requestIDs{h.Handler.WithGroup(name)} }
