// Command infra is the CDK app of the Seller Platform API: one stack per
// stage (package stack). cdk.json runs it; `make synth` and `make deploy`
// run the CDK CLI pinned in package.json.
//
// Context (cdk -c key=value):
//
//	stage            the stage to synthesize (default dev); the stack is sellerapi-<stage>
//	retain           true|false: keep the table, bucket and logs on delete (default: true for prod)
//	domain           a custom domain for the API, e.g. api.example.com (optional)
//	certificateArn   the ACM certificate of that domain, in the stack's region
//	assets           the directory of the function zips (default ../dist, made by make build)
//	placeholder      a directory to use as every function's code, for a synth without a build
//	edge             true|false: CloudFront with the WAF web ACL in front of the API (default: true for prod)
//	region           the stack's region when the CLI has no credentials to tell it; a stage with
//	                 an edge needs one (its web ACL is made in us-east-1 and referenced across regions)
//	backupRegion     where a stage with backups (prod) copies them (default us-west-2); never the
//	                 stack's own region
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/infra/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	if err := build(app); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	app.Synth(nil)
}

func build(app awscdk.App) error {
	ctx := func(key, def string) string {
		if v, ok := app.Node().TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	d := stack.Default(ctx("stage", "dev"))
	if v := ctx("retain", ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("context retain=%q: %w", v, err)
		}
		d.Retain = b
	}
	if name := ctx("domain", ""); name != "" {
		d.Domain = &stack.Domain{Name: name, CertificateARN: ctx("certificateArn", "")}
	}
	if v := ctx("edge", ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("context edge=%q: %w", v, err)
		}
		d.Edge = b
	}
	if v := ctx("backupRegion", ""); v != "" {
		if d.Backup == nil {
			return fmt.Errorf("context backupRegion=%q: stage %s has no backups", v, d.Stage)
		}
		d.Backup.CopyRegion = v
	}
	d.Assets = ctx("assets", d.Assets)
	d.Placeholder = ctx("placeholder", "")
	props := &awscdk.StackProps{}
	// The account and region of the CLI's credentials, when it runs us.
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), ctx("region", os.Getenv("CDK_DEFAULT_REGION"))
	switch {
	case account != "" && region != "":
		props.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	case d.Edge && region != "":
		// Account-agnostic, as a synth without credentials is, but in a
		// known region, which the edge's cross-region reference needs.
		props.Env = &awscdk.Environment{Region: jsii.String(region)}
	}
	_, err := stack.New(app, d, props)
	return err
}
