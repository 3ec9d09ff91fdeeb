// Command reservation-expirer releases reservations whose hold has ended.
// An EventBridge schedule invokes it every minute; each run releases every
// due hold, exactly as a manual release would, and reports how many.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/config"
)

// Result is what a run reports. Failed entries were logged and stay for
// the next run; they do not fail the invocation, which would only have the
// schedule retry what the next minute's run retries anyway.
type Result struct {
	Expired int `json:"expired"`
	Failed  int `json:"failed"`
}

// newHandler builds the function once, at init.
func newHandler(ctx context.Context, cfg config.Config, opts ...app.Option) (func(context.Context) (Result, error), error) {
	a, err := awsapp.New(ctx, cfg, opts...)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) (Result, error) {
		run, err := a.ExpireReservations(ctx)
		return Result{Expired: run.Expired, Failed: run.Failed}, err
	}, nil
}

func main() {
	ctx := context.Background()
	cfg, err := config.FromEnv()
	if err == nil {
		var h func(context.Context) (Result, error)
		if h, err = newHandler(ctx, cfg); err == nil {
			lambda.Start(h)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "reservation-expirer: init:", err)
	os.Exit(1)
}
