// Command admin is the Lambda that creates vendors, moves their ownership,
// and issues and revokes personal access tokens: what the local binary's
// vendor and token subcommands do, for a deployed stage. It has no HTTP
// route; operators invoke it with IAM (lambda:InvokeFunction), e.g.
//
//	aws lambda invoke --function-name sellerapi-prod-admin \
//	  --cli-binary-format raw-in-base64-out \
//	  --payload '{"action":"vendor.create","name":"Acme Goods","slug":"acme-goods"}' out.json
//
// It only wires: configuration from the environment, the app's store and
// clock, and shared/admin's handler, built once at init. The actions and
// their answers are documented in shared/admin; sample events are in
// events/admin/.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/config"
)

func main() {
	h, err := newHandler(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "admin: init: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// newHandler builds the handler from the environment, as Lambda runs it.
func newHandler(ctx context.Context, opts ...app.Option) (admin.Service, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return admin.Service{}, err
	}
	a, err := awsapp.New(ctx, cfg, opts...)
	if err != nil {
		return admin.Service{}, err
	}
	h := a.Services.Admin
	h.MaxTokenLifetime = admin.DeployedTokenLifetime
	return h, nil
}
