// Package lambdaapi is the Lambda front of the service: the API Gateway
// HTTP API (payload format 2.0) front of the operation groups (Main), the
// stream router on the table's DynamoDB stream (StreamRouterMain) and the
// SQS workers (WorkerMain). Each is its Lambda's composition root: it
// builds the app on the AWS adapters (app/awsapp), with every service
// built once (app.NewServices), and the handler or worker over them once
// at init, so that each functions/<name>/main.go is one call.
//
// Routes, platform rules and business rules live in shared/httpapi and the
// domain packages, not here; test helpers are in lambdatest.
package lambdaapi

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
)

// Handler is the function Lambda invokes with each HTTP API request.
type Handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// New builds the handler an API Lambda serves, as MainWith does: the
// adapters cfg names (the options may give others, as tests do) and every
// service over them, built once (awsapp.New → app.New → app.NewServices);
// then the groups' handler, which receives those services (App.Handler →
// httpapi.New), behind the HTTP API v2 adapter. Tests call the result with
// sample events, as Lambda does.
func New(ctx context.Context, cfg config.Config, groups []httpapi.Group, opts ...app.Option) (Handler, error) {
	a, err := awsapp.New(ctx, cfg, append(opts, app.WithLogHandler(WithRequestIDs))...)
	if err != nil {
		return nil, err
	}
	srv, err := a.Handler(ctx, groups...)
	if err != nil {
		return nil, err
	}
	return httpadapter.NewV2(srv).ProxyWithContext, nil
}

// Main is the whole main of the API Lambda called name (MainWith).
func Main(name string, groups ...httpapi.Group) { MainWith(name, nil, groups...) }

// MainWith is the composition root of the API Lambda called name, with
// the options its main wires beyond the AWS adapters (the media Lambda's
// encoder), in the order it wires (docs/architecture.md, "Wiring"):
// configuration from the environment; the adapters, the services and the
// handler of groups, built once at init (New); then the Lambda loop. An
// init failure is printed as "<name>: init: <err>" and exits with status
// 1, which Lambda reports as the init error.
func MainWith(name string, opts []app.Option, groups ...httpapi.Group) {
	ctx := context.Background()
	cfg, err := config.FromEnv()
	if err != nil {
		fail(name, err)
	}
	h, err := New(ctx, cfg, groups, opts...)
	if err != nil {
		fail(name, err)
	}
	lambda.Start(h)
}

func fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: init: %v\n", name, err)
	os.Exit(1)
}
