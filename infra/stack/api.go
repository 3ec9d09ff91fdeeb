package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
)

// AccessLogFields are the JSON access log's fields on the stage: what the
// function's own line cannot say (the client's address, the latency API
// Gateway saw, why an integration failed, and requests refused before any
// function ran: throttled, or an unknown route) and the id that joins the
// two: API Gateway's, which every response carries (apigw-requestid) and
// the function's lines carry as apigw_id beside the service's req_ id, the
// response's X-Request-Id. The method, path and size are the function's
// to log, and CloudWatch stamps the time; a line is about 170 bytes
// (scripts/bill).
var AccessLogFields = map[string]string{
	"apigw_id":          "$context.requestId",
	"route":             "$context.routeKey",
	"status":            "$context.status",
	"latency_ms":        "$context.responseLatency",
	"ip":                "$context.identity.sourceIp",
	"integration_error": "$context.integration.error",
}

// newAPI makes the HTTP API and its one stage, $default: throttled (the
// stage's default on every route, a tighter one on the public routes, see
// route), with a JSON access log, and mapped to the custom domain when
// there is one. The base URL every function is told is set here.
func (s *Stack) newAPI(d Definition) {
	st := s.Stack
	s.API = awsapigatewayv2.NewHttpApi(st, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:            jsii.String(s.Names.API()),
		Description:        jsii.String("Seller Platform API v1, stage " + d.Stage),
		CreateDefaultStage: jsii.Bool(false),
		// Behind the edge the execute-api endpoint is CloudFront's origin,
		// and the custom domain, if any, is CloudFront's.
		DisableExecuteApiEndpoint: jsii.Bool(d.Domain != nil && !d.Edge),
	})
	access := awslogs.NewLogGroup(st, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/apigateway/" + s.Names.API()),
		Retention:     d.LogRetention,
		RemovalPolicy: d.removal(),
	})
	format := map[string]*string{}
	for k, v := range AccessLogFields {
		format[k] = jsii.String(v)
	}
	props := &awsapigatewayv2.HttpStageProps{
		HttpApi:    s.API,
		StageName:  jsii.String("$default"),
		AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(d.Throttle.Rate),
			BurstLimit: jsii.Number(float64(d.Throttle.Burst)),
		},
	}
	basePath := config.Default().BasePath()
	if d.Domain != nil && !d.Edge {
		dn := awsapigatewayv2.NewDomainName(st, jsii.String("Domain"), &awsapigatewayv2.DomainNameProps{
			DomainName:  jsii.String(d.Domain.Name),
			Certificate: awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("Certificate"), jsii.String(d.Domain.CertificateARN)),
		})
		props.DomainMapping = &awsapigatewayv2.DomainMappingOptions{DomainName: dn}
		s.BaseURL = "https://" + d.Domain.Name + basePath
		awscdk.NewCfnOutput(st, jsii.String("DomainTarget"), &awscdk.CfnOutputProps{
			Description: jsii.String("Point the domain's DNS (CNAME or alias) here"),
			Value:       dn.RegionalDomainName(),
		})
	} else {
		// The functions are created after the API and the routes after
		// them, so the functions can hold the API's own address: the
		// template's order is API → functions → integrations → routes, with
		// no cycle. ApiEndpoint is built from the API id and the region.
		s.BaseURL = *s.API.ApiEndpoint() + basePath
	}
	s.Stage = awsapigatewayv2.NewHttpStage(st, jsii.String("DefaultStage"), props)
	cfn := s.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
	cfn.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: access.LogGroupArn(),
		Format:         awscdk.Stack_Of(st).ToJsonString(format, nil),
	})
}

// route adds every route, each to its group's function, and the public
// routes' tighter throttle to the stage.
func (s *Stack) route(d Definition, routes []Route) {
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	for _, a := range d.API {
		// One integration and one invoke permission per function, for all
		// its routes (a permission per route would grow the function's
		// resource policy with every route).
		integrations[a.Group.Name] = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(a.Group.Name), s.Targets[a.Group.Name], &awsapigatewayv2integrations.HttpLambdaIntegrationProps{
			PayloadFormatVersion:   awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
			ScopePermissionToRoute: jsii.Bool(false),
		})
	}
	settings := map[string]any{}
	var public []awsapigatewayv2.HttpRoute
	for _, r := range routes {
		key := awsapigatewayv2.HttpRouteKey_DEFAULT()
		if r.Key != DefaultRoute {
			key = awsapigatewayv2.HttpRouteKey_With(jsii.String(r.Path), awsapigatewayv2.HttpMethod(r.Method))
		}
		route := awsapigatewayv2.NewHttpRoute(s.Stack, jsii.String("Route "+r.Key), &awsapigatewayv2.HttpRouteProps{
			HttpApi:     s.API,
			RouteKey:    key,
			Integration: integrations[r.Function],
		})
		if r.Public {
			public = append(public, route)
			settings[r.Key] = map[string]any{
				"ThrottlingRateLimit":  d.PublicThrottle.Rate,
				"ThrottlingBurstLimit": d.PublicThrottle.Burst,
			}
		}
	}
	if len(settings) > 0 {
		cfn := s.Stage.Node().DefaultChild().(awsapigatewayv2.CfnStage)
		cfn.AddPropertyOverride(jsii.String("RouteSettings"), settings)
		// A stage's route settings name routes that must exist first.
		for _, r := range public {
			s.Stage.Node().AddDependency(r)
		}
	}
}
