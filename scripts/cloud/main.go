// Command cloud runs the deployed shape of the service on one machine, from
// the synthesized CloudFormation template: DynamoDB Local, the SQS emulator
// and an S3 stand-in hold the table, queues and bucket the template
// declares; every request is matched to the template's HTTP API routes,
// turned into the payload format 2.0 event and handed through the Lambda
// Runtime API to the function binary the route's integration names; the
// table's stream, the queues and the schedules invoke their functions as
// the template's event source mappings and rules set them. Functions stay
// warm between invocations, so the run also measures cold and warm latency
// (printed when it stops).
//
// Its command line is functions/local's, so that whatever drives the local
// binary drives the deployed shape unchanged:
//
//	cloud [serve] --addr 127.0.0.1:8080 --data DIR [--rate-reads N] [--rate-writes N] [--allow-private-webhooks] [--template T]
//	cloud vendor create --data DIR --name NAME --slug SLUG
//	cloud vendor set-owner --data DIR --id VENDOR_ID [--owner OWNER_ID]
//	cloud token issue --data DIR --vendor ID --scopes a,b|all [--expires-in 1h]
//	cloud token revoke --data DIR --id TOKEN_ID
//	cloud pairing review --data DIR --id PAIRING_ID [--reviewer NAME]
//	cloud cursor-key rotate --data DIR
//
// The administrative commands invoke the template's admin function on the
// emulators of the serve running on the same --data. The template is
// --template, else $SELLERAPI_CLOUD_TEMPLATE, else bin/cloud-stack/cdk.out of the
// repository, which `make cloud` (scripts/cloud-synth) builds and
// synthesizes for this machine.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/moku/sellerapi/shared/cmdline"
	"github.com/moku/sellerapi/shared/config"
)

func main() { runner().Main() }

func runner() cmdline.Runner { return cmdline.Runner{Serve: serve, Admin: admin} }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runner().Run(ctx, args, stdout, stderr)
}

// common are the flags every command takes (functions/local's store flags;
// --store and --table are accepted for the same command lines, and the
// template decides both).
type common struct {
	data, store, table, template string
}

func commonFlags(fs *flag.FlagSet, c *common) {
	fs.StringVar(&c.data, "data", ".data", "directory of this run's state (the emulators' files, the running serve's endpoints)")
	fs.StringVar(&c.store, "store", "dynamodb", "accepted for functions/local's command line; the deployed shape always runs on DynamoDB")
	fs.StringVar(&c.table, "table", "", "accepted for functions/local's command line; the template names the table")
	fs.StringVar(&c.template, "template", os.Getenv("SELLERAPI_CLOUD_TEMPLATE"), "the synthesized template (default: bin/cloud-stack/cdk.out/sellerapi-local.template.json, made on first use)")
}

// state is what a serve writes to <data>/cloud.json for the administrative
// commands: where its emulators listen and which template it runs.
type state struct {
	PID      int               `json:"pid"`
	Template string            `json:"template"`
	Env      map[string]string `json:"env"`
	BaseURL  string            `json:"base_url"`
}

func statePath(data string) string { return filepath.Join(data, "cloud.json") }

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var c common
	commonFlags(fs, &c)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	rateReads := fs.Int("rate-reads", 0, "reads per vendor per minute (default: the template's)")
	rateWrites := fs.Int("rate-writes", 0, "writes per vendor per minute (default: the template's)")
	private := fs.Bool("allow-private-webhooks", false, "let webhooks reach private and loopback addresses (local tests only)")
	baseURL := fs.String("base-url", "", "public base URL (default http://ADDR/v1)")
	tracePath := fs.String("trace", "", "write a line per stream record, queue message and invocation to this file (trace.go; scripts/loadtest reads it)")
	tune := tuningFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("component", "cloud")
	root, err := repoRoot()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.data, 0o755); err != nil {
		return err
	}
	data, err := filepath.Abs(c.data)
	if err != nil {
		return err
	}
	tplPath, err := templatePath(ctx, root, c.template, stderr)
	if err != nil {
		return err
	}
	tpl, err := LoadTemplate(tplPath)
	if err != nil {
		return err
	}
	if err := tune.apply(tpl); err != nil {
		return err
	}
	flt, err := newFaults(data, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()

	emu, err := startEmulators(ctx, root, filepath.Join(data, "emulators"), stderr)
	if err != nil {
		return err
	}
	defer emu.stop()
	clients := newClients(emu)
	if err := createResources(ctx, tpl, clients); err != nil {
		return err
	}
	endpoint := "http://" + ln.Addr().String()
	if err := tpl.ResolveEnv(Addresses{APIEndpoint: endpoint, Region: region()}); err != nil {
		return err
	}
	if err := CheckWiring(tpl); err != nil {
		return fmt.Errorf("the template's wiring: %w", err)
	}
	over := localKeys(data)
	if *rateReads > 0 {
		over[config.EnvRateReads] = fmt.Sprint(*rateReads)
	}
	if *rateWrites > 0 {
		over[config.EnvRateWrites] = fmt.Sprint(*rateWrites)
	}
	if *private {
		over[config.EnvAllowPrivateWebhooks] = "true"
	}
	if *baseURL != "" {
		over[config.EnvBaseURL] = *baseURL
	}
	code := filepath.Join(data, "functions")
	// The functions reach SQS through the fault switch (faults.go).
	endpoints := emu.endpoints()
	if endpoints["AWS_ENDPOINT_URL_SQS"], err = flt.sqsProxy(ctx, emu.sqsURL); err != nil {
		return err
	}
	fns, err := NewFunctions(ctx, tpl, baseEnv(endpoints), over, stderr, code)
	if err != nil {
		return err
	}
	fns.kill = flt.killAfter
	var trace *Trace
	if *tracePath != "" {
		f, err := os.Create(*tracePath)
		if err != nil {
			return fmt.Errorf("trace: %w", err)
		}
		defer f.Close()
		trace = NewTrace(f) // a write per line: the file is whole while serve runs
		fns.trace = trace
	}
	defer func() {
		fns.Close()
		fmt.Fprint(stderr, "cold and warm latency per function (cold: process start to response; warm: hand-over to response):\n", FormatLatencies(fns.Latencies()))
	}()
	streamARN, err := clients.streamARN(ctx, tpl.Table.Name)
	if err != nil {
		return err
	}
	var seq atomic.Int64
	gw := &Gateway{Routes: tpl.Routes, Fns: fns, Log: log, seq: func() string { return fmt.Sprintf("cloud-%d-%d", os.Getpid(), seq.Add(1)) }}
	src := &Sources{Tpl: tpl, Fns: fns, Streams: clients.streams, SQS: clients.sqs, Log: log, StreamARN: streamARN, Trace: trace}
	public := endpoint + config.Default().BasePath()
	if *baseURL != "" {
		public = *baseURL
	}
	st := state{PID: os.Getpid(), Template: tplPath, Env: emu.endpoints(), BaseURL: public}
	b, _ := json.MarshalIndent(st, "", "  ")
	if err := os.WriteFile(statePath(data), b, 0o644); err != nil {
		return err
	}
	defer os.Remove(statePath(data))

	if err := demo(ctx, tpl, fns, clients, public, stdout); err != nil {
		return err
	}
	log.Info("serving", "addr", ln.Addr().String(), "base_url", public, "template", tplPath, "functions", len(tpl.Functions), "routes", len(tpl.Routes))
	fmt.Fprintf(stdout, "Seller Platform API listening on %s\n", public)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { src.Run(runCtx) })
	err = cmdline.Serve(runCtx, ln, gw)
	cancel()
	wg.Wait()
	return err
}

// repoRoot finds the repository (for its scripts and pinned tools): the
// working directory or one of its parents, else the executable's.
func repoRoot() (string, error) {
	try := func(dir string) (string, bool) {
		for d := dir; ; d = filepath.Dir(d) {
			if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/moku/sellerapi\n") {
				return d, true
			}
			if filepath.Dir(d) == d {
				return "", false
			}
		}
	}
	if wd, err := os.Getwd(); err == nil {
		if r, ok := try(wd); ok {
			return r, nil
		}
	}
	if exe, err := os.Executable(); err == nil {
		if r, ok := try(filepath.Dir(exe)); ok {
			return r, nil
		}
	}
	return "", errors.New("run cloud inside the repository (it starts the emulators with its scripts)")
}

// templatePath returns the template to run, synthesizing the default one
// (scripts/cloud-synth) when it is missing.
func templatePath(ctx context.Context, root, flagged string, stderr io.Writer) (string, error) {
	if flagged != "" {
		return filepath.Abs(flagged)
	}
	def := filepath.Join(root, "bin", "cloud-stack", "cdk.out", "sellerapi-local.template.json")
	if _, err := os.Stat(def); err == nil {
		return def, nil
	}
	fmt.Fprintln(stderr, "cloud: no synthesized stack yet; building the functions for this machine and synthesizing (scripts/cloud-synth)")
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "cloud-synth"))
	cmd.Dir, cmd.Stdout, cmd.Stderr = root, stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("scripts/cloud-synth: %w", err)
	}
	return def, nil
}
