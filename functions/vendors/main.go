// Command vendors is the Lambda of the Vendors operation group behind API
// Gateway's HTTP API (payload format 2.0): the public contract
// (GET /openapi.json, GET /errors) and the vendors a token may see.
//
// It only wires: configuration from the environment (the stack sets
// SELLERAPI_STORE=dynamodb and SELLERAPI_TABLE), the app, the group's HTTP
// handler and the API Gateway proxy adapter, all built once at init. The
// routes and their rules live in shared/httpapi; sample events to drive it
// are in events/vendors/.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
)

func main() {
	ctx := context.Background()
	cfg, err := config.FromEnv()
	if err != nil {
		fail(err)
	}
	h, err := newHandler(ctx, cfg)
	if err != nil {
		fail(err)
	}
	lambda.Start(h)
}

// fail ends the init phase; Lambda reports the message as the init error.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "vendors: init:", err)
	os.Exit(1)
}

// Handler is the function Lambda invokes with each HTTP API request.
type Handler = func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// newHandler assembles the app and returns the Vendors group behind the HTTP
// API v2 adapter. Tests call the result with sample events, as Lambda does.
func newHandler(ctx context.Context, cfg config.Config, opts ...app.Option) (Handler, error) {
	a, err := app.New(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	h, err := a.Handler(ctx, httpapi.Vendors)
	if err != nil {
		return nil, err
	}
	return httpadapter.NewV2(h).ProxyWithContext, nil
}
