package stack

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/deployhook"
	"github.com/moku/sellerapi/shared/httpapi"
)

// The app is synthesized once for the whole test binary (jsii runs node,
// which takes seconds), with three stages: prod as deployed, dev with a
// custom domain and nothing retained, and async with a stream router and
// two workers to exercise the extension point the default leaves empty.
var (
	prod, dev, async tmpl
	// prodEdge is the prod stage's edge stack, in us-east-1; prodOps its
	// ops stack (cost guards, backups) and prodCopy the backup copy's
	// stack in the second region; devOps the dev stage's ops stack.
	prodEdge, prodOps, prodCopy, devOps tmpl
	prodStack, devStack                 *Stack
)

// tmpl is one stack's synthesized template, both as the CDK assertion
// library sees it and as plain JSON.
type tmpl struct {
	def Definition
	cdk assertions.Template
	res map[string]resource
	out map[string]any
}

type resource struct {
	Type           string         `json:"Type"`
	Properties     map[string]any `json:"Properties"`
	DeletionPolicy string         `json:"DeletionPolicy"`
	UpdateReplace  string         `json:"UpdateReplacePolicy"`
	DependsOn      any            `json:"DependsOn"`
}

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_DEPRECATED_NODE_RELEASE", "1")
	code, err := synth(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		code = 1
	}
	jsii.Close()
	os.Exit(code)
}

func synth(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "sellerapi-synth-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	placeholder := filepath.Join(dir, "placeholder")
	if err := os.MkdirAll(placeholder, 0o755); err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(placeholder, "bootstrap"), []byte("placeholder"), 0o755); err != nil {
		return 0, err
	}
	cdkApp := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(filepath.Join(dir, "cdk.out"))})

	stages := []struct {
		t     *tmpl
		def   Definition
		props *awscdk.StackProps
	}{
		// Prod has an edge, whose web ACL is referenced across regions: its
		// stack needs a region, as a deploy gives it.
		{&prod, Default("prod"), &awscdk.StackProps{Env: &awscdk.Environment{Region: jsii.String("eu-west-1")}}},
		{&dev, func() Definition {
			d := Default("dev")
			d.Domain = &Domain{Name: "api.example.com", CertificateARN: "arn:aws:acm:eu-west-1:123456789012:certificate/00000000-0000-0000-0000-000000000000"}
			return d
		}(), nil},
		{&async, func() Definition {
			d := Default("async")
			d.StreamRouter = "stream-router"
			d.Workers = []Worker{
				{Name: "webhook-worker", QueueURLEnv: "SELLERAPI_WEBHOOK_QUEUE_URL"},
				{Name: "bulk-worker", QueueURLEnv: "SELLERAPI_BULK_QUEUE_URL", BatchSize: 1, MaxReceiveCount: 3, SendsTo: []string{"webhook-worker"}},
			}
			return d
		}(), nil},
	}
	stacks := make([]*Stack, len(stages))
	for i, s := range stages {
		s.def.Placeholder = placeholder
		st, err := New(cdkApp, s.def, s.props)
		if err != nil {
			return 0, err
		}
		stacks[i] = st
	}
	for i, s := range stages {
		// Template_FromStack synthesizes the app once and, by default,
		// fails on a cyclic dependency between resources: passing the API's
		// address to its own functions must not create one.
		cdk := assertions.Template_FromStack(stacks[i].Stack, &assertions.TemplateParsingOptions{SkipCyclicalDependenciesCheck: jsii.Bool(false)})
		raw, err := json.Marshal(cdk.ToJSON())
		if err != nil {
			return 0, err
		}
		var doc struct {
			Resources map[string]resource `json:"Resources"`
			Outputs   map[string]any      `json:"Outputs"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return 0, err
		}
		*s.t = tmpl{def: s.def, cdk: cdk, res: doc.Resources, out: doc.Outputs}
	}
	prodStack, devStack = stacks[0], stacks[1]
	if prodEdge, err = templateOf(stacks[0].EdgeStack, stages[0].def); err != nil {
		return 0, err
	}
	if prodOps, err = templateOf(stacks[0].OpsStack, stages[0].def); err != nil {
		return 0, err
	}
	if prodCopy, err = templateOf(stacks[0].BackupCopyStack, stages[0].def); err != nil {
		return 0, err
	}
	if devOps, err = templateOf(stacks[1].OpsStack, stages[1].def); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// templateOf synthesizes one more stack of the app.
func templateOf(st awscdk.Stack, def Definition) (tmpl, error) {
	if st == nil {
		return tmpl{}, fmt.Errorf("no such stack")
	}
	cdk := assertions.Template_FromStack(st, nil)
	raw, err := json.Marshal(cdk.ToJSON())
	if err != nil {
		return tmpl{}, err
	}
	var doc struct {
		Resources map[string]resource `json:"Resources"`
		Outputs   map[string]any      `json:"Outputs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return tmpl{}, err
	}
	return tmpl{def: def, cdk: cdk, res: doc.Resources, out: doc.Outputs}, nil
}

// media reports whether fn's definition gives it the media bucket.
func (t tmpl) media(fn string) bool {
	for _, a := range t.def.API {
		if a.Group.Name == fn {
			return a.Media
		}
	}
	return false
}

// ofType lists the logical ids of resources of type, sorted.
func (t tmpl) ofType(typ string) []string {
	var ids []string
	for id, r := range t.res {
		if r.Type == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// function returns the logical id of the function deployed from
// functions/<fn>.
func (t *tmpl) function(tb testing.TB, fn string) string {
	tb.Helper()
	name := "sellerapi-" + t.def.Stage + "-" + fn
	for _, id := range t.ofType("AWS::Lambda::Function") {
		if t.res[id].Properties["FunctionName"] == name {
			return id
		}
	}
	tb.Fatalf("no function named %s", name)
	return ""
}

// functionsByID maps every function's logical id to its folder name:
// the service's functions, not the CDK's own provider of the edge's
// cross-region reference (edge_test.go checks that one).
func (t tmpl) functionsByID() map[string]string {
	m := map[string]string{}
	prefix := "sellerapi-" + t.def.Stage + "-"
	for _, id := range t.ofType("AWS::Lambda::Function") {
		if cdkProvider(id) {
			continue
		}
		m[id] = strings.TrimPrefix(t.res[id].Properties["FunctionName"].(string), prefix)
	}
	return m
}

// cdkProvider tells whether a logical id is the CDK's provider of the
// cross-region reference to the edge's web ACL (its function and role).
func cdkProvider(id string) bool {
	return strings.HasPrefix(id, "CustomCrossRegionExportReaderCustomResourceProvider")
}

// targets maps what a trigger may invoke, a function or its live alias,
// to the function's folder name.
func (t tmpl) targets() map[string]string {
	m := t.functionsByID()
	for _, id := range t.ofType("AWS::Lambda::Alias") {
		m[id] = m[ref(t.res[id].Properties["FunctionName"])]
	}
	return m
}

// invoked reads a trigger's reference to what it invokes: a function's
// {"Fn::GetAtt": [fn, "Arn"]}, an alias's {"Ref": alias}, or either inside
// an expression (a mapping names an alias as "<function name>:live").
func invoked(v any) string {
	if id, _ := getAtt(v); id != "" {
		return id
	}
	if id := ref(v); id != "" {
		return id
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if id := invoked(e); id != "" {
				return id
			}
		}
	case []any:
		for _, e := range x {
			if id := invoked(e); id != "" {
				return id
			}
		}
	}
	return ""
}

// getAtt reads {"Fn::GetAtt": [id, attr]}.
func getAtt(v any) (id, attr string) {
	m, _ := v.(map[string]any)
	a, _ := m["Fn::GetAtt"].([]any)
	if len(a) != 2 {
		return "", ""
	}
	id, _ = a[0].(string)
	attr, _ = a[1].(string)
	return id, attr
}

func ref(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["Ref"].(string)
	return s
}

func (t tmpl) only(tb testing.TB, typ string) (string, resource) {
	tb.Helper()
	ids := t.ofType(typ)
	if len(ids) != 1 {
		tb.Fatalf("%d resources of type %s, want 1", len(ids), typ)
	}
	return ids[0], t.res[ids[0]]
}

// cdkAssert runs an assertion of the CDK library, which reports a failed
// match by panicking through jsii.
func cdkAssert(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s: %v", what, p)
		}
	}()
	f()
}

// routeTargets maps each route key of the HTTP API to the function folder
// its integration invokes.
func (t tmpl) routeTargets(tb testing.TB) map[string]string {
	tb.Helper()
	fns := t.targets()
	got := map[string]string{}
	for _, id := range t.ofType("AWS::ApiGatewayV2::Route") {
		p := t.res[id].Properties
		target, _ := p["Target"].(map[string]any)
		parts, _ := target["Fn::Join"].([]any)
		if len(parts) != 2 {
			tb.Fatalf("route %s: target %v", p["RouteKey"], p["Target"])
		}
		list := parts[1].([]any)
		integ := t.res[ref(list[len(list)-1])]
		if integ.Type != "AWS::ApiGatewayV2::Integration" || integ.Properties["IntegrationType"] != "AWS_PROXY" || integ.Properties["PayloadFormatVersion"] != "2.0" {
			tb.Fatalf("route %s: integration %+v, want a Lambda proxy integration, payload 2.0", p["RouteKey"], integ)
		}
		fnID := invoked(integ.Properties["IntegrationUri"])
		key := p["RouteKey"].(string)
		if _, dup := got[key]; dup {
			tb.Errorf("route %s defined twice", key)
		}
		got[key] = fns[fnID]
	}
	return got
}

// expectedRoutes is the route table as the service itself serves it: every
// route of every group, under /v1, to the group's function, and $default
// to the vendors function. No ANY route: a wrong method goes through
// $default too, to a function that knows every path
// (TestWrongMethodsGoThroughTheCatchAll).
func expectedRoutes(t *testing.T, groups []httpapi.Group) map[string]string {
	t.Helper()
	want := map[string]string{"$default": "vendors"}
	for _, g := range groups {
		srv, err := httpapi.New(httpapi.Deps{Config: config.Default(), CursorKey: make([]byte, 32)}, g)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range srv.Routes() {
			want[r.Method+" /v1"+r.Path] = g.Name
		}
	}
	return want
}

func TestEveryRouteOfEveryGroupGoesToThatGroupsFunction(t *testing.T) {
	for _, st := range []tmpl{prod, dev} {
		got := st.routeTargets(t)
		want := expectedRoutes(t, st.def.groups())
		if !reflect.DeepEqual(got, want) {
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s: route %q goes to %q, want %q", st.def.Stage, k, got[k], v)
				}
			}
			for k, v := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: unexpected route %q to %q", st.def.Stage, k, v)
				}
			}
		}
	}
}

// A wrong method goes through $default: no route is ANY, and the catch-all
// function, mounted as its Lambda mounts it (app.Mounted), answers each
// method the template routes nowhere at each of its paths 405 with the
// path's routed methods as Allow, as the path's own function does. HEAD
// and OPTIONS, which no route takes, are among them.
func TestWrongMethodsGoThroughTheCatchAll(t *testing.T) {
	for _, st := range []tmpl{prod, dev} {
		byPath := map[string][]string{}
		for key := range st.routeTargets(t) {
			if key == DefaultRoute {
				continue
			}
			m, p, _ := strings.Cut(key, " ")
			if m == "ANY" {
				t.Errorf("%s: route %s: a wrong method should go through $default", st.def.Stage, key)
			}
			byPath[p] = append(byPath[p], m)
		}
		i := slices.IndexFunc(st.def.groups(), func(g httpapi.Group) bool { return g.Name == st.def.CatchAll })
		if i < 0 {
			t.Fatalf("%s: the catch-all %s serves no group", st.def.Stage, st.def.CatchAll)
		}
		srv, err := httpapi.New(httpapi.Deps{Config: config.Default(), CursorKey: make([]byte, 32)}, app.Mounted(st.def.groups()[i])...)
		if err != nil {
			t.Fatal(err)
		}
		wrong := 0
		for p, ms := range byPath {
			slices.Sort(ms)
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions} {
				if slices.Contains(ms, m) {
					continue
				}
				wrong++
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(m, pathParam.ReplaceAllString(p, "smoke"), nil))
				if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != strings.Join(ms, ", ") {
					t.Errorf("%s: %s %s through $default: %d, Allow %q; want 405, Allow %q", st.def.Stage, m, p, rec.Code, rec.Header().Get("Allow"), strings.Join(ms, ", "))
				}
			}
		}
		if wrong < len(byPath) {
			t.Errorf("%s: %d wrong methods over %d paths", st.def.Stage, wrong, len(byPath))
		}
	}
}

// The sample events of each function name a route key that the API routes
// to that function (or $default, which goes to the catch-all).
func TestSampleEventsMatchTheRoutes(t *testing.T) {
	got := prod.routeTargets(t)
	for _, g := range prod.def.groups() {
		files, _ := filepath.Glob(filepath.Join("..", "..", "events", g.Name, "*.json"))
		if len(files) == 0 {
			t.Logf("no sample events in events/%s/ yet", g.Name)
		}
		for _, f := range files {
			var ev struct {
				RouteKey string `json:"routeKey"`
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want := g.Name
			if ev.RouteKey == DefaultRoute {
				want = prod.def.CatchAll
			}
			if got[ev.RouteKey] != want {
				t.Errorf("%s: route %q goes to %q, want %q", f, ev.RouteKey, got[ev.RouteKey], want)
			}
		}
	}
}

// Each API function has one invoke permission, for this API only; each
// scheduled function one, for its schedule only; the admin function none:
// only IAM principals invoke it.
func TestOnlyTheirTriggersMayInvokeTheFunctions(t *testing.T) {
	fns := prod.targets()
	apiID, _ := prod.only(t, "AWS::ApiGatewayV2::Api")
	rules := map[string]string{} // function → its rule's logical id
	for _, id := range prod.ofType("AWS::Events::Rule") {
		p := prod.res[id].Properties
		targets := p["Targets"].([]any)
		if len(targets) != 1 {
			t.Fatalf("rule %v: targets %v", p["Name"], targets)
		}
		fnID := invoked(targets[0].(map[string]any)["Arn"])
		rules[fns[fnID]] = id
	}
	perms := map[string]int{}
	for _, id := range prod.ofType("AWS::Lambda::Permission") {
		p := prod.res[id].Properties
		fn := fns[invoked(p["FunctionName"])]
		perms[fn]++
		src, _ := json.Marshal(p["SourceArn"])
		if p["Action"] != "lambda:InvokeFunction" {
			t.Errorf("permission %s: %v", id, p)
		}
		if rule, ok := rules[fn]; ok {
			if r, _ := getAtt(p["SourceArn"]); p["Principal"] != "events.amazonaws.com" || r != rule {
				t.Errorf("%s: permission for %v from %s, want its schedule", fn, p["Principal"], src)
			}
		} else if p["Principal"] != "apigateway.amazonaws.com" || !strings.Contains(string(src), `{"Ref":"`+apiID+`"}`) {
			t.Errorf("%s: permission for %v from %s, want this API", fn, p["Principal"], src)
		}
	}
	want := map[string]int{}
	for _, g := range prod.def.groups() {
		want[g.Name] = 1
	}
	for _, sc := range prod.def.Scheduled {
		want[sc.Name] = 1
	}
	want[prod.def.StreamRouter] = 1 // its sweep
	if !reflect.DeepEqual(perms, want) {
		t.Errorf("invoke permissions per function = %v, want %v", perms, want)
	}
	for key, fn := range prod.routeTargets(t) {
		if fn == prod.def.Admin {
			t.Errorf("route %s goes to the admin function", key)
		}
	}
	if ids := prod.ofType("AWS::Lambda::Url"); len(ids) > 0 {
		t.Errorf("function URLs: %v", ids)
	}
}

// The expirer runs every minute; the stream router is asked every five
// minutes to sweep what its stream did not route (its one other trigger).
func TestScheduledFunctionsRunOnTheirRate(t *testing.T) {
	fns := prod.targets()
	want := map[string]string{
		"reservation-expirer": "rate(1 minute) 60 ",
		"stream-router":       `rate(5 minutes) 300 {"sweep":{}}`,
	}
	got := map[string]string{}
	for _, id := range prod.ofType("AWS::Events::Rule") {
		p := prod.res[id].Properties
		target := p["Targets"].([]any)[0].(map[string]any)
		fnID := invoked(target["Arn"])
		rp := target["RetryPolicy"].(map[string]any)
		if p["State"] != "ENABLED" || rp["MaximumRetryAttempts"] != float64(2) {
			t.Errorf("rule %v: state %v, retry %v", p["Name"], p["State"], rp)
		}
		input, _ := target["Input"].(string)
		got[fns[fnID]] = fmt.Sprintf("%v %v %s", p["ScheduleExpression"], rp["MaximumEventAgeInSeconds"], input)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schedules %v, want %v", got, want)
	}
}

func TestFunctionsAreGoOnArm64WithTheServiceConfiguration(t *testing.T) {
	tableID, _ := prod.only(t, "AWS::DynamoDB::Table")
	apiID, _ := prod.only(t, "AWS::ApiGatewayV2::Api")
	fns := prod.functionsByID()
	var names []string
	for id, fn := range fns {
		names = append(names, fn)
		p := prod.res[id].Properties
		if p["Runtime"] != "provided.al2023" || !reflect.DeepEqual(p["Architectures"], []any{"arm64"}) || p["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v, architectures %v, handler %v; want provided.al2023, [arm64], bootstrap", fn, p["Runtime"], p["Architectures"], p["Handler"])
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if fn == prod.def.DeployHook {
			// Its plan, and the edge's secret to send (canary_test.go).
			if _, ok := vars[deployhook.EnvPlan]; !ok || len(vars) != 2 {
				t.Errorf("%s: environment %v", fn, vars)
			}
			continue
		}
		want := 5
		if vars[config.EnvMetricsNamespace] != "sellerapi/prod" {
			t.Errorf("%s: %s = %v", fn, config.EnvMetricsNamespace, vars[config.EnvMetricsNamespace])
		}
		if prod.def.isAPI(fn) || fn == prod.def.Admin || fn == "webhook-worker" {
			want++ // the stage key, checked by TestTheStageKey
		}
		if prod.media(fn) {
			want += 2 // the bucket, checked by TestOnlyMediaFunctionsMayUseTheBucket, and the edge's address
		}
		if prod.def.delivers(fn) {
			want++ // the delivery role, checked by TestTheWebhookDeliveryRole
			if id, _ := getAtt(vars[config.EnvWebhookRoleARN]); id == "" || prod.res[id].Type != "AWS::IAM::Role" {
				t.Errorf("%s: %s = %v", fn, config.EnvWebhookRoleARN, vars[config.EnvWebhookRoleARN])
			}
		}
		if prod.def.Edge && prod.def.isAPI(fn) {
			want++ // the edge's secret, checked by TestTheAPIIsServedThroughTheEdge
		}
		if fn == prod.def.StreamRouter || slices.ContainsFunc(prod.def.Workers, func(w Worker) bool { return w.Name == fn }) {
			want += len(prod.def.queues()) // every queue's URL
			for _, w := range prod.def.queues() {
				if ref(vars[w.QueueURLEnv]) == "" {
					t.Errorf("%s: no %s", fn, w.QueueURLEnv)
				}
			}
		}
		if len(vars) != want || vars[config.EnvStore] != "dynamodb" || ref(vars[config.EnvTable]) != tableID || vars[config.EnvLogLevel] != "info" {
			t.Errorf("%s: environment %v", fn, vars)
		}
		base, _ := json.Marshal(vars[config.EnvBaseURL])
		wantBase := `{"Fn::Join":["",[{"Fn::GetAtt":["` + apiID + `","ApiEndpoint"]},"/v1"]]}`
		if prod.def.Edge {
			distID, _ := prod.distribution(t, "API")
			wantBase = `{"Fn::Join":["",["https://",{"Fn::GetAtt":["` + distID + `","DomainName"]},"/v1"]]}`
		}
		if string(base) != wantBase {
			t.Errorf("%s: %s = %s, want %s", fn, config.EnvBaseURL, base, wantBase)
		}
		logID := ref(p["LoggingConfig"].(map[string]any)["LogGroup"])
		if prod.res[logID].Properties["LogGroupName"] != "/aws/lambda/sellerapi-prod-"+fn {
			t.Errorf("%s: log group %v", fn, prod.res[logID].Properties)
		}
	}
	sort.Strings(names)
	want := prod.def.Functions()
	sort.Strings(want)
	if !reflect.DeepEqual(names, want) {
		t.Errorf("functions = %v, want %v", names, want)
	}
}

// statements returns a role's inline statements by Sid, failing on any
// managed policy or a statement without a Sid.
func (t tmpl) statements(tb testing.TB, roleID string) map[string]map[string]any {
	tb.Helper()
	if mp := t.res[roleID].Properties["ManagedPolicyArns"]; mp != nil {
		tb.Errorf("role %s has managed policies %v", roleID, mp)
	}
	out := map[string]map[string]any{}
	for _, id := range t.ofType("AWS::IAM::Policy") {
		p := t.res[id].Properties
		roles := p["Roles"].([]any)
		if len(roles) != 1 || ref(roles[0]) != roleID {
			continue
		}
		for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := s.(map[string]any)
			sid, _ := st["Sid"].(string)
			if sid == "" {
				j, _ := json.Marshal(st)
				sid = string(j)
			}
			out[sid] = st
		}
	}
	return out
}

func actions(st map[string]any) []string {
	var out []string
	switch a := st["Action"].(type) {
	case string:
		out = []string{a}
	case []any:
		for _, x := range a {
			out = append(out, x.(string))
		}
	}
	sort.Strings(out)
	return out
}

var logicalID = regexp.MustCompile(`"(?:Fn::GetAtt":\["|Ref":")([A-Za-z0-9]+)"`)

// touches maps each resource a function's role may act on (a logical id,
// or "*") to the actions it may take there.
func (t tmpl) touches(tb testing.TB, fnID string) map[string][]string {
	tb.Helper()
	roleID, _ := getAtt(t.res[fnID].Properties["Role"])
	out := map[string][]string{}
	for _, st := range t.statements(tb, roleID) {
		if st["Effect"] != "Allow" || (st["Condition"] != nil && st["Sid"] != "TableKey") {
			tb.Errorf("statement %v", st)
		}
		if st["Sid"] == "TableKey" {
			// The table's key only through DynamoDB.
			cond, _ := json.Marshal(st["Condition"])
			if !strings.HasPrefix(string(cond), `{"StringEquals":{"kms:ViaService":`) || !strings.Contains(string(cond), "dynamodb.") {
				tb.Errorf("table key statement condition %s", cond)
			}
		}
		res, _ := json.Marshal(st["Resource"])
		ids := []string{"*"}
		if string(res) != `"*"` {
			ids = nil
			for _, m := range logicalID.FindAllStringSubmatch(string(res), -1) {
				if m[1] != "AWS" { // AWS::Partition and friends
					ids = append(ids, m[1])
				}
			}
		}
		for _, id := range ids {
			out[id] = append(out[id], actions(st)...)
			sort.Strings(out[id])
			out[id] = slices.Compact(out[id])
		}
	}
	return out
}

// Least privilege: each function may write its own logs and use the table
// with exactly the store's item actions (the router: reads and the
// stream), on the table alone (it has no indexes); a worker may consume its
// own queue and send to the queues it names; the router may send to every
// worker's queue and its own dead-letter queue; only the media function
// may use the bucket. No Scan, no table administration, no wildcards but
// ListStreams, which has no resource.
func TestEachFunctionMayTouchOnlyWhatItUses(t *testing.T) {
	tableID, _ := prod.only(t, "AWS::DynamoDB::Table")
	bucketID, _ := prod.only(t, "AWS::S3::Bucket")
	if gsi := prod.res[tableID].Properties["GlobalSecondaryIndexes"]; gsi != nil {
		t.Fatalf("the table has indexes %v: grant them too", gsi)
	}
	queue := map[string]string{} // queue name → logical id
	for _, id := range prod.ofType("AWS::SQS::Queue") {
		queue[prod.res[id].Properties["QueueName"].(string)] = id
	}
	q := func(name string) string { return queue["sellerapi-prod-"+name] }
	consume := []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}
	send := []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"}
	sorted := func(a ...[]string) []string {
		var out []string
		for _, x := range a {
			out = append(out, x...)
		}
		sort.Strings(out)
		return slices.Compact(out)
	}
	keyID, _ := prod.only(t, "AWS::KMS::Key")
	for id, fn := range prod.functionsByID() {
		logID := ref(prod.res[id].Properties["LoggingConfig"].(map[string]any)["LogGroup"])
		want := map[string][]string{
			logID:   {"logs:CreateLogStream", "logs:PutLogEvents"},
			tableID: TableActions,
			// The table's key, only through DynamoDB (keys.go).
			keyID: TableKeyActions,
			// Active tracing: X-Ray takes no resource.
			"*": {"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		}
		if prod.def.isAPI(fn) || fn == prod.def.Admin || fn == "webhook-worker" {
			want[keyID] = sorted(TableKeyActions, SecretKeyActions)
		}
		if fn == prod.def.DeployHook {
			// The hook invokes the canaries' new versions and reports to
			// their deployment groups; it touches no data.
			app, _ := prod.only(t, "AWS::CodeDeploy::Application")
			// A group's ARN names its application.
			want = map[string][]string{logID: want[logID], "*": want["*"], app: {"codedeploy:PutLifecycleEventHookExecutionStatus"}}
			for _, g := range prod.ofType("AWS::CodeDeploy::DeploymentGroup") {
				want[g] = []string{"codedeploy:PutLifecycleEventHookExecutionStatus"}
			}
			for _, a := range prod.ofType("AWS::Lambda::Alias") {
				want[ref(prod.res[a].Properties["FunctionName"])] = []string{"lambda:InvokeFunction"}
			}
		}
		if prod.media(fn) {
			want[bucketID] = []string{"s3:GetObject", "s3:ListBucket", "s3:PutObject"}
		}
		if prod.def.delivers(fn) {
			// Deliveries to AWS destinations, as the delivery role only
			// (TestTheWebhookDeliveryRole).
			want[deliveryRoleID(t, prod)] = AssumeDeliveryActions
		}
		for _, w := range prod.def.Workers {
			if w.Name == fn {
				for _, own := range w.queues() {
					want[q(own.Name)] = consume
				}
				for _, to := range w.SendsTo {
					want[q(to)] = sorted(want[q(to)], send)
				}
			}
		}
		if fn == prod.def.StreamRouter {
			want[tableID] = sorted(RouterActions, []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"})
			want["*"] = sorted(want["*"], []string{"dynamodb:ListStreams"})
			for _, w := range prod.def.queues() {
				want[q(w.Name)] = send
			}
			want[q(fn+"-dlq")] = send
		}
		got := prod.touches(t, id)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s may:\n  %v\nwant:\n  %v", fn, got, want)
		}
	}
}

func TestTheTable(t *testing.T) {
	id, tbl := prod.only(t, "AWS::DynamoDB::Table")
	cdkAssert(t, "table", func() {
		prod.cdk.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), &map[string]any{
			"TableName":   "sellerapi-prod",
			"BillingMode": "PAY_PER_REQUEST",
			"KeySchema": []any{
				map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": []any{
				map[string]any{"AttributeName": "pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			},
			"StreamSpecification":              map[string]any{"StreamViewType": "NEW_AND_OLD_IMAGES"},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "ttl", "Enabled": true},
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        true,
		})
	})
	if tbl.DeletionPolicy != "Retain" || tbl.UpdateReplace != "Retain" {
		t.Errorf("prod table %s: deletion %q, replace %q; want Retain", id, tbl.DeletionPolicy, tbl.UpdateReplace)
	}
	_, devTable := dev.only(t, "AWS::DynamoDB::Table")
	if devTable.DeletionPolicy != "Delete" || devTable.Properties["DeletionProtectionEnabled"] != false {
		t.Errorf("dev table: deletion %q, protection %v; want Delete, false", devTable.DeletionPolicy, devTable.Properties["DeletionProtectionEnabled"])
	}
}

func TestTheMediaBucketIsPrivateEncryptedAndTLSOnly(t *testing.T) {
	id, b := prod.only(t, "AWS::S3::Bucket")
	cdkAssert(t, "bucket", func() {
		prod.cdk.HasResourceProperties(jsii.String("AWS::S3::Bucket"), &map[string]any{
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"BucketEncryption": map[string]any{
				"ServerSideEncryptionConfiguration": []any{
					map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
				},
			},
			"OwnershipControls": map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
		})
	})
	name, _ := json.Marshal(b.Properties["BucketName"])
	if !strings.Contains(string(name), `"sellerapi-prod-media-"`) || !strings.Contains(string(name), `AWS::AccountId`) || !strings.Contains(string(name), `AWS::Region`) {
		t.Errorf("bucket name %s, want sellerapi-prod-media-<account>-<region>", name)
	}
	if b.DeletionPolicy != "Retain" {
		t.Errorf("prod bucket deletion policy %q, want Retain", b.DeletionPolicy)
	}
	_, pol := prod.only(t, "AWS::S3::BucketPolicy")
	if ref(pol.Properties["Bucket"]) != id {
		t.Fatalf("bucket policy is not the bucket's")
	}
	sts := pol.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any)
	if len(sts) != 2 {
		t.Fatalf("bucket policy statements: %v, want the TLS rule and the edge's reads", sts)
	}
	st, _ := json.Marshal(sts[0])
	for _, want := range []string{`"Effect":"Deny"`, `"Action":"s3:*"`, `"aws:SecureTransport":"false"`, `"Principal":{"AWS":"*"}`} {
		if !strings.Contains(string(st), want) {
			t.Errorf("bucket policy %s lacks %s", st, want)
		}
	}
}

func TestLogGroupsKeepAMonth(t *testing.T) {
	ids := prod.ofType("AWS::Logs::LogGroup")
	if len(ids) != len(prod.def.Functions())+1 {
		t.Errorf("%d log groups for %d functions and the API's access log", len(ids), len(prod.def.Functions()))
	}
	for _, id := range ids {
		r := prod.res[id]
		if r.Properties["RetentionInDays"] != float64(30) || r.DeletionPolicy != "Retain" {
			t.Errorf("log group %v: retention %v, deletion %q", r.Properties["LogGroupName"], r.Properties["RetentionInDays"], r.DeletionPolicy)
		}
	}
}

// The alarms watch what actually fails: each function's failed and
// throttled invocations, the API's 5xx rate and p99 latency, error-level
// log lines (recovered panics included), the stream router's lag, each
// worker queue's oldest message and each dead-letter queue, and the
// table's throttles and system errors; every one notifies the topic.
func TestAlarmsWatchWhatFails(t *testing.T) {
	topicID, _ := prod.only(t, "AWS::SNS::Topic")
	fns := prod.functionsByID()
	got := map[string]bool{}
	for _, id := range prod.ofType("AWS::CloudWatch::Alarm") {
		p := prod.res[id].Properties
		name := p["AlarmName"].(string)
		got[name] = true
		if p["TreatMissingData"] != "notBreaching" || p["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
			t.Errorf("alarm %s: %v", name, p)
		}
		if acts, _ := p["AlarmActions"].([]any); len(acts) != 1 || ref(acts[0]) != topicID {
			t.Errorf("alarm %s actions %v, want the alarm topic", name, acts)
		}
		if p["Namespace"] == "AWS/Lambda" {
			dims := p["Dimensions"].([]any)
			fn := fns[ref(dims[0].(map[string]any)["Value"])]
			if !strings.HasPrefix(name, "sellerapi-prod-"+fn+"-") {
				t.Errorf("alarm %s watches %s", name, fn)
			}
		}
	}
	want := []string{"sellerapi-prod-api-5xx-rate", "sellerapi-prod-api-latency-p99", "sellerapi-prod-error-logs",
		"sellerapi-prod-table-throttles", "sellerapi-prod-table-system-errors", "sellerapi-prod-stream-router-iterator-age",
		"sellerapi-prod-stream-router-dlq-not-empty", "sellerapi-prod-refused", "sellerapi-prod-delivery-lag"}
	for _, fn := range prod.def.Functions() {
		want = append(want, "sellerapi-prod-"+fn+"-errors")
	}
	// Throttles: ten functions an alarm, every function in one.
	throttled := map[string]int{}
	for i := 1; i <= (len(prod.def.Functions())+9)/10; i++ {
		name := fmt.Sprintf("sellerapi-prod-throttles-%d", i)
		want = append(want, name)
		for _, id := range prod.ofType("AWS::CloudWatch::Alarm") {
			p := prod.res[id].Properties
			if p["AlarmName"] != name {
				continue
			}
			for _, m := range p["Metrics"].([]any) {
				ms, _ := m.(map[string]any)["MetricStat"].(map[string]any)
				if ms == nil {
					continue
				}
				metric := ms["Metric"].(map[string]any)
				if metric["MetricName"] != "Throttles" {
					t.Errorf("%s sums %v", name, metric["MetricName"])
				}
				fn := fns[ref(metric["Dimensions"].([]any)[0].(map[string]any)["Value"])]
				throttled[fn]++
			}
		}
	}
	for _, fn := range prod.def.Functions() {
		if throttled[fn] != 1 {
			t.Errorf("%s's throttles are in %d alarms, want 1", fn, throttled[fn])
		}
	}
	for _, w := range prod.def.queues() {
		want = append(want, "sellerapi-prod-"+w.Name+"-oldest", "sellerapi-prod-"+w.Name+"-dlq-not-empty")
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("no alarm %s", w)
		}
		delete(got, w)
	}
	for extra := range got {
		t.Errorf("alarm %s is not one this test knows: add it to the list", extra)
	}
	cdkAssert(t, "5xx rate", func() {
		prod.cdk.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
			"AlarmName": "sellerapi-prod-api-5xx-rate", "Threshold": API5xxPercent,
			"Metrics": assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Expression": "IF(requests > 0, 100 * errors / requests, 0)"})}),
		})
	})
	cdkAssert(t, "error logs", func() {
		prod.cdk.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), &map[string]any{
			"AlarmName": "sellerapi-prod-error-logs", "Namespace": "sellerapi/prod", "MetricName": ErrorLogsMetric, "Statistic": "Sum", "Threshold": 1,
		})
	})
	// Every function's log group counts its error-level lines.
	filters := 0
	for _, id := range prod.ofType("AWS::Logs::MetricFilter") {
		p := prod.res[id].Properties
		mt := p["MetricTransformations"].([]any)[0].(map[string]any)
		if p["FilterPattern"] != `{ $.level = "ERROR" }` || mt["MetricName"] != ErrorLogsMetric || mt["MetricNamespace"] != "sellerapi/prod" {
			t.Errorf("metric filter %v", p)
		}
		filters++
	}
	if filters != len(prod.def.Functions()) {
		t.Errorf("%d error-log metric filters for %d functions", filters, len(prod.def.Functions()))
	}
	_, dash := prod.only(t, "AWS::CloudWatch::Dashboard")
	if dash.Properties["DashboardName"] != "sellerapi-prod" {
		t.Errorf("dashboard %v", dash.Properties["DashboardName"])
	}
}

// With a custom domain the functions are told https://<domain>/v1 and the
// execute-api endpoint is off, so there is one address.
func TestACustomDomainIsTheBaseURL(t *testing.T) {
	for id, fn := range dev.functionsByID() {
		vars := dev.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[config.EnvBaseURL] != "https://api.example.com/v1" {
			t.Errorf("%s: base URL %v", fn, vars[config.EnvBaseURL])
		}
	}
	_, api := dev.only(t, "AWS::ApiGatewayV2::Api")
	if api.Properties["DisableExecuteApiEndpoint"] != true {
		t.Errorf("execute-api endpoint still on")
	}
	_, dn := dev.only(t, "AWS::ApiGatewayV2::DomainName")
	if dn.Properties["DomainName"] != "api.example.com" {
		t.Errorf("domain %v", dn.Properties)
	}
	dev.only(t, "AWS::ApiGatewayV2::ApiMapping")
	if _, ok := dev.out["DomainTarget"]; !ok {
		t.Error("no DomainTarget output")
	}
	for _, id := range dev.ofType("AWS::Logs::LogGroup") {
		if dev.res[id].DeletionPolicy != "Delete" {
			t.Errorf("dev log group retained")
		}
	}
}

// Every queue of the stage has its consumer, or is a dead-letter queue
// that some queue or the stream mapping fails into, with an alarm on it.
func TestEveryQueueHasAConsumerOrIsADeadLetterQueue(t *testing.T) {
	consumed, deadLetters := map[string]bool{}, map[string]bool{}
	for _, id := range prod.ofType("AWS::Lambda::EventSourceMapping") {
		p := prod.res[id].Properties
		src, _ := getAtt(p["EventSourceArn"])
		consumed[src] = true
		if dc, ok := p["DestinationConfig"].(map[string]any); ok {
			d, _ := getAtt(dc["OnFailure"].(map[string]any)["Destination"])
			deadLetters[d] = true
		}
	}
	for _, id := range prod.ofType("AWS::SQS::Queue") {
		if rp, ok := prod.res[id].Properties["RedrivePolicy"].(map[string]any); ok {
			d, _ := getAtt(rp["deadLetterTargetArn"])
			deadLetters[d] = true
		}
	}
	alarmed := map[string]bool{}
	for _, id := range prod.ofType("AWS::CloudWatch::Alarm") {
		p := prod.res[id].Properties
		if p["MetricName"] == "ApproximateNumberOfMessagesVisible" {
			dims := p["Dimensions"].([]any)
			q, _ := getAtt(dims[0].(map[string]any)["Value"])
			alarmed[q] = true
		}
	}
	for _, id := range prod.ofType("AWS::SQS::Queue") {
		name := prod.res[id].Properties["QueueName"]
		switch {
		case consumed[id] && deadLetters[id]:
			t.Errorf("queue %v is both consumed and a dead-letter queue", name)
		case !consumed[id] && !deadLetters[id]:
			t.Errorf("queue %v has no consumer", name)
		case deadLetters[id] && !alarmed[id]:
			t.Errorf("dead-letter queue %v has no alarm", name)
		}
	}
	if len(prod.ofType("AWS::SQS::Queue")) != 2*len(prod.def.queues())+1 {
		t.Errorf("%d queues for %d worker queues", len(prod.ofType("AWS::SQS::Queue")), len(prod.def.queues()))
	}
}

// The extension point: a stream router and workers, one line each.
func TestWorkersGetAQueueADeadLetterQueueAndAMapping(t *testing.T) {
	queues := map[string]resource{}
	for _, id := range async.ofType("AWS::SQS::Queue") {
		queues[id] = async.res[id]
	}
	byName := map[string]string{}
	for id, q := range queues {
		byName[q.Properties["QueueName"].(string)] = id
		if q.Properties["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %v is not encrypted", q.Properties["QueueName"])
		}
	}
	wantQueues := []string{"sellerapi-async-bulk-worker", "sellerapi-async-bulk-worker-dlq", "sellerapi-async-stream-router-dlq", "sellerapi-async-webhook-worker", "sellerapi-async-webhook-worker-dlq"}
	var gotQueues []string
	for n := range byName {
		gotQueues = append(gotQueues, n)
	}
	sort.Strings(gotQueues)
	if !reflect.DeepEqual(gotQueues, wantQueues) {
		t.Fatalf("queues %v, want %v", gotQueues, wantQueues)
	}
	for _, w := range []struct {
		name            string
		receives, batch float64
	}{{"webhook-worker", 5, 10}, {"bulk-worker", 3, 1}} {
		q := queues[byName["sellerapi-async-"+w.name]].Properties
		redrive := q["RedrivePolicy"].(map[string]any)
		if dlq, _ := getAtt(redrive["deadLetterTargetArn"]); dlq != byName["sellerapi-async-"+w.name+"-dlq"] || redrive["maxReceiveCount"] != w.receives {
			t.Errorf("%s: redrive %v", w.name, redrive)
		}
		if q["VisibilityTimeout"] != float64(360) {
			t.Errorf("%s: visibility %v, want 6 x 60s", w.name, q["VisibilityTimeout"])
		}
		fnID := async.function(t, w.name)
		found := false
		for _, id := range async.ofType("AWS::Lambda::EventSourceMapping") {
			p := async.res[id].Properties
			if ref(p["FunctionName"]) != fnID {
				continue
			}
			found = true
			if src, _ := getAtt(p["EventSourceArn"]); src != byName["sellerapi-async-"+w.name] || p["BatchSize"] != w.batch ||
				!reflect.DeepEqual(p["FunctionResponseTypes"], []any{"ReportBatchItemFailures"}) {
				t.Errorf("%s: mapping %v", w.name, p)
			}
		}
		if !found {
			t.Errorf("%s: no event source mapping", w.name)
		}
	}

	tableID, _ := async.only(t, "AWS::DynamoDB::Table")
	routerID := async.function(t, "stream-router")
	var mapping map[string]any
	for _, id := range async.ofType("AWS::Lambda::EventSourceMapping") {
		if p := async.res[id].Properties; ref(p["FunctionName"]) == routerID {
			mapping = p
		}
	}
	if src, attr := getAtt(mapping["EventSourceArn"]); src != tableID || attr != "StreamArn" {
		t.Fatalf("router mapping source %v", mapping["EventSourceArn"])
	}
	failed, _ := getAtt(mapping["DestinationConfig"].(map[string]any)["OnFailure"].(map[string]any)["Destination"])
	if mapping["ParallelizationFactor"] != float64(StreamParallelization) || StreamParallelization != 10 {
		t.Errorf("router mapping reads a shard in %v lanes, want %d (the most Lambda allows)", mapping["ParallelizationFactor"], 10)
	}
	if mapping["BisectBatchOnFunctionError"] != true || mapping["MaximumRetryAttempts"] != float64(5) ||
		!reflect.DeepEqual(mapping["FunctionResponseTypes"], []any{"ReportBatchItemFailures"}) || failed != byName["sellerapi-async-stream-router-dlq"] {
		t.Errorf("router mapping %v", mapping)
	}
	vars := async.res[routerID].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	if ref(vars["SELLERAPI_WEBHOOK_QUEUE_URL"]) != byName["sellerapi-async-webhook-worker"] || ref(vars["SELLERAPI_BULK_QUEUE_URL"]) != byName["sellerapi-async-bulk-worker"] {
		t.Errorf("router environment %v", vars)
	}

	// The router reads the stream and items and sends to the queues; it
	// writes no items, and deletes only the markers of what it routed.
	roleID, _ := getAtt(async.res[routerID].Properties["Role"])
	var all []string
	for _, st := range async.statements(t, roleID) {
		all = append(all, actions(st)...)
	}
	for _, a := range all {
		if slices.Contains(TableActions, a) && !slices.Contains(RouterActions, a) {
			t.Errorf("stream router may %s", a)
		}
	}
	for _, a := range []string{"dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:Query", "sqs:SendMessage"} {
		if !slices.Contains(all, a) {
			t.Errorf("stream router may not %s: %v", a, all)
		}
	}

	// A worker may send to the queues it names; every worker is told every
	// queue's URL.
	for _, w := range []struct {
		name  string
		sends bool
	}{{"bulk-worker", true}, {"webhook-worker", false}} {
		id := async.function(t, w.name)
		roleID, _ := getAtt(async.res[id].Properties["Role"])
		var sendsTo []string
		for _, st := range async.statements(t, roleID) {
			if slices.Contains(actions(st), "sqs:SendMessage") {
				q, _ := getAtt(st["Resource"])
				sendsTo = append(sendsTo, q)
			}
		}
		vars := async.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		if ref(vars["SELLERAPI_WEBHOOK_QUEUE_URL"]) != byName["sellerapi-async-webhook-worker"] || ref(vars["SELLERAPI_BULK_QUEUE_URL"]) != byName["sellerapi-async-bulk-worker"] {
			t.Errorf("%s: not told every queue: %v", w.name, vars)
		}
		if w.sends && !reflect.DeepEqual(sendsTo, []string{byName["sellerapi-async-webhook-worker"]}) {
			t.Errorf("%s: sends to %v, want the webhook queue", w.name, sendsTo)
		}
		if !w.sends && len(sendsTo) > 0 {
			t.Errorf("%s: sends to %v", w.name, sendsTo)
		}
	}

	dlqAlarms := 0
	for _, id := range async.ofType("AWS::CloudWatch::Alarm") {
		if async.res[id].Properties["MetricName"] == "ApproximateNumberOfMessagesVisible" {
			dlqAlarms++
		}
	}
	if dlqAlarms != 3 {
		t.Errorf("%d dead-letter alarms, want 3", dlqAlarms)
	}
}

// The definition deploys every function in functions/ but the local
// binary, and only groups the local server mounts. A group mounted locally
// whose function is not written yet is reported, not deployed.
func TestTheDefinitionCoversTheRepository(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join("..", "..", "functions"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "local" {
			dirs = append(dirs, e.Name())
		}
	}
	fns := Default("prod").Functions()
	sort.Strings(fns)
	if !reflect.DeepEqual(dirs, fns) {
		t.Errorf("functions/ has %v, the stack deploys %v: add the missing ones to Default", dirs, fns)
	}
	deployed := map[string]bool{}
	for _, g := range Default("prod").groups() {
		deployed[g.Name] = true
	}
	for _, g := range app.AllGroups() {
		if !deployed[g.Name] {
			t.Logf("group %s is served locally but has no function yet: not deployed", g.Name)
		}
		delete(deployed, g.Name)
	}
	for name := range deployed {
		t.Errorf("the stack deploys group %s, which the local server does not mount", name)
	}
}

// Only functions marked Media get the bucket: its objects under media/ to
// read and write, listing to tell a missing object, and its name.
func TestOnlyMediaFunctionsMayUseTheBucket(t *testing.T) {
	bucketID, _ := prod.only(t, "AWS::S3::Bucket")
	for id, fn := range prod.functionsByID() {
		roleID, _ := getAtt(prod.res[id].Properties["Role"])
		sts := prod.statements(t, roleID)
		vars := prod.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		if fn != "media" {
			if _, ok := vars[config.EnvMediaBucket]; ok {
				t.Errorf("%s is told the media bucket", fn)
			}
			continue
		}
		if ref(vars[config.EnvMediaBucket]) != bucketID {
			t.Errorf("media: %s = %v", config.EnvMediaBucket, vars[config.EnvMediaBucket])
		}
		objects, list := sts["MediaObjects"], sts["MediaMissingIs404"]
		res, _ := json.Marshal(objects["Resource"])
		if !reflect.DeepEqual(actions(objects), []string{"s3:GetObject", "s3:PutObject"}) || !strings.Contains(string(res), bucketID) || !strings.Contains(string(res), `"/media/*"`) {
			t.Errorf("media: object statement %v", objects)
		}
		if b, _ := getAtt(list["Resource"]); b != bucketID || !reflect.DeepEqual(actions(list), []string{"s3:ListBucket"}) {
			t.Errorf("media: list statement %v", list)
		}
		if len(sts) != 7 {
			t.Errorf("media: %d statements, want logs, tracing, table, table key, secret key, objects, list", len(sts))
		}
	}
	prod.function(t, "media")
}

func TestOutputs(t *testing.T) {
	for _, o := range []string{"BaseUrl", "TableName", "MediaBucketName", "AdminFunctionName", "AlarmTopicArn", "WebhookDeliveryRoleArn"} {
		if _, ok := prod.out[o]; !ok {
			t.Errorf("no output %s", o)
		}
	}
}

// Lambda's recursive-loop guard would stop a worker that re-sends to its
// own queue after about 16 hops and drop the message (a webhook retried
// for hours, a paced bulk job): those workers allow the loop, bounded by
// their own attempt caps; every other function keeps the guard.
func TestSelfSendingWorkersMayLoopAndNoOtherFunction(t *testing.T) {
	for id, fn := range prod.functionsByID() {
		want := "Terminate"
		for _, w := range prod.def.Workers {
			if w.Name == fn && slices.Contains(w.SendsTo, fn) {
				want = "Allow"
			}
		}
		if got := prod.res[id].Properties["RecursiveLoop"]; got != want {
			t.Errorf("%s: RecursiveLoop %v, want %s", fn, got, want)
		}
	}
	for _, fn := range []string{"webhook-worker", "bulk-worker", "sync-worker"} {
		if prod.res[prod.function(t, fn)].Properties["RecursiveLoop"] != "Allow" {
			t.Errorf("%s re-sends to its own queue and must be allowed to", fn)
		}
	}
}

// Every queue's mapping caps its concurrency, so background work cannot
// take the API's concurrency; the expirer never overlaps itself.
func TestConcurrencyLimits(t *testing.T) {
	fns := prod.targets()
	mapped := 0
	for _, id := range prod.ofType("AWS::Lambda::EventSourceMapping") {
		p := prod.res[id].Properties
		if _, sqs := p["ScalingConfig"]; !sqs && p["StartingPosition"] != nil {
			continue // the stream mapping: StreamParallelization invocations per shard
		}
		fn := fns[invoked(p["FunctionName"])]
		sc, _ := p["ScalingConfig"].(map[string]any)
		want := float64(5)
		if fn == "webhook-worker" {
			want = 20
		}
		if sc["MaximumConcurrency"] != want {
			t.Errorf("%s: scaling %v, want maximum concurrency %v", fn, sc, want)
		}
		mapped++
	}
	if queues := len(prod.def.queues()); mapped != queues {
		t.Errorf("%d SQS mappings with a maximum concurrency for %d worker queues", mapped, queues)
	}
	for id, fn := range prod.functionsByID() {
		rc, ok := prod.res[id].Properties["ReservedConcurrentExecutions"]
		if fn == "reservation-expirer" {
			if rc != float64(1) {
				t.Errorf("the expirer's reserved concurrency is %v, want 1", rc)
			}
		} else if ok {
			t.Errorf("%s reserves concurrency %v", fn, rc)
		}
	}
	bad := Default("prod")
	bad.Workers[0].MaxConcurrency = 1
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), "2..1000") {
		t.Errorf("a maximum concurrency of 1 was accepted (%v)", err)
	}
}

// The stream router is invoked only for inserts of the items that start
// work, the same prefixes the router applies to itself (app.Routed).
func TestTheStreamFilterPassesOnlyRoutedInserts(t *testing.T) {
	var filters []any
	for _, id := range prod.ofType("AWS::Lambda::EventSourceMapping") {
		if p := prod.res[id].Properties; p["StartingPosition"] == "TRIM_HORIZON" {
			filters = p["FilterCriteria"].(map[string]any)["Filters"].([]any)
		}
	}
	if len(filters) != 1 {
		t.Fatalf("stream filters %v, want one", filters)
	}
	var pattern struct {
		EventName []string `json:"eventName"`
		DynamoDB  struct {
			Keys struct {
				SK struct {
					S []map[string]string `json:"S"`
				} `json:"sk"`
			} `json:"Keys"`
		} `json:"dynamodb"`
	}
	if err := json.Unmarshal([]byte(filters[0].(map[string]any)["Pattern"].(string)), &pattern); err != nil {
		t.Fatal(err)
	}
	var prefixes []string
	for _, p := range pattern.DynamoDB.Keys.SK.S {
		prefixes = append(prefixes, p["prefix"])
	}
	if !reflect.DeepEqual(pattern.EventName, []string{"INSERT"}) || !reflect.DeepEqual(prefixes, app.Routed()) {
		t.Errorf("filter passes %v of %v, want INSERT of %v", pattern.EventName, prefixes, app.Routed())
	}
}

// The stage throttles every route, and the public ones (no credential, so
// no vendor's window) tighter; it writes a JSON access log.
func TestTheStageIsThrottledAndLogged(t *testing.T) {
	_, stage := prod.only(t, "AWS::ApiGatewayV2::Stage")
	p := stage.Properties
	def := p["DefaultRouteSettings"].(map[string]any)
	if def["ThrottlingRateLimit"] != prod.def.Throttle.Rate || def["ThrottlingBurstLimit"] != float64(prod.def.Throttle.Burst) {
		t.Errorf("default route settings %v", def)
	}
	settings := p["RouteSettings"].(map[string]any)
	public := 0
	for _, r := range prod.routes() {
		s, ok := settings[r.Key].(map[string]any)
		if r.Public != ok {
			t.Errorf("route %s: public %v, throttled apart %v", r.Key, r.Public, ok)
			continue
		}
		if ok {
			public++
			if s["ThrottlingRateLimit"] != prod.def.PublicThrottle.Rate || s["ThrottlingBurstLimit"] != float64(prod.def.PublicThrottle.Burst) {
				t.Errorf("route %s: %v", r.Key, s)
			}
		}
	}
	for _, key := range []string{"POST /v1/store-pairings/exchange", "GET /v1/openapi.json", "$default"} {
		if _, ok := settings[key]; !ok {
			t.Errorf("public route %s is not throttled apart", key)
		}
	}
	if public >= len(prod.routes())/2 {
		t.Errorf("%d of %d routes counted public", public, len(prod.routes()))
	}
	logs := p["AccessLogSettings"].(map[string]any)
	b, _ := json.Marshal(logs["Format"])
	// API Gateway's id joins the line to the function's (apigw_id); Lambda's
	// would only repeat it (issue 26).
	if strings.Contains(string(b), "$context.integration.requestId") {
		t.Errorf("access log format %s names Lambda's request id", b)
	}
	for _, field := range []string{"$context.requestId", "$context.routeKey", "$context.status", "$context.responseLatency", "$context.identity.sourceIp", "$context.integration.error"} {
		if !strings.Contains(string(b), field) {
			t.Errorf("access log format %s lacks %s", b, field)
		}
	}
	if id, _ := getAtt(logs["DestinationArn"]); prod.res[id].Type != "AWS::Logs::LogGroup" {
		t.Errorf("access log destination %v", logs["DestinationArn"])
	}
}

// Every function logs JSON that Lambda keeps structured and filters by
// level, and is traced.
func TestFunctionsLogJSONAndAreTraced(t *testing.T) {
	for id, fn := range prod.functionsByID() {
		p := prod.res[id].Properties
		lc := p["LoggingConfig"].(map[string]any)
		// System level WARN: no start and report line per invocation.
		if lc["LogFormat"] != "JSON" || lc["ApplicationLogLevel"] != "INFO" || lc["SystemLogLevel"] != "WARN" {
			t.Errorf("%s logging %v", fn, lc)
		}
		if tc, _ := p["TracingConfig"].(map[string]any); tc["Mode"] != "Active" {
			t.Errorf("%s tracing %v", fn, p["TracingConfig"])
		}
	}
}

// routes is the stage's route table, as New derives it.
func (t tmpl) routes() []Route {
	rs, err := Routes(t.def.groups(), t.def.CatchAll)
	if err != nil {
		panic(err)
	}
	return rs
}

// Images are served from the edge: CloudFront reads the private bucket
// through origin access control (only its own distribution, only
// GetObject), viewers get HTTPS, and the media function is told the
// distribution's address as the media base URL.
func TestMediaIsServedFromTheEdge(t *testing.T) {
	bucketID, _ := prod.only(t, "AWS::S3::Bucket")
	distID, cfg := prod.distribution(t, "media")
	origins := cfg["Origins"].([]any)
	if len(origins) != 1 {
		t.Fatalf("origins %v", origins)
	}
	o := origins[0].(map[string]any)
	if dn, _ := getAtt(o["DomainName"]); dn != bucketID || o["OriginAccessControlId"] == nil {
		t.Errorf("origin %v: want the media bucket through origin access control", o)
	}
	_, oac := prod.only(t, "AWS::CloudFront::OriginAccessControl")
	if c := oac.Properties["OriginAccessControlConfig"].(map[string]any); c["OriginAccessControlOriginType"] != "s3" || c["SigningBehavior"] != "always" {
		t.Errorf("origin access control %v", c)
	}
	beh := cfg["DefaultCacheBehavior"].(map[string]any)
	if beh["ViewerProtocolPolicy"] != "redirect-to-https" || !reflect.DeepEqual(beh["AllowedMethods"], []any{"GET", "HEAD"}) {
		t.Errorf("default behavior %v", beh)
	}
	_, pol := prod.only(t, "AWS::S3::BucketPolicy")
	b, _ := json.Marshal(pol.Properties["PolicyDocument"].(map[string]any)["Statement"].([]any)[1])
	for _, want := range []string{`"Effect":"Allow"`, `"Action":"s3:GetObject"`, `"Service":"cloudfront.amazonaws.com"`, `"AWS:SourceArn"`, `{"Ref":"` + distID + `"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("edge read statement %s lacks %s", b, want)
		}
	}
	vars := prod.res[prod.function(t, "media")].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	u, _ := json.Marshal(vars[config.EnvMediaBaseURL])
	if want := `{"Fn::Join":["",["https://",{"Fn::GetAtt":["` + distID + `","DomainName"]}]]}`; string(u) != want {
		t.Errorf("media base URL %s, want %s", u, want)
	}
	if _, ok := prod.out["MediaBaseUrl"]; !ok {
		t.Error("no MediaBaseUrl output")
	}
	for _, stage := range []string{"local", "localstack"} {
		if Default(stage).MediaEdge {
			t.Errorf("stage %s has a CloudFront edge, which neither LocalStack nor the deployed shape on one machine runs", stage)
		}
	}
}

// The prod stage deploys by canary: every triggered function's code is a
// published version behind the live alias, every trigger invokes the
// alias, and CodeDeploy shifts 10% for 5 minutes and rolls back on the
// function's errors alarm (and, for the API's functions, on the API's
// 5xx-rate and latency alarms). Other stages invoke the functions.
func TestProdDeploysByCanaryThatRollsBackOnTheAlarms(t *testing.T) {
	fns := prod.functionsByID()
	alarmIDs := map[string]string{} // alarm name → logical id
	for _, id := range prod.ofType("AWS::CloudWatch::Alarm") {
		alarmIDs[prod.res[id].Properties["AlarmName"].(string)] = id
	}
	aliases := map[string]string{} // function → alias id
	for _, id := range prod.ofType("AWS::Lambda::Alias") {
		p := prod.res[id].Properties
		fn := fns[ref(p["FunctionName"])]
		aliases[fn] = id
		ver := prod.res[ref(p["FunctionVersion"])]
		if ver.Type == "" {
			ver = prod.res[func() string { v, _ := getAtt(p["FunctionVersion"]); return v }()]
		}
		if p["Name"] != LiveAlias || ver.Type != "AWS::Lambda::Version" {
			t.Errorf("%s: alias %v", fn, p)
		}
	}
	for _, fn := range prod.def.Functions() {
		if _, ok := aliases[fn]; ok == (fn == prod.def.Admin || fn == prod.def.DeployHook) {
			t.Errorf("%s: has a live alias %v", fn, ok)
		}
	}
	groups := 0
	for _, id := range prod.ofType("AWS::CodeDeploy::DeploymentGroup") {
		p := prod.res[id].Properties
		name := strings.TrimPrefix(p["DeploymentGroupName"].(string), "sellerapi-prod-")
		groups++
		if p["DeploymentConfigName"] != "CodeDeployDefault.LambdaCanary10Percent5Minutes" {
			t.Errorf("%s: deployment config %v", name, p["DeploymentConfigName"])
		}
		rb := p["AutoRollbackConfiguration"].(map[string]any)
		if rb["Enabled"] != true || !slices.Contains(toStrings(rb["Events"]), "DEPLOYMENT_STOP_ON_ALARM") {
			t.Errorf("%s: rollback %v", name, rb)
		}
		var watched []string
		for _, a := range p["AlarmConfiguration"].(map[string]any)["Alarms"].([]any) {
			watched = append(watched, ref(a.(map[string]any)["Name"]))
		}
		want := []string{alarmIDs["sellerapi-prod-"+name+"-errors"]}
		if prod.def.isAPI(name) {
			want = append(want, alarmIDs["sellerapi-prod-api-5xx-rate"], alarmIDs["sellerapi-prod-api-latency-p99"])
		}
		sort.Strings(watched)
		sort.Strings(want)
		if !reflect.DeepEqual(watched, want) {
			t.Errorf("%s: watches %v, want %v", name, watched, want)
		}
	}
	if groups != len(aliases) || len(prod.ofType("AWS::CodeDeploy::Application")) != 1 {
		t.Errorf("%d deployment groups for %d aliases, %d applications", groups, len(aliases), len(prod.ofType("AWS::CodeDeploy::Application")))
	}
	// What the triggers invoke: the alias in prod, the function elsewhere.
	for _, id := range prod.ofType("AWS::ApiGatewayV2::Integration") {
		if target := invoked(prod.res[id].Properties["IntegrationUri"]); prod.res[target].Type != "AWS::Lambda::Alias" {
			t.Errorf("integration %s invokes %s, want the live alias", id, prod.res[target].Type)
		}
	}
	for _, id := range prod.ofType("AWS::Lambda::EventSourceMapping") {
		if target := invoked(prod.res[id].Properties["FunctionName"]); prod.res[target].Type != "AWS::Lambda::Alias" {
			t.Errorf("mapping %s invokes %s, want the live alias", id, prod.res[target].Type)
		}
	}
	if n := len(dev.ofType("AWS::Lambda::Alias")); n != 0 || dev.def.Canary {
		t.Errorf("dev has %d aliases", n)
	}
	// CloudFormation takes at most 500 resources a stack; this keeps ten
	// for a queue or two. Prod has 412 (November 2026): a route per
	// operation and $default, no ANY route per path (wrong methods go
	// through $default, TestWrongMethodsGoThroughTheCatchAll). A new
	// operation is one resource, its route. A new operation group is 11
	// (function, version, live alias, role, policy, log group, error
	// metric filter, errors alarm, deployment group, integration, invoke
	// permission) and one per operation: the 78 left below 490 hold five
	// groups of five operations, or 78 operations in the groups there are.
	if n := len(prod.res); n > 490 {
		t.Errorf("prod has %d resources: CloudFormation allows 500 a stack", n)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// The media function gets the memory its measured re-encode calls for;
// every other function 512 MB.
func TestFunctionMemory(t *testing.T) {
	for id, fn := range prod.functionsByID() {
		want := float64(512)
		if fn == "media" {
			want = 1024
		}
		if got := prod.res[id].Properties["MemorySize"]; got != want {
			t.Errorf("%s: memory %v, want %v", fn, got, want)
		}
	}
}
