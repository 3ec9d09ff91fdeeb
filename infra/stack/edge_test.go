package stack

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
)

// distribution finds the stage's CloudFront distribution whose comment
// ends in what ("media", "API").
func (t tmpl) distribution(tb testing.TB, what string) (string, map[string]any) {
	tb.Helper()
	var found []string
	for _, id := range t.ofType("AWS::CloudFront::Distribution") {
		cfg := t.res[id].Properties["DistributionConfig"].(map[string]any)
		if c, _ := cfg["Comment"].(string); strings.HasSuffix(c, " "+what) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("%d %s distributions, want 1", len(found), what)
	}
	return found[0], t.res[found[0]].Properties["DistributionConfig"].(map[string]any)
}

// aclRules reads the web ACL's rules by name.
func aclRules(tb testing.TB) (map[string]any, map[string]map[string]any) {
	tb.Helper()
	_, acl := prodEdge.only(tb, "AWS::WAFv2::WebACL")
	rules := map[string]map[string]any{}
	for _, r := range acl.Properties["Rules"].([]any) {
		m := r.(map[string]any)
		rules[m["Name"].(string)] = m
	}
	return acl.Properties, rules
}

// matches evaluates a WAF statement of the kinds the edge uses (byte
// matches on the URL-decoded path, and, or, not) against a request path.
func matches(tb testing.TB, st map[string]any, path string) bool {
	tb.Helper()
	switch {
	case st["ByteMatchStatement"] != nil:
		b := st["ByteMatchStatement"].(map[string]any)
		if _, ok := b["FieldToMatch"].(map[string]any)["UriPath"]; !ok {
			tb.Fatalf("byte match on %v, want the URI path", b["FieldToMatch"])
		}
		if tt := b["TextTransformations"].([]any); len(tt) != 1 || tt[0].(map[string]any)["Type"] != "URL_DECODE" {
			tb.Fatalf("path match transformations %v, want URL_DECODE", tt)
		}
		s := b["SearchString"].(string)
		switch b["PositionalConstraint"] {
		case "EXACTLY":
			return path == s
		case "STARTS_WITH":
			return strings.HasPrefix(path, s)
		}
		tb.Fatalf("positional constraint %v", b["PositionalConstraint"])
	case st["OrStatement"] != nil:
		for _, s := range st["OrStatement"].(map[string]any)["Statements"].([]any) {
			if matches(tb, s.(map[string]any), path) {
				return true
			}
		}
		return false
	case st["NotStatement"] != nil:
		return !matches(tb, st["NotStatement"].(map[string]any)["Statement"].(map[string]any), path)
	}
	tb.Fatalf("statement %v", st)
	return false
}

// samplePath fills a route's path parameters.
func samplePath(p string) string {
	for strings.Contains(p, "{") {
		i, j := strings.IndexByte(p, '{'), strings.IndexByte(p, '}')
		p = p[:i] + "x1" + p[j+1:]
	}
	return p
}

// TestTheEdgeLimitsAreTheServicesAllowances: the web ACL's rate-based
// rules, in CloudFront's scope, with limits computed here from the
// configuration the functions run with (config.Default(): the stack sets
// no rate variable) and the edge's limits: a window's worth of the
// service's allowances (a sliding window of W overlaps W/1min+1 of the
// service's one-minute windows), times the headroom. Over a limit the
// edge answers 429 with the service's RATE_LIMITED problem.
func TestTheEdgeLimitsAreTheServicesAllowances(t *testing.T) {
	cfg, l := config.Default(), prod.def.EdgeLimits
	if l != (EdgeLimits{Window: 5 * time.Minute, PublicWindow: time.Minute, Headroom: 2, VendorsPerAddress: 10}) {
		t.Fatalf("prod's edge limits %+v are not the recorded ones (docs/decisions.md)", l)
	}
	credential := 2 * (cfg.RateReads + cfg.RateWrites) * (5 + 1)
	want := []struct {
		name          string
		limit, window int
		key           string
	}{
		{"ExchangePerAddress", 2 * cfg.RateExchange * (1 + 1), 60, "IP"},
		{"PublicPerAddress", 2 * cfg.RatePublic * (1 + 1), 60, "IP"},
		{"PerCredential", credential, 300, "Authorization"},
		{"PerAddress", 10 * credential, 300, "IP"},
	}
	// The contract's allowances as they stand: 60 reads and 12 writes a
	// minute per vendor, 10 exchanges and 120 media reads per client.
	if cfg.RateReads == 60 && cfg.RateWrites == 12 && cfg.RateExchange == 10 && cfg.RatePublic == 120 {
		for i, n := range []int{40, 480, 864, 8640} {
			if want[i].limit != n {
				t.Fatalf("%s: computed %d, want %d", want[i].name, want[i].limit, n)
			}
		}
	}
	acl, rules := aclRules(t)
	if acl["Scope"] != "CLOUDFRONT" || acl["DefaultAction"].(map[string]any)["Allow"] == nil {
		t.Errorf("web ACL scope %v, default action %v", acl["Scope"], acl["DefaultAction"])
	}
	if len(rules) != len(want) {
		t.Errorf("%d rules, want %d", len(rules), len(want))
	}
	bodies := acl["CustomResponseBodies"].(map[string]any)
	for prio, w := range want {
		r, ok := rules[w.name]
		if !ok {
			t.Errorf("no rule %s", w.name)
			continue
		}
		if r["Priority"] != float64(prio) {
			t.Errorf("%s: priority %v, want %d", w.name, r["Priority"], prio)
		}
		rate := r["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
		if rate["Limit"] != float64(w.limit) || rate["EvaluationWindowSec"] != float64(w.window) {
			t.Errorf("%s: limit %v per %vs, want %d per %ds", w.name, rate["Limit"], rate["EvaluationWindowSec"], w.limit, w.window)
		}
		if w.limit < 10 {
			t.Errorf("%s: limit %d is below WAF's minimum of 10", w.name, w.limit)
		}
		if w.key == "IP" {
			if rate["AggregateKeyType"] != "IP" || rate["CustomKeys"] != nil {
				t.Errorf("%s: keyed on %v %v, want the client address", w.name, rate["AggregateKeyType"], rate["CustomKeys"])
			}
		} else {
			wantKeys := []any{map[string]any{"Header": map[string]any{"Name": w.key, "TextTransformations": []any{map[string]any{"Priority": float64(0), "Type": "NONE"}}}}}
			if rate["AggregateKeyType"] != "CUSTOM_KEYS" || !reflect.DeepEqual(rate["CustomKeys"], wantKeys) {
				t.Errorf("%s: keyed on %v %v, want the whole %s header", w.name, rate["AggregateKeyType"], rate["CustomKeys"], w.key)
			}
		}
		resp := r["Action"].(map[string]any)["Block"].(map[string]any)["CustomResponse"].(map[string]any)
		if resp["ResponseCode"] != float64(429) {
			t.Errorf("%s answers %v, want 429", w.name, resp["ResponseCode"])
		}
		body, _ := bodies[resp["CustomResponseBodyKey"].(string)].(map[string]any)
		var problem map[string]any
		if body["ContentType"] != "APPLICATION_JSON" || json.Unmarshal([]byte(body["Content"].(string)), &problem) != nil ||
			problem["code"] != "RATE_LIMITED" || problem["status"] != float64(429) || problem["type"] != "/v1/errors#rate-limited" {
			t.Errorf("%s: 429 body %v", w.name, body)
		}
		if v := r["VisibilityConfig"].(map[string]any); v["CloudWatchMetricsEnabled"] != true || v["SampledRequestsEnabled"] != true {
			t.Errorf("%s: visibility %v", w.name, v)
		}
	}
}

// TestTheEdgeRulesCountTheRightRoutes: per credential on every
// authenticated route and on no public one; the public routes' tighter
// per-address rule on every public route (unknown paths too) and on no
// authenticated one; the exchange's on the exchange alone; per address on
// everything.
func TestTheEdgeRulesCountTheRightRoutes(t *testing.T) {
	_, rules := aclRules(t)
	scope := func(name string) map[string]any {
		rate := rules[name]["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
		s, _ := rate["ScopeDownStatement"].(map[string]any)
		return s
	}
	if scope("PerAddress") != nil {
		t.Errorf("PerAddress is scoped down: %v", scope("PerAddress"))
	}
	type sample struct {
		path             string
		public, exchange bool
	}
	samples := []sample{{"/v1/no-such-path", true, false}, {"/", true, false}, {"/v2/vendors", true, false}}
	for _, r := range prod.routes() {
		if r.Key != DefaultRoute {
			samples = append(samples, sample{samplePath(r.Path), r.Public, r.Path == "/v1/store-pairings/exchange"})
		}
	}
	exchanges := 0
	for _, s := range samples {
		if got := matches(t, scope("PerCredential"), s.path); got == s.public {
			t.Errorf("%s (public %v): counted per credential %v", s.path, s.public, got)
		}
		if got := matches(t, scope("PublicPerAddress"), s.path); got != s.public {
			t.Errorf("%s (public %v): counted by the public rule %v", s.path, s.public, got)
		}
		if got := matches(t, scope("ExchangePerAddress"), s.path); got != s.exchange {
			t.Errorf("%s: counted as an exchange %v", s.path, got)
		}
		if s.exchange {
			exchanges++
		}
	}
	if exchanges == 0 {
		t.Error("no route is the exchange")
	}
}

// TestTheAPIIsServedThroughTheEdge: in prod the API's base URL is a
// CloudFront distribution with the web ACL; it forwards every method, the
// query string and every viewer header but Host (the managed policy that
// forwards Authorization when nothing is cached) and caches nothing; it
// sends the origin, over TLS only, the generated edge secret, which every
// API function is given to require. The web ACL lives in us-east-1 and is
// referenced across regions.
func TestTheAPIIsServedThroughTheEdge(t *testing.T) {
	if got := *prodStack.EdgeStack.Region(); got != EdgeRegion {
		t.Errorf("the web ACL's stack is in %s, want %s", got, EdgeRegion)
	}
	if got := *prodStack.EdgeStack.StackName(); got != "sellerapi-prod-edge" {
		t.Errorf("edge stack %s", got)
	}
	distID, cfg := prod.distribution(t, "API")
	beh := cfg["DefaultCacheBehavior"].(map[string]any)
	methods := toStrings(beh["AllowedMethods"])
	slices.Sort(methods)
	if want := []string{"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}; !slices.Equal(methods, want) {
		t.Errorf("allowed methods %v, want %v", methods, want)
	}
	const cachingDisabled, allViewerExceptHost = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad", "b689b0a8-53d0-40ab-baf2-68738e2966ac"
	if beh["CachePolicyId"] != cachingDisabled || beh["OriginRequestPolicyId"] != allViewerExceptHost {
		t.Errorf("cache policy %v, origin request policy %v: want CachingDisabled and AllViewerExceptHostHeader", beh["CachePolicyId"], beh["OriginRequestPolicyId"])
	}
	if beh["ViewerProtocolPolicy"] != "https-only" || beh["Compress"] != false || beh["ForwardedValues"] != nil {
		t.Errorf("default behavior %v", beh)
	}
	if _, more := cfg["CacheBehaviors"]; more {
		t.Errorf("extra cache behaviors %v", cfg["CacheBehaviors"])
	}
	acl, _ := json.Marshal(cfg["WebACLId"])
	_, aclRes := prodEdge.only(t, "AWS::WAFv2::WebACL")
	if !strings.Contains(string(acl), "ExportsReader") {
		t.Errorf("web ACL id %s: want the cross-region reference to the edge stack's web ACL", acl)
	}
	_, writer := prodEdge.only(t, "Custom::CrossRegionExportWriter")
	w, _ := json.Marshal(writer.Properties)
	aclID := prodEdge.ofType("AWS::WAFv2::WebACL")[0]
	if !strings.Contains(string(w), `"Fn::GetAtt":["`+aclID+`","Arn"]`) || !strings.Contains(string(w), "eu-west-1") {
		t.Errorf("the edge stack exports %s, want the web ACL's ARN to eu-west-1", w)
	}
	_ = aclRes
	// The reference's CDK-made reader in the stage's stack (and writer in
	// the edge's) may read (write) only the stage's exported parameters.
	for id, r := range prod.res {
		if r.Type != "AWS::IAM::Role" || !cdkProvider(id) {
			continue
		}
		b, _ := json.Marshal(r.Properties["Policies"])
		if !strings.Contains(string(b), `:parameter/cdk/exports/sellerapi-prod/*"`) || strings.Contains(string(b), `"*"`) {
			t.Errorf("the cross-region reader's role may do %s", b)
		}
	}
	if n := len(prod.ofType("AWS::Lambda::Function")) - len(prod.functionsByID()); n != 1 {
		t.Errorf("%d functions in prod are not the service's, want the cross-region reader alone", n)
	}

	origins := cfg["Origins"].([]any)
	if len(origins) != 1 {
		t.Fatalf("origins %v", origins)
	}
	o := origins[0].(map[string]any)
	apiID, _ := prod.only(t, "AWS::ApiGatewayV2::Api")
	dn, _ := json.Marshal(o["DomainName"])
	if want := `{"Fn::Select":[2,{"Fn::Split":["/",{"Fn::GetAtt":["` + apiID + `","ApiEndpoint"]}]}]}`; string(dn) != want {
		t.Errorf("origin domain %s: want the API's execute-api host", dn)
	}
	if c := o["CustomOriginConfig"].(map[string]any); c["OriginProtocolPolicy"] != "https-only" || !reflect.DeepEqual(c["OriginSSLProtocols"], []any{"TLSv1.2"}) {
		t.Errorf("origin config %v", c)
	}
	headers := o["OriginCustomHeaders"].([]any)
	if len(headers) != 1 || headers[0].(map[string]any)["HeaderName"] != httpapi.EdgeHeader {
		t.Fatalf("origin headers %v, want %s alone", headers, httpapi.EdgeHeader)
	}
	secretValue, _ := json.Marshal(headers[0].(map[string]any)["HeaderValue"])
	secretID, secret := prod.only(t, "AWS::SecretsManager::Secret")
	if !strings.Contains(string(secretValue), "{{resolve:secretsmanager:") || !strings.Contains(string(secretValue), `{"Ref":"`+secretID+`"}`) {
		t.Errorf("edge header value %s: want a dynamic reference to the generated secret", secretValue)
	}
	if g := secret.Properties["GenerateSecretString"].(map[string]any); g["PasswordLength"] != float64(48) || g["ExcludePunctuation"] != true {
		t.Errorf("secret generation %v", g)
	}

	base := `{"Fn::Join":["",["https://",{"Fn::GetAtt":["` + distID + `","DomainName"]},"/v1"]]}`
	for id, fn := range prod.functionsByID() {
		vars := prod.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		got, _ := json.Marshal(vars[config.EnvEdgeSecret])
		// The deploy hook sends the secret with its smoke requests, as the
		// edge does.
		if (prod.def.isAPI(fn) || fn == prod.def.DeployHook) != (string(got) == string(secretValue)) {
			t.Errorf("%s: %s = %s (an API function: %v)", fn, config.EnvEdgeSecret, got, prod.def.isAPI(fn))
		}
		if b, _ := json.Marshal(vars[config.EnvBaseURL]); string(b) != base && fn != prod.def.DeployHook {
			t.Errorf("%s: base URL %s, want the edge's %s", fn, b, base)
		}
		for k := range vars {
			if strings.HasPrefix(k, "SELLERAPI_RATE_") {
				t.Errorf("%s sets %s: the edge's limits assume the default allowances", fn, k)
			}
		}
	}
	_, api := prod.only(t, "AWS::ApiGatewayV2::Api")
	if api.Properties["DisableExecuteApiEndpoint"] != false {
		t.Error("the execute-api endpoint, CloudFront's origin, is off")
	}
	for _, o := range []string{"BaseUrl", "OriginUrl"} {
		if _, ok := prod.out[o]; !ok {
			t.Errorf("no output %s", o)
		}
	}

	// Without an edge (dev): no web ACL, no API distribution, no secret.
	if len(dev.ofType("AWS::SecretsManager::Secret")) != 0 || len(dev.ofType("AWS::CloudFront::Distribution")) != 1 || dev.def.Edge {
		t.Error("dev has an edge")
	}
	for id, fn := range dev.functionsByID() {
		if _, ok := dev.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)[config.EnvEdgeSecret]; ok {
			t.Errorf("dev's %s requires an edge", fn)
		}
	}
}

// TestEdgeDefaultsAndChecks: prod has an edge and no other stage by
// default; an edge needs a region, a us-east-1 certificate for a custom
// domain, WAF's windows and minimum limit, and cannot let one address
// take more than a tenth of the stage.
func TestEdgeDefaultsAndChecks(t *testing.T) {
	for _, stage := range []string{"prod", "dev", "ci", "local", "localstack"} {
		if Default(stage).Edge != (stage == "prod") {
			t.Errorf("stage %s: edge %v", stage, Default(stage).Edge)
		}
	}
	placeholder := t.TempDir()
	def := func(stage string, edit func(*Definition)) Definition {
		d := Default(stage)
		d.Edge, d.Placeholder = true, placeholder
		edit(&d)
		return d
	}
	for name, d := range map[string]Definition{
		"certificate outside us-east-1": def("dev", func(d *Definition) {
			d.Domain = &Domain{Name: "api.example.com", CertificateARN: "arn:aws:acm:eu-west-1:123456789012:certificate/x"}
		}),
		"local stage":               def("local", func(*Definition) {}),
		"an address takes too much": def("prod", func(d *Definition) { d.EdgeLimits.VendorsPerAddress = 1000 }),
	} {
		if err := d.check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := def("dev", func(d *Definition) {
		d.Domain = &Domain{Name: "api.example.com", CertificateARN: "arn:aws:acm:us-east-1:123456789012:certificate/x"}
	}).check(); err != nil {
		t.Errorf("a us-east-1 certificate: %v", err)
	}
	routes := prod.routes()
	for name, c := range map[string]struct {
		cfg func(*config.Config)
		l   func(*EdgeLimits)
	}{
		"no headroom":         {nil, func(l *EdgeLimits) { l.Headroom = 0 }},
		"a 3-minute window":   {nil, func(l *EdgeLimits) { l.Window = 3 * time.Minute }},
		"below WAF's minimum": {func(c *config.Config) { c.RateExchange = 1 }, nil},
		"a 30-second window":  {nil, func(l *EdgeLimits) { l.PublicWindow = 30 * time.Second }},
	} {
		cfg, l := config.Default(), DefaultEdgeLimits()
		if c.cfg != nil {
			c.cfg(&cfg)
		}
		if c.l != nil {
			c.l(&l)
		}
		if _, err := EdgeRules(cfg, routes, l); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New(awscdk.NewApp(nil), def("prod", func(*Definition) {}), nil); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("an edge without a region: %v", err)
	}
}

// TestBehindTheEdgeACustomDomainIsCloudFronts: with an edge, the custom
// domain (its certificate in us-east-1) is the distribution's, the base
// URL is https://<domain>/v1, and API Gateway keeps no domain of its own:
// its execute-api endpoint is the edge's origin.
func TestBehindTheEdgeACustomDomainIsCloudFronts(t *testing.T) {
	const cert = "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"
	d := Default("dev")
	d.Edge, d.Placeholder = true, t.TempDir()
	d.Domain = &Domain{Name: "api.example.com", CertificateARN: cert}
	st, err := New(awscdk.NewApp(nil), d, &awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("eu-west-1")}})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := templateOf(st.Stack, d)
	if err != nil {
		t.Fatal(err)
	}
	distID, cfg := tm.distribution(t, "API")
	if !reflect.DeepEqual(cfg["Aliases"], []any{"api.example.com"}) {
		t.Errorf("aliases %v", cfg["Aliases"])
	}
	if vc := cfg["ViewerCertificate"].(map[string]any); vc["AcmCertificateArn"] != cert || vc["SslSupportMethod"] != "sni-only" {
		t.Errorf("viewer certificate %v", vc)
	}
	if n := len(tm.ofType("AWS::ApiGatewayV2::DomainName")); n != 0 {
		t.Errorf("%d API Gateway domain names", n)
	}
	if _, api := tm.only(t, "AWS::ApiGatewayV2::Api"); api.Properties["DisableExecuteApiEndpoint"] != false {
		t.Error("the execute-api endpoint, CloudFront's origin, is off")
	}
	for id, fn := range tm.functionsByID() {
		if v := tm.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)[config.EnvBaseURL]; v != "https://api.example.com/v1" {
			t.Errorf("%s: base URL %v", fn, v)
		}
	}
	target, _ := json.Marshal(tm.out["DomainTarget"])
	if !strings.Contains(string(target), `"Fn::GetAtt":["`+distID+`","DomainName"]`) {
		t.Errorf("DomainTarget %s, want the distribution's domain", target)
	}
}
