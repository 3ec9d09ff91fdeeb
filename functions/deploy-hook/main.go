// Command deploy-hook is the BeforeAllowTraffic hook of every canary
// deployment (infra/stack/canary.go): CodeDeploy invokes it with the
// deployment's id before shifting any traffic; it invokes each target's
// new version with the smoke request the stack's plan names for it
// (shared/deployhook) and reports Succeeded or Failed, and CodeDeploy
// rolls the deployment back on Failed.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/deployhook"
	"github.com/moku/sellerapi/shared/httpapi"
)

// newHook builds the hook from the environment, once, at init.
func newHook(ctx context.Context, getenv func(string) string) (deployhook.Hook, error) {
	plan, err := deployhook.ParsePlan([]byte(getenv(deployhook.EnvPlan)))
	if err != nil {
		return deployhook.Hook{}, err
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return deployhook.Hook{}, fmt.Errorf("aws config: %w", err)
	}
	h := deployhook.Hook{
		Deployments: codedeploy.NewFromConfig(cfg),
		Lambda:      awslambda.NewFromConfig(cfg),
		Plan:        plan,
		Log:         slog.New(slog.NewJSONHandler(os.Stdout, nil)),
	}
	if secret := getenv(config.EnvEdgeSecret); secret != "" {
		h.EdgeHeader, h.EdgeSecret = httpapi.EdgeHeader, secret
	}
	return h, nil
}

func main() {
	h, err := newHook(context.Background(), os.Getenv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "deploy-hook: init: %v\n", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
