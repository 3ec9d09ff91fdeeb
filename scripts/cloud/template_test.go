package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/resources"
)

// mutate copies the synthesized template into a fresh cloud assembly
// (its assets linked), changed by edit, and returns its path.
func mutate(t *testing.T, tpl string, edit func(resources map[string]any)) string {
	t.Helper()
	raw, err := os.ReadFile(tpl)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["Resources"].(map[string]any))
	dir := t.TempDir()
	entries, err := os.ReadDir(filepath.Dir(tpl))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "asset.") {
			if err := os.Symlink(filepath.Join(filepath.Dir(tpl), e.Name()), filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	out, _ := json.Marshal(doc)
	p := filepath.Join(dir, filepath.Base(tpl))
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// each calls f with the properties of every resource of type typ.
func each(resources map[string]any, typ string, f func(id string, props map[string]any)) {
	for id, r := range resources {
		m := r.(map[string]any)
		if m["Type"] == typ {
			f(id, m["Properties"].(map[string]any))
		}
	}
}

// swapQueueURLs swaps two queue URL variables in every function that has
// them: the stack then passes its own assertions, and work would reach the
// wrong worker.
func swapQueueURLs(resources map[string]any) { swapQueueURLsOf(resources, "") }

// swapQueueURLsOf swaps them only in the functions whose name ends in
// suffix.
func swapQueueURLsOf(resources map[string]any, suffix string) {
	each(resources, "AWS::Lambda::Function", func(_ string, p map[string]any) {
		if name, _ := p["FunctionName"].(string); !strings.HasSuffix(name, suffix) {
			return
		}
		env, _ := p["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		a, b := "SELLERAPI_QUEUE_URL_WEBHOOK_DELIVERIES", "SELLERAPI_QUEUE_URL_BULK_OPERATIONS"
		if vars[a] != nil && vars[b] != nil {
			vars[a], vars[b] = vars[b], vars[a]
		}
	})
}

// TestTemplate: the synthesized stack is played whole; a setting the runner
// does not play is an error naming it.
func TestTemplate(t *testing.T) {
	tpl := cloudTemplate(t)
	got, err := LoadTemplate(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if got.Stream == nil || got.Stream.BatchSize != 100 || !got.Stream.Bisect || got.Stream.MaxRetries != 5 || got.Stream.OnFailure == "" || !got.Stream.PartialBatch {
		t.Fatalf("stream mapping %+v", got.Stream)
	}
	// One route per path and method (no ANY per path since wrong methods
	// go through $default): 93 when this was written.
	if len(got.QueueFeeds) != len(resources.Workers()) || len(got.Schedules) != 2 || len(got.Routes) < 90 {
		t.Fatalf("%d queue mappings, %d schedules, %d routes", len(got.QueueFeeds), len(got.Schedules), len(got.Routes))
	}
	// The stream router's sweep is played with the input the rule sends.
	sweeps := 0
	for _, sc := range got.Schedules {
		if strings.HasSuffix(got.Functions[sc.Function].Name, "-stream-router") {
			sweeps++
			if string(sc.Input) != `{"sweep":{}}` || sc.Every != 5*time.Minute {
				t.Errorf("sweep schedule %+v", sc)
			}
		}
	}
	if sweeps != 1 {
		t.Errorf("%d sweep schedules", sweeps)
	}
	for _, q := range got.Queues {
		if !strings.HasSuffix(q.Name, "-dlq") && (q.DeadLetter == "" || q.MaxReceiveCount != 5) {
			t.Fatalf("queue %s: redrive %+v", q.Name, q)
		}
	}
	// The stack's own filter and limits are played, not passed over.
	if len(got.Stream.Filters) == 0 {
		t.Error("the stream mapping's event filter was not read")
	}
	for _, f := range got.Functions {
		if want := map[bool]int{true: 1, false: 0}[strings.HasSuffix(f.Name, "-reservation-expirer")]; f.Reserved != want {
			t.Errorf("%s: reserved concurrency %d, want %d", f.Name, f.Reserved, want)
		}
	}
	for _, q := range got.QueueFeeds {
		if q.MaxConcurrency < 2 {
			t.Errorf("queue mapping of %s: maximum concurrency %d", q.Queue, q.MaxConcurrency)
		}
	}

	// The delivery role is not played: the functions that make webhook
	// deliveries (the webhook worker, the webhooks API's test) are told
	// no role, and send to an emulator's queue with dummy credentials.
	for _, q := range got.Queues {
		q.URL = "http://127.0.0.1:1/000000000000/" + q.Name
	}
	if err := got.ResolveEnv(Addresses{APIEndpoint: "http://127.0.0.1:1"}); err != nil {
		t.Fatalf("resolve the environment: %v", err)
	}
	deliverers := 0
	for _, f := range got.Functions {
		if _, declared := f.env[config.EnvWebhookRoleARN]; declared {
			deliverers++
			if v, told := f.Env[config.EnvWebhookRoleARN]; told {
				t.Errorf("%s: %s=%s, want it unset", f.Name, config.EnvWebhookRoleARN, v)
			}
		}
	}
	if deliverers != 2 {
		t.Errorf("%d functions declare %s, want the webhook worker and the webhooks API", deliverers, config.EnvWebhookRoleARN)
	}

	filtered, err := LoadTemplate(mutate(t, tpl, func(r map[string]any) {
		each(r, "AWS::Lambda::EventSourceMapping", func(_ string, p map[string]any) {
			p["FilterCriteria"] = map[string]any{"Filters": []any{map[string]any{"Pattern": `{"eventName":["INSERT"]}`}}}
		})
	}))
	if err != nil || len(filtered.Stream.Filters) != 1 || len(filtered.QueueFeeds[0].Filters) != 1 {
		t.Fatalf("filters: %v", err)
	}

	// The router's mapping reads a shard in lanes; without the property,
	// in one (Lambda's default); outside 1..10 the template is refused.
	if got.Stream.Parallel != 10 {
		t.Errorf("stream mapping parallelization %d, want the stack's 10", got.Stream.Parallel)
	}
	for _, c := range []struct {
		factor any
		want   int
	}{{nil, 1}, {float64(3), 3}, {float64(11), 0}, {float64(0), 0}} {
		got, err := LoadTemplate(mutate(t, tpl, func(r map[string]any) {
			each(r, "AWS::Lambda::EventSourceMapping", func(_ string, p map[string]any) {
				if _, stream := p["StartingPosition"]; !stream {
					return
				}
				if delete(p, "ParallelizationFactor"); c.factor != nil {
					p["ParallelizationFactor"] = c.factor
				}
			})
		}))
		switch {
		case c.want == 0 && (err == nil || !strings.Contains(err.Error(), "want 1..10")):
			t.Errorf("ParallelizationFactor %v: %v, want it refused", c.factor, err)
		case c.want > 0 && (err != nil || got.Stream.Parallel != c.want):
			t.Errorf("ParallelizationFactor %v: %v, %+v; want %d lanes", c.factor, err, got, c.want)
		}
	}

	for _, c := range []struct {
		name string
		edit func(map[string]any)
		want string
	}{
		{"a filter operator", func(r map[string]any) {
			each(r, "AWS::Lambda::EventSourceMapping", func(_ string, p map[string]any) {
				p["FilterCriteria"] = map[string]any{"Filters": []any{map[string]any{"Pattern": `{"dynamodb":{"Keys":{"pk":{"S":[{"cidr":"10.0.0.0/8"}]}}}}`}}}
			})
		}, `operator "cidr" is not played by the cloud runner`},
		{"tumbling window", func(r map[string]any) {
			each(r, "AWS::Lambda::EventSourceMapping", func(_ string, p map[string]any) { p["TumblingWindowInSeconds"] = 30 })
		}, "property TumblingWindowInSeconds is not understood"},
		{"cron schedule", func(r map[string]any) {
			each(r, "AWS::Events::Rule", func(_ string, p map[string]any) { p["ScheduleExpression"] = "cron(0 * * * ? *)" })
		}, `ScheduleExpression "cron(0 * * * ? *)": only rate(N minutes|hours|days) is played`},
		{"authorizer", func(r map[string]any) {
			r["Auth"] = map[string]any{"Type": "AWS::ApiGatewayV2::Authorizer", "Properties": map[string]any{}}
		}, "resource Auth: type AWS::ApiGatewayV2::Authorizer is not played by the cloud runner"},
		{"a queue's redrive", func(r map[string]any) {
			each(r, "AWS::SQS::Queue", func(_ string, p map[string]any) {
				if rp, ok := p["RedrivePolicy"].(map[string]any); ok {
					rp["maxReceiveCount"] = "many"
				}
			})
		}, "RedrivePolicy.maxReceiveCount many"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadTemplate(mutate(t, tpl, c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestSwappedQueueURLs: a stack with two queue URL variables swapped
// (and every other part intact) makes the cloud run fail at start with a
// message naming both queues, before it serves anything.
func TestSwappedQueueURLs(t *testing.T) {
	tpl := cloudTemplate(t)
	t.Parallel()
	bin := build(t, "./scripts/cloud")
	for _, c := range []struct {
		name string
		edit func(map[string]any)
	}{
		{"in every function", swapQueueURLs},
		{"in the stream router only", func(r map[string]any) { swapQueueURLsOf(r, "-stream-router") }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			broken := mutate(t, tpl, c.edit)
			cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--template", broken)
			cmd.Dir = "../.."
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the broken stack served:\n%s", out)
			}
			msg := string(out)
			// The message names a function, the variable, both queues and the cause.
			for _, w := range []string{"function sellerapi-", "SELLERAPI_QUEUE_URL_", "-bulk-worker", "-webhook-worker", "are two queue URL variables swapped?"} {
				if !strings.Contains(msg, w) {
					t.Fatalf("the failure does not name %q:\n%s", w, msg)
				}
			}
			if strings.Contains(msg, "listening on") {
				t.Fatalf("it served before failing:\n%s", msg)
			}
			t.Logf("the cloud run failed with:\n%s", lastLine(msg))
		})
	}
}

func lastLine(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return l[len(l)-1]
}
