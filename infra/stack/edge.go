package stack

// The API's edge: CloudFront in front of the HTTP API with an AWS WAF web
// ACL of per-client rate-based rules, whose limits are derived from the
// allowances the service itself enforces (shared/config), and an origin
// that refuses whatever did not come through it.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfront"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudfrontorigins"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/ratelimit"
)

// EdgeRegion is where a web ACL for CloudFront must be made. The edge's
// web ACL lives in a stack of its own there (sellerapi-<stage>-edge),
// which the stage's stack references across regions.
const EdgeRegion = "us-east-1"

// EdgeLimits shape the web ACL's rate-based rules. Each rule's limit is
// what the service admits in the rule's evaluation window, times Headroom.
type EdgeLimits struct {
	// Window is the evaluation window of the per-credential and
	// per-address rules; PublicWindow that of the public routes' rules.
	// WAF offers 1, 2, 5 and 10 minutes.
	Window, PublicWindow time.Duration
	// Headroom multiplies what the service admits in a window: a client
	// may send this many times its allowance (its refused requests
	// included) before the edge blocks it rather than the service
	// answering 429.
	Headroom int
	// VendorsPerAddress is how many vendors' full allowances one client
	// address may carry over every route: an integrator or a NAT serving
	// several sellers.
	VendorsPerAddress int
}

// DefaultEdgeLimits are the service's (docs/decisions.md, "Per-client
// limits at the edge").
func DefaultEdgeLimits() EdgeLimits {
	return EdgeLimits{Window: 5 * time.Minute, PublicWindow: time.Minute, Headroom: 2, VendorsPerAddress: 10}
}

// WAF's bounds on a rate-based rule.
const (
	wafMinLimit = 10
	wafMaxLimit = 2_000_000_000
)

// EdgeRule is one rate-based rule of the edge's web ACL.
type EdgeRule struct {
	Name string
	// Limit is the most requests one key may send in Window.
	Limit  int
	Window time.Duration
	// Header is the header whose whole value is the key; "" keys on the
	// client's address.
	Header string
	// Scope: the rule counts requests whose path matches one of Paths, or
	// with Outside, none of them; no Paths: every request.
	Paths   []PathMatch
	Outside bool
}

// PathMatch matches a request path exactly or, with Prefix, its start.
type PathMatch struct {
	Path   string
	Prefix bool
}

// windowsIn is how many of the service's fixed one-minute windows a
// sliding window of w overlaps: what the service can admit in it is that
// many allowances.
func windowsIn(w time.Duration) int { return int(w/ratelimit.Window) + 1 }

// EdgeRules derives the web ACL's rules, in priority order, from the
// service's configuration cfg (the allowances its functions enforce), the
// route table and the limits:
//
//   - ExchangePerAddress: the pairing-code exchange, per client address,
//     from cfg.RateExchange;
//   - PublicPerAddress: every public route (no credential, unknown paths
//     included), per client address, from cfg.RatePublic;
//   - PerCredential: the authenticated routes, per Authorization value,
//     from one vendor's reads and writes (cfg.RateReads + cfg.RateWrites),
//     which every credential of the vendor shares;
//   - PerAddress: every request, per client address, VendorsPerAddress
//     credentials' worth.
func EdgeRules(cfg config.Config, routes []Route, l EdgeLimits) ([]EdgeRule, error) {
	if l.Headroom < 1 || l.VendorsPerAddress < 1 {
		return nil, fmt.Errorf("stack: edge headroom %d and vendors per address %d must be at least 1", l.Headroom, l.VendorsPerAddress)
	}
	var exchange []PathMatch
	for _, r := range routes {
		if r.Throttle == ratelimit.Exchange {
			exchange = append(exchange, PathMatch{Path: r.Path})
		}
	}
	if len(exchange) == 0 {
		return nil, fmt.Errorf("stack: no route is the pairing-code exchange")
	}
	authed, err := authenticatedPrefixes(routes)
	if err != nil {
		return nil, err
	}
	credential := l.Headroom * (cfg.RateReads + cfg.RateWrites) * windowsIn(l.Window)
	rules := []EdgeRule{
		{Name: "ExchangePerAddress", Limit: l.Headroom * cfg.RateExchange * windowsIn(l.PublicWindow), Window: l.PublicWindow, Paths: exchange},
		{Name: "PublicPerAddress", Limit: l.Headroom * cfg.RatePublic * windowsIn(l.PublicWindow), Window: l.PublicWindow, Paths: authed, Outside: true},
		{Name: "PerCredential", Limit: credential, Window: l.Window, Header: "Authorization", Paths: authed},
		{Name: "PerAddress", Limit: l.VendorsPerAddress * credential, Window: l.Window},
	}
	for _, r := range rules {
		if !slices.Contains([]time.Duration{time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute}, r.Window) {
			return nil, fmt.Errorf("stack: edge rule %s: window %v is not one of WAF's 1, 2, 5 or 10 minutes", r.Name, r.Window)
		}
		if r.Limit < wafMinLimit || r.Limit > wafMaxLimit {
			return nil, fmt.Errorf("stack: edge rule %s: limit %d is outside WAF's %d..%d", r.Name, r.Limit, wafMinLimit, wafMaxLimit)
		}
	}
	return rules, nil
}

// authenticatedPrefixes covers every authenticated route's path with the
// fewest prefixes (each path up to its first parameter), and checks that
// none of them covers a public route.
func authenticatedPrefixes(routes []Route) ([]PathMatch, error) {
	var prefixes []string
	for _, r := range routes {
		if r.Public || r.Key == DefaultRoute {
			continue
		}
		p := r.Path
		if i := strings.IndexByte(p, '{'); i >= 0 {
			p = p[:i]
		}
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	var out []PathMatch
	for _, p := range slices.Compact(prefixes) {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1].Path) {
			continue
		}
		out = append(out, PathMatch{Path: p, Prefix: true})
	}
	for _, r := range routes {
		if r.Public && r.Key != DefaultRoute && matchesAny(out, r.Path) {
			return nil, fmt.Errorf("stack: public route %s shares a path prefix with the authenticated routes; the edge cannot tell them apart", r.Key)
		}
	}
	return out, nil
}

func matchesAny(ms []PathMatch, path string) bool {
	return slices.ContainsFunc(ms, func(m PathMatch) bool {
		return path == m.Path || m.Prefix && strings.HasPrefix(path, m.Path)
	})
}

// rateLimitedBody is the key of the web ACL's 429 body.
const rateLimitedBody = "rate-limited"

// RateLimitedProblem is the body of the edge's 429: the service's
// RATE_LIMITED problem, its type relative to the request (/v1/errors#…,
// which resolves against the edge's own address). WAF sends it as
// application/json and cannot send Retry-After.
func RateLimitedProblem(basePath string) string {
	b, _ := json.Marshal(map[string]any{
		"type":   basePath + "/errors#" + errs.CodeRateLimited.Slug(),
		"title":  errs.CodeRateLimited.Title(),
		"status": 429,
		"code":   string(errs.CodeRateLimited),
		"detail": "This client sent more requests than the API's edge admits from one address or credential; retry in a minute.",
	})
	return string(b)
}

// newEdgeACL makes the edge's stack in EdgeRegion and its web ACL.
func (s *Stack) newEdgeACL(scope constructs.Construct, d Definition, account *string) error {
	rules, err := EdgeRules(config.Default(), s.Routes, d.EdgeLimits)
	if err != nil {
		return err
	}
	name := s.Names.Stack() + "-edge"
	s.EdgeStack = awscdk.NewStack(scope, jsii.String(name), &awscdk.StackProps{
		StackName:             jsii.String(name),
		Description:           jsii.String("Seller Platform API, stage " + d.Stage + ": the API edge's web ACL (CloudFront scope, so in " + EdgeRegion + ")"),
		Env:                   &awscdk.Environment{Account: account, Region: jsii.String(EdgeRegion)},
		CrossRegionReferences: jsii.Bool(true),
		TerminationProtection: jsii.Bool(d.Stage == "prod"),
	})
	visibility := func(metric string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(metric),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	var cfnRules []any
	for i, r := range rules {
		rate := &awswafv2.CfnWebACL_RateBasedStatementProperty{
			Limit:               jsii.Number(float64(r.Limit)),
			EvaluationWindowSec: jsii.Number(r.Window.Seconds()),
			AggregateKeyType:    jsii.String("IP"),
		}
		if r.Header != "" {
			rate.AggregateKeyType = jsii.String("CUSTOM_KEYS")
			rate.CustomKeys = []any{&awswafv2.CfnWebACL_RateBasedStatementCustomKeyProperty{
				Header: &awswafv2.CfnWebACL_RateLimitHeaderProperty{
					Name:                jsii.String(r.Header),
					TextTransformations: []any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("NONE")}},
				},
			}}
		}
		if len(r.Paths) > 0 {
			rate.ScopeDownStatement = pathStatement(r.Paths, r.Outside)
		}
		cfnRules = append(cfnRules, &awswafv2.CfnWebACL_RuleProperty{
			Name:      jsii.String(r.Name),
			Priority:  jsii.Number(float64(i)),
			Statement: &awswafv2.CfnWebACL_StatementProperty{RateBasedStatement: rate},
			Action: &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{
				CustomResponse: &awswafv2.CfnWebACL_CustomResponseProperty{ResponseCode: jsii.Number(429), CustomResponseBodyKey: jsii.String(rateLimitedBody)},
			}},
			VisibilityConfig: visibility(s.Names.Stack() + "-edge-" + r.Name),
		})
	}
	s.WebACL = awswafv2.NewCfnWebACL(s.EdgeStack, jsii.String("WebAcl"), &awswafv2.CfnWebACLProps{
		Name:          jsii.String(s.Names.Stack() + "-edge"),
		Description:   jsii.String("Per-client rate limits in front of the Seller Platform API, stage " + d.Stage + ", derived from the service's allowances"),
		Scope:         jsii.String("CLOUDFRONT"),
		DefaultAction: &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		Rules:         cfnRules,
		CustomResponseBodies: map[string]any{rateLimitedBody: &awswafv2.CfnWebACL_CustomResponseBodyProperty{
			ContentType: jsii.String("APPLICATION_JSON"),
			Content:     jsii.String(RateLimitedProblem(config.Default().BasePath())),
		}},
		VisibilityConfig: visibility(s.Names.Stack() + "-edge"),
	})
	return nil
}

// pathStatement matches a request whose URL-decoded path matches one of
// ms, or with outside none of them.
func pathStatement(ms []PathMatch, outside bool) *awswafv2.CfnWebACL_StatementProperty {
	var sts []any
	for _, m := range ms {
		pos := "EXACTLY"
		if m.Prefix {
			pos = "STARTS_WITH"
		}
		sts = append(sts, &awswafv2.CfnWebACL_StatementProperty{ByteMatchStatement: &awswafv2.CfnWebACL_ByteMatchStatementProperty{
			FieldToMatch:         &awswafv2.CfnWebACL_FieldToMatchProperty{UriPath: map[string]any{}},
			PositionalConstraint: jsii.String(pos),
			SearchString:         jsii.String(m.Path),
			TextTransformations:  []any{&awswafv2.CfnWebACL_TextTransformationProperty{Priority: jsii.Number(0), Type: jsii.String("URL_DECODE")}},
		}})
	}
	st := sts[0].(*awswafv2.CfnWebACL_StatementProperty)
	if len(sts) > 1 {
		st = &awswafv2.CfnWebACL_StatementProperty{OrStatement: &awswafv2.CfnWebACL_OrStatementProperty{Statements: sts}}
	}
	if outside {
		st = &awswafv2.CfnWebACL_StatementProperty{NotStatement: &awswafv2.CfnWebACL_NotStatementProperty{Statement: st}}
	}
	return st
}

// newAPIEdge puts CloudFront, with the web ACL, in front of the HTTP API:
// every method, the query string and every viewer header but Host go to
// the origin (Authorization, Idempotency-Key, If-Match...), with
// CloudFront's own viewer headers (CloudFront-Viewer-Address, which the
// API keys a public route's per-client window on behind the edge);
// nothing is cached. Each origin request carries the edge secret in
// httpapi.EdgeHeader, which the API's functions require
// (config.EnvEdgeSecret): the execute-api endpoint answers 403 to
// anything that did not pass the web ACL. The base URL becomes the
// distribution's, or the custom domain's, which then points at CloudFront
// (its certificate in us-east-1).
func (s *Stack) newAPIEdge(d Definition) {
	st := s.Stack
	s.EdgeSecret = awssecretsmanager.NewSecret(st, jsii.String("EdgeSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("Sent by the API's CloudFront edge to its origin in " + httpapi.EdgeHeader + "; the API's functions refuse requests without it"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			ExcludePunctuation: jsii.Bool(true),
			IncludeSpace:       jsii.Bool(false),
			PasswordLength:     jsii.Number(48),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	// A dynamic reference, resolved by CloudFormation at deploy time: the
	// value is in neither the template nor the cloud assembly.
	s.edgeSecretRef = s.EdgeSecret.SecretValue().UnsafeUnwrap()
	origin := awscdk.Fn_Select(jsii.Number(2), awscdk.Fn_Split(jsii.String("/"), s.API.ApiEndpoint(), nil))
	props := &awscloudfront.DistributionProps{
		Comment: jsii.String("sellerapi " + d.Stage + " API"),
		DefaultBehavior: &awscloudfront.BehaviorOptions{
			Origin: awscloudfrontorigins.NewHttpOrigin(origin, &awscloudfrontorigins.HttpOriginProps{
				ProtocolPolicy:     awscloudfront.OriginProtocolPolicy_HTTPS_ONLY,
				OriginSslProtocols: &[]awscloudfront.OriginSslPolicy{awscloudfront.OriginSslPolicy_TLS_V1_2},
				CustomHeaders:      &map[string]*string{httpapi.EdgeHeader: s.edgeSecretRef},
			}),
			// API clients do not follow a redirect of a POST with its body.
			ViewerProtocolPolicy: awscloudfront.ViewerProtocolPolicy_HTTPS_ONLY,
			AllowedMethods:       awscloudfront.AllowedMethods_ALLOW_ALL(),
			CachePolicy:          awscloudfront.CachePolicy_CACHING_DISABLED(),
			OriginRequestPolicy:  awscloudfront.OriginRequestPolicy_ALL_VIEWER_EXCEPT_HOST_HEADER(),
			Compress:             jsii.Bool(false),
		},
		HttpVersion:            awscloudfront.HttpVersion_HTTP2_AND_3,
		MinimumProtocolVersion: awscloudfront.SecurityPolicyProtocol_TLS_V1_2_2021,
		PriceClass:             awscloudfront.PriceClass_PRICE_CLASS_100,
		WebAclId:               s.WebACL.AttrArn(),
	}
	host := ""
	if d.Domain != nil {
		props.DomainNames = jsii.Strings(d.Domain.Name)
		props.Certificate = awscertificatemanager.Certificate_FromCertificateArn(st, jsii.String("Certificate"), jsii.String(d.Domain.CertificateARN))
		host = d.Domain.Name
	}
	s.APICDN = awscloudfront.NewDistribution(st, jsii.String("ApiCdn"), props)
	if host == "" {
		host = *s.APICDN.DistributionDomainName()
	} else {
		awscdk.NewCfnOutput(st, jsii.String("DomainTarget"), &awscdk.CfnOutputProps{
			Description: jsii.String("Point the domain's DNS (CNAME or alias) here"),
			Value:       s.APICDN.DistributionDomainName(),
		})
	}
	s.BaseURL = "https://" + host + config.Default().BasePath()
	awscdk.NewCfnOutput(st, jsii.String("OriginUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The API's origin (execute-api), which answers 403 to requests that did not come through the edge"),
		Value:       s.API.ApiEndpoint(),
	})
}
