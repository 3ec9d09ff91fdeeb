package stack

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/deployhook"
	"github.com/moku/sellerapi/shared/httpapi"
)

// The stage's key is customer-managed and rotated, encrypts the table, and
// is told (with the right to make and open data keys) to exactly the
// functions that open envelope-encrypted secrets: the API's, the admin
// and the webhook worker. Its accessor is what they are told.
func TestTheStageKey(t *testing.T) {
	keyID, key := prod.only(t, "AWS::KMS::Key")
	if key.Properties["EnableKeyRotation"] != true || key.DeletionPolicy != "Retain" {
		t.Errorf("key: rotation %v, deletion %q", key.Properties["EnableKeyRotation"], key.DeletionPolicy)
	}
	_, alias := prod.only(t, "AWS::KMS::Alias")
	if alias.Properties["AliasName"] != "alias/sellerapi-prod" {
		t.Errorf("alias %v", alias.Properties["AliasName"])
	}
	_, tbl := prod.only(t, "AWS::DynamoDB::Table")
	sse := tbl.Properties["SSESpecification"].(map[string]any)
	if id, _ := getAtt(sse["KMSMasterKeyId"]); sse["SSEEnabled"] != true || sse["SSEType"] != "KMS" || id != keyID {
		t.Errorf("table encryption %v, want the stage key", sse)
	}
	if got, _ := json.Marshal(prodStack.KeyARN()); !strings.Contains(string(got), "Token") {
		t.Errorf("KeyARN() = %s, want the key's ARN token", got)
	}
	for id, fn := range prod.functionsByID() {
		vars := prod.res[id].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, told := vars[EnvKMSKeyARN]
		want := prod.def.isAPI(fn) || fn == prod.def.Admin || fn == "webhook-worker"
		if told != want {
			t.Errorf("%s: told the key %v, want %v", fn, told, want)
			continue
		}
		if id, _ := getAtt(v); told && id != keyID {
			t.Errorf("%s: %s = %v", fn, EnvKMSKeyARN, v)
		}
		roleID, _ := getAtt(prod.res[id].Properties["Role"])
		sts := prod.statements(t, roleID)
		if st, ok := sts["SecretKey"]; ok != want || (ok && !reflect.DeepEqual(actions(st), SecretKeyActions)) {
			t.Errorf("%s: secret key statement %v", fn, st)
		}
	}
	// The queues and the bucket keep their service-managed encryption
	// (docs/decisions.md, "Keys"): what they hold is ids and public images.
	for _, id := range prod.ofType("AWS::SQS::Queue") {
		if prod.res[id].Properties["SqsManagedSseEnabled"] != true {
			t.Errorf("queue %v: %v", prod.res[id].Properties["QueueName"], prod.res[id].Properties)
		}
	}
}

// The table's on-demand throughput has a ceiling: the stage throttle's
// rate times the most one request costs.
func TestTheTableThroughputHasACeiling(t *testing.T) {
	_, tbl := prod.only(t, "AWS::DynamoDB::Table")
	reads, writes := prod.def.TableMaxThroughput()
	if reads != 500*30 || writes != 500*10 {
		t.Errorf("ceiling %d/%d, want 15000/5000 for 500 req/s", reads, writes)
	}
	want := map[string]any{"MaxReadRequestUnits": float64(reads), "MaxWriteRequestUnits": float64(writes)}
	if got := tbl.Properties["OnDemandThroughput"]; !reflect.DeepEqual(got, want) {
		t.Errorf("on-demand throughput %v, want %v", got, want)
	}
}

// A daily backup of the table and the media bucket, kept 35 days and
// copied to a vault of the same name in the second region (a stack of its
// own there, deployed first); the bucket is versioned, as AWS Backup needs.
func TestBackupsAreCopiedToASecondRegion(t *testing.T) {
	_, plan := prodOps.only(t, "AWS::Backup::BackupPlan")
	rules := plan.Properties["BackupPlan"].(map[string]any)["BackupPlanRule"].([]any)
	if len(rules) != 1 {
		t.Fatalf("rules %v", rules)
	}
	rule := rules[0].(map[string]any)
	if rule["ScheduleExpression"] != "cron(0 3 * * ? *)" || rule["Lifecycle"].(map[string]any)["DeleteAfterDays"] != float64(35) {
		t.Errorf("rule %v: want daily, 35 days", rule)
	}
	copies := rule["CopyActions"].([]any)
	if len(copies) != 1 {
		t.Fatalf("copy actions %v", copies)
	}
	cp := copies[0].(map[string]any)
	arn, _ := json.Marshal(cp["DestinationBackupVaultArn"])
	if !strings.Contains(string(arn), ":backup:us-west-2:") || !strings.Contains(string(arn), ":backup-vault:sellerapi-prod-backups") ||
		cp["Lifecycle"].(map[string]any)["DeleteAfterDays"] != float64(35) {
		t.Errorf("copy %s %v, want the us-west-2 vault, 35 days", arn, cp["Lifecycle"])
	}
	vaultID, vault := prodOps.only(t, "AWS::Backup::BackupVault")
	if v, _ := getAtt(rule["TargetBackupVault"]); v != vaultID || vault.Properties["BackupVaultName"] != "sellerapi-prod-backups" || vault.DeletionPolicy != "Retain" {
		t.Errorf("target vault %v %v", rule["TargetBackupVault"], vault)
	}
	_, copyVault := prodCopy.only(t, "AWS::Backup::BackupVault")
	if copyVault.Properties["BackupVaultName"] != "sellerapi-prod-backups" || *prodStack.BackupCopyStack.Region() != "us-west-2" ||
		*prodStack.BackupCopyStack.StackName() != "sellerapi-prod-backup-copy" {
		t.Errorf("copy vault %v in %s", copyVault.Properties, *prodStack.BackupCopyStack.Region())
	}
	after := false
	for _, dep := range *prodStack.OpsStack.Dependencies() {
		after = after || *dep.StackName() == "sellerapi-prod-backup-copy"
	}
	if !after {
		t.Error("the ops stack does not deploy after the copy's")
	}
	_, sel := prodOps.only(t, "AWS::Backup::BackupSelection")
	res, _ := json.Marshal(sel.Properties["BackupSelection"].(map[string]any)["Resources"])
	tableID, _ := prod.only(t, "AWS::DynamoDB::Table")
	bucketID, _ := prod.only(t, "AWS::S3::Bucket")
	if !strings.Contains(string(res), tableID) || !strings.Contains(string(res), bucketID) {
		t.Errorf("selection %s, want the table and the bucket", res)
	}
	_, bucket := prod.only(t, "AWS::S3::Bucket")
	if v := bucket.Properties["VersioningConfiguration"].(map[string]any); v["Status"] != "Enabled" {
		t.Errorf("bucket versioning %v", v)
	}
	if len(devOps.ofType("AWS::Backup::BackupPlan")) != 0 || devStack.BackupCopyStack != nil {
		t.Error("dev backs up")
	}
	bad := Default("prod")
	bad.Backup.CopyRegion = ""
	if err := bad.check(); err == nil {
		t.Error("a backup without a copy region was accepted")
	}
}

// A monthly budget and a cost anomaly monitor on the stage's tags, each
// notifying the alarm topic, which they may publish to.
func TestCostGuardsNotifyTheAlarmTopic(t *testing.T) {
	for _, c := range []struct {
		ops    tmpl
		stage  string
		amount float64
	}{{prodOps, "prod", 500}, {devOps, "dev", 50}} {
		topic := `{"Fn::ImportValue":"sellerapi-` + c.stage + `:ExportsOutputRefAlarms`
		_, budget := c.ops.only(t, "AWS::Budgets::Budget")
		b := budget.Properties["Budget"].(map[string]any)
		filter, _ := json.Marshal(b["FilterExpression"])
		if b["TimeUnit"] != "MONTHLY" || b["BudgetType"] != "COST" || b["BudgetLimit"].(map[string]any)["Amount"] != c.amount ||
			!strings.Contains(string(filter), `"Key":"service","MatchOptions":["EQUALS"],"Values":["sellerapi"]`) ||
			!strings.Contains(string(filter), `"Key":"stage","MatchOptions":["EQUALS"],"Values":["`+c.stage+`"]`) {
			t.Errorf("%s budget %v", c.stage, b)
		}
		var kinds []string
		for _, n := range budget.Properties["NotificationsWithSubscribers"].([]any) {
			n := n.(map[string]any)
			subs, _ := json.Marshal(n["Subscribers"])
			if !strings.Contains(string(subs), topic) || !strings.Contains(string(subs), `"SubscriptionType":"SNS"`) {
				t.Errorf("%s budget subscribers %s", c.stage, subs)
			}
			kinds = append(kinds, n["Notification"].(map[string]any)["NotificationType"].(string))
		}
		sort.Strings(kinds)
		if !reflect.DeepEqual(kinds, []string{"ACTUAL", "FORECASTED"}) {
			t.Errorf("%s budget notifications %v", c.stage, kinds)
		}
		monitorID, monitor := c.ops.only(t, "AWS::CE::AnomalyMonitor")
		if monitor.Properties["MonitorType"] != "CUSTOM" || !strings.Contains(monitor.Properties["MonitorSpecification"].(string), `"Values":["`+c.stage+`"]`) {
			t.Errorf("%s monitor %v", c.stage, monitor.Properties)
		}
		_, sub := c.ops.only(t, "AWS::CE::AnomalySubscription")
		subs, _ := json.Marshal(sub.Properties["Subscribers"])
		if m, _ := getAtt(sub.Properties["MonitorArnList"].([]any)[0]); m != monitorID || sub.Properties["Frequency"] != "IMMEDIATE" || !strings.Contains(string(subs), topic) {
			t.Errorf("%s anomaly subscription %v", c.stage, sub.Properties)
		}
		_, pol := c.ops.only(t, "AWS::SNS::TopicPolicy")
		doc, _ := json.Marshal(pol.Properties["PolicyDocument"])
		for _, svc := range []string{"budgets.amazonaws.com", "costalerts.amazonaws.com", "cloudwatch.amazonaws.com"} {
			if !strings.Contains(string(doc), `"Service":"`+svc+`"`) {
				t.Errorf("%s topic policy %s: %s may not publish", c.stage, doc, svc)
			}
		}
	}
}

// Every canary's deployment group runs the deploy hook before it allows
// traffic, and the hook's plan has a smoke request for every one: an API
// group's is one of its routes that takes a credential.
func TestEveryCanaryRunsTheDeployHook(t *testing.T) {
	hookID := prod.function(t, prod.def.DeployHook)
	vars := prod.res[hookID].Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
	plan, err := deployhook.ParsePlan([]byte(vars[deployhook.EnvPlan].(string)))
	if err != nil {
		t.Fatal(err)
	}
	// Lambda allows 4 KB of environment a function.
	if n := len(vars[deployhook.EnvPlan].(string)); n > 3000 {
		t.Errorf("the plan takes %d bytes of the hook's 4 KB environment", n)
	}
	raw, _ := json.Marshal(prod.cdk.ToJSON())
	var doc struct {
		Resources map[string]struct {
			Type         string
			UpdatePolicy map[string]map[string]any
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	fns := prod.functionsByID()
	hooked := 0
	for _, id := range prod.ofType("AWS::Lambda::Alias") {
		fn := fns[ref(prod.res[id].Properties["FunctionName"])]
		up := doc.Resources[id].UpdatePolicy["CodeDeployLambdaAliasUpdate"]
		if ref(up["BeforeAllowTrafficHook"]) != hookID {
			t.Errorf("%s: before-allow-traffic hook %v, want the deploy hook", fn, up["BeforeAllowTrafficHook"])
		}
		hooked++
		s, ok := plan["sellerapi-prod-"+fn]
		switch {
		case !ok:
			t.Errorf("%s: no smoke request", fn)
		case prod.def.isAPI(fn):
			key := s.Method + " " + strings.ReplaceAll(s.Path, "smoke", "{x}")
			found := false
			for _, r := range prod.routes() {
				if r.Function == fn && !r.Public && r.Method == s.Method && pathParam.ReplaceAllString(r.Path, "{x}") == strings.SplitN(key, " ", 2)[1] {
					found = true
				}
			}
			if s.Kind != deployhook.KindAPI || !found {
				t.Errorf("%s: smoke %+v is not one of its routes that takes a credential", fn, s)
			}
			smokeAnswers401(t, fn, s)
		case fn == prod.def.StreamRouter && s.Kind != deployhook.KindStream,
			fn == "webhook-worker" && s.Kind != deployhook.KindQueue,
			fn == "reservation-expirer" && s.Kind != deployhook.KindSchedule:
			t.Errorf("%s: smoke %+v", fn, s)
		}
	}
	if hooked != len(prod.ofType("AWS::CodeDeploy::DeploymentGroup")) || hooked != len(plan) || hooked == 0 {
		t.Errorf("%d hooked aliases, %d deployment groups, %d smoke requests", hooked, len(prod.ofType("AWS::CodeDeploy::DeploymentGroup")), len(plan))
	}
	if slices.Contains(Default("dev").Functions(), "deploy-hook") || len(dev.ofType("AWS::CodeDeploy::DeploymentGroup")) != 0 {
		t.Error("dev deploys the hook without canaries")
	}
}

// The prod stacks cannot be deleted while their protection is on; other
// stages' can.
func TestProdStacksAreProtected(t *testing.T) {
	for _, st := range []interface {
		StackName() *string
		TerminationProtection() *bool
	}{prodStack.Stack, prodStack.OpsStack, prodStack.BackupCopyStack, prodStack.EdgeStack} {
		if !*st.TerminationProtection() {
			t.Errorf("%s has no termination protection", *st.StackName())
		}
	}
	if *devStack.TerminationProtection() || *devStack.OpsStack.TerminationProtection() {
		t.Error("dev is protected")
	}
}

// smokeAnswers401 sends the API smoke request to the group's own handler,
// as its function serves it: without credentials it must answer 401
// problem+json before it needs the store (the handler here has none).
func smokeAnswers401(t *testing.T, fn string, s deployhook.Smoke) {
	t.Helper()
	for _, g := range prod.def.groups() {
		if g.Name != fn {
			continue
		}
		srv, err := httpapi.New(httpapi.Deps{Config: config.Default(), CursorKey: make([]byte, 32)}, g)
		if err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(s.Method, s.Path, nil))
		if w.Code != http.StatusUnauthorized || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/problem+json") {
			t.Errorf("%s: smoke %s %s answered %d %q, want 401 problem+json", fn, s.Method, s.Path, w.Code, w.Header().Get("Content-Type"))
		}
	}
}

// The stages that run on one machine (scripts/cloud) or LocalStack have no
// bill to guard and nothing to back up: their app is the stage's stack
// alone, as `cdk deploy` without --all needs.
func TestOneMachineStagesAreOneStack(t *testing.T) {
	for _, stage := range []string{"local", "localstack"} {
		d := Default(stage)
		d.Placeholder = t.TempDir()
		app := awscdk.NewApp(nil)
		st, err := New(app, d, nil)
		if err != nil {
			t.Fatal(err)
		}
		var stacks []string
		for _, c := range *app.Node().Children() {
			if s, ok := c.(awscdk.Stack); ok {
				stacks = append(stacks, *s.StackName())
			}
		}
		if len(stacks) != 1 || st.OpsStack != nil || st.BackupCopyStack != nil {
			t.Errorf("%s: stacks %v", stage, stacks)
		}
	}
}

// The dashboard shows the embedded metrics: requests, latency and capacity
// by operation, refusals and errors, attempts by outcome and their lag.
func TestTheDashboardShowsTheServicesOwnMetrics(t *testing.T) {
	_, dash := prod.only(t, "AWS::CloudWatch::Dashboard")
	body, _ := json.Marshal(dash.Properties["DashboardBody"])
	for _, want := range []string{
		`SEARCH('{sellerapi/prod,operation} MetricName=\\\"duration_ms\\\"', 'SampleCount', 300)`,
		`SEARCH('{sellerapi/prod,operation} MetricName=\\\"capacity\\\"', 'Sum', 300)`,
		`SEARCH('{sellerapi/prod,outcome} MetricName=\\\"lag_ms\\\"', 'SampleCount', 300)`,
		`[\"sellerapi/prod\",\"refused\"`, `[\"sellerapi/prod\",\"errors_5xx\"`, `[\"sellerapi/prod\",\"lag_ms\"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the dashboard lacks %s", want)
		}
	}
}
