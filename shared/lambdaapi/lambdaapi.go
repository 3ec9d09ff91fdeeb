// Package lambdaapi is the Lambda front of the service: the API Gateway
// HTTP API (payload format 2.0) front of the operation groups (Main), the
// stream router on the table's DynamoDB stream (StreamRouterMain) and the
// SQS workers (WorkerMain). Each assembles the app on the AWS adapters
// (app/awsapp) once at init, so that each functions/<name>/main.go is one
// call.
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

// New assembles the app from cfg on the AWS adapters (the options may give
// others, as tests do) and returns groups behind the HTTP API v2 adapter. Main calls it once at init; tests call the result with sample
// events, as Lambda does.
func New(ctx context.Context, cfg config.Config, groups []httpapi.Group, opts ...app.Option) (Handler, error) {
	a, err := awsapp.New(ctx, cfg, append(opts, app.WithLogHandler(WithRequestIDs))...)
	if err != nil {
		return nil, err
	}
	h, err := a.Handler(ctx, groups...)
	if err != nil {
		return nil, err
	}
	return httpadapter.NewV2(h).ProxyWithContext, nil
}

// Main is the whole main of the Lambda called name: configuration from the
// environment, the handler of groups built once, then the Lambda loop. An
// init failure is printed as "<name>: init: <err>" and exits with status 1,
// which Lambda reports as the init error.
func Main(name string, groups ...httpapi.Group) { MainWith(name, nil, groups...) }

// MainWith is Main with options the function's main wires beyond the AWS
// adapters (the media Lambda's encoder).
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
