package lambdaapi

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// WithRequestIDs wraps a log handler so that every line logged while an
// invocation is served carries Lambda's request id (lambda_request_id)
// and, for an API Gateway request, API Gateway's (apigw_request_id), beside
// the service's own request_id: a line of the stage's access log, of the
// function's log and the X-Request-Id a client quotes all find each other.
func WithRequestIDs(h slog.Handler) slog.Handler { return requestIDs{h} }

type requestIDs struct{ slog.Handler }

func (h requestIDs) Handle(ctx context.Context, r slog.Record) error {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		r.AddAttrs(slog.String("lambda_request_id", lc.AwsRequestID))
	}
	if rc, ok := core.GetAPIGatewayV2ContextFromContext(ctx); ok && rc.RequestID != "" {
		r.AddAttrs(slog.String("apigw_request_id", rc.RequestID))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDs) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDs{h.Handler.WithAttrs(attrs)}
}

func (h requestIDs) WithGroup(name string) slog.Handler { return requestIDs{h.Handler.WithGroup(name)} }
