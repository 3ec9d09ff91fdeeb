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
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	adminpkg "github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || len(args[0]) > 0 && args[0][0] == '-' {
		return serve(ctx, args, stdout, stderr)
	}
	switch cmd := args[0]; {
	case cmd == "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case cmd == "vendor" && len(args) > 1 && args[1] == "create":
		return admin(ctx, "vendor create", adminpkg.VendorCreate, args[2:], stdout, func(fs *flag.FlagSet, r *adminpkg.Request) {
			fs.StringVar(&r.Name, "name", "", "vendor name")
			fs.StringVar(&r.Slug, "slug", "", "vendor slug")
		})
	case cmd == "vendor" && len(args) > 1 && args[1] == "set-owner":
		return admin(ctx, "vendor set-owner", adminpkg.VendorSetOwner, args[2:], stdout, func(fs *flag.FlagSet, r *adminpkg.Request) {
			fs.StringVar(&r.ID, "id", "", "vendor id")
			fs.StringVar(&r.Owner, "owner", "", "new owner id (default: a fresh one)")
		})
	case cmd == "token" && len(args) > 1 && args[1] == "issue":
		return admin(ctx, "token issue", adminpkg.TokenIssue, args[2:], stdout, func(fs *flag.FlagSet, r *adminpkg.Request) {
			fs.StringVar(&r.Vendor, "vendor", "", "vendor id")
			fs.StringVar(&r.Scopes, "scopes", "all", "comma-separated scopes, or all")
			fs.StringVar(&r.ExpiresIn, "expires-in", "", "lifetime, e.g. 1h (default: the deployed maximum, a year)")
		})
	case cmd == "token" && len(args) > 1 && args[1] == "revoke":
		return admin(ctx, "token revoke", adminpkg.TokenRevoke, args[2:], stdout, func(fs *flag.FlagSet, r *adminpkg.Request) {
			fs.StringVar(&r.ID, "id", "", "token id")
		})
	case cmd == "pairing" && len(args) > 1 && args[1] == "review":
		return admin(ctx, "pairing review", adminpkg.PairingReview, args[2:], stdout, func(fs *flag.FlagSet, r *adminpkg.Request) {
			fs.StringVar(&r.ID, "id", "", "store pairing id")
			fs.StringVar(&r.Reviewer, "reviewer", "", "who reviewed the activation (default: admin)")
		})
	}
	return fmt.Errorf("unknown command %q; use serve, vendor create, vendor set-owner, token issue, token revoke or pairing review", args)
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
	over := map[string]string{}
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
	src := &Sources{Tpl: tpl, Fns: fns, Streams: clients.streams, SQS: clients.sqs, Log: log, StreamARN: streamARN}
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
	err = serveGateway(runCtx, ln, gw)
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

// ---- emulators ----

type emulators struct {
	root, dir      string
	dynamo, sqsURL string
	s3             *s3Server
	log            io.Writer
}

func startEmulators(ctx context.Context, root, dir string, stderr io.Writer) (*emulators, error) {
	e := &emulators{root: root, dir: dir, log: stderr}
	start := func(script string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", script), "start", dir)
		cmd.Stderr = stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("scripts/%s start: %w", script, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var err error
	if e.dynamo, err = start("dynamodb-local"); err != nil {
		return nil, err
	}
	if e.sqsURL, err = start("sqs-local"); err != nil {
		e.stop()
		return nil, err
	}
	if e.s3, err = startS3(); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

func (e *emulators) stop() {
	if e.s3 != nil {
		e.s3.Close()
	}
	for _, script := range []string{"sqs-local", "dynamodb-local"} {
		cmd := exec.Command("bash", filepath.Join(e.root, "scripts", script), "stop", e.dir)
		cmd.Stderr = e.log
		cmd.Run()
	}
}

func (e *emulators) endpoints() map[string]string {
	return map[string]string{
		"AWS_ENDPOINT_URL_DYNAMODB": e.dynamo,
		"AWS_ENDPOINT_URL_SQS":      e.sqsURL,
		"AWS_ENDPOINT_URL_S3":       e.s3.URL,
	}
}

// baseEnv is what every function's process gets besides its template
// environment: the emulators' endpoints and local credentials, as Lambda
// gives its region and the role's credentials.
func baseEnv(endpoints map[string]string) []string {
	env := []string{
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_REGION=" + region(), "AWS_DEFAULT_REGION=" + region(),
		"LAMBDA_TASK_ROOT=/var/task", "TZ=:UTC",
	}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range endpoints {
		env = append(env, k+"="+v)
	}
	return env
}

type clients struct {
	ddb     *dynamodb.Client
	streams *dynamodbstreams.Client
	sqs     *sqs.Client
	s3      *s3.Client
}

func newClients(e *emulators) *clients {
	creds := credentials.NewStaticCredentialsProvider("local", "local", "")
	return &clients{
		ddb:     dynamodb.New(dynamodb.Options{Region: region(), BaseEndpoint: aws.String(e.dynamo), Credentials: creds}),
		streams: dynamodbstreams.New(dynamodbstreams.Options{Region: region(), BaseEndpoint: aws.String(e.dynamo), Credentials: creds}),
		sqs:     sqs.New(sqs.Options{Region: region(), BaseEndpoint: aws.String(e.sqsURL), Credentials: creds}),
		s3: s3.New(s3.Options{Region: region(), BaseEndpoint: aws.String(e.s3.URL), Credentials: creds, UsePathStyle: true,
			RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired, ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired}),
	}
}

// createResources creates the table, queues and bucket as the template
// declares them (a table or queue that exists, from an earlier run on the
// same emulators, is kept).
func createResources(ctx context.Context, tpl *Template, c *clients) error {
	t := tpl.Table
	in := &dynamodb.CreateTableInput{TableName: aws.String(t.Name), BillingMode: ddbtypes.BillingModePayPerRequest}
	for _, k := range t.Keys {
		in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(k.Name), AttributeType: ddbtypes.ScalarAttributeType(k.Type)})
		in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.Name), KeyType: ddbtypes.KeyType(k.KeyType)})
	}
	if t.StreamView != "" {
		in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(t.StreamView)}
	}
	if _, err := c.ddb.CreateTable(ctx, in); err != nil {
		var inUse *ddbtypes.ResourceInUseException
		if !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", t.Name, err)
		}
	}
	if t.TTLAttribute != "" {
		if _, err := c.ddb.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(t.Name),
			TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)}}); err != nil && !strings.Contains(err.Error(), "already enabled") {
			return fmt.Errorf("table %s time to live: %w", t.Name, err)
		}
	}
	if err := createQueues(ctx, tpl, c.sqs); err != nil {
		return err
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(tpl.Bucket.Name)}); err != nil && !strings.Contains(err.Error(), "BucketAlready") {
		return fmt.Errorf("create bucket %s: %w", tpl.Bucket.Name, err)
	}
	return nil
}

// createQueues creates the template's queues with their visibility
// timeouts, retention and redrive policies, and records their URLs.
func createQueues(ctx context.Context, tpl *Template, client *sqs.Client) error {
	// Dead-letter queues first: a queue's redrive policy names its DLQ's ARN.
	arns := map[string]string{}
	var create func(id string) error
	create = func(id string) error {
		q := tpl.Queues[id]
		if q.URL != "" {
			return nil
		}
		attrs := map[string]string{
			string(sqstypes.QueueAttributeNameVisibilityTimeout):      fmt.Sprint(int(q.VisibilityTimeout.Seconds())),
			string(sqstypes.QueueAttributeNameMessageRetentionPeriod): fmt.Sprint(int(q.Retention.Seconds())),
		}
		if q.DeadLetter != "" {
			if err := create(q.DeadLetter); err != nil {
				return err
			}
			rp, _ := json.Marshal(map[string]any{"deadLetterTargetArn": arns[q.DeadLetter], "maxReceiveCount": q.MaxReceiveCount})
			attrs[string(sqstypes.QueueAttributeNameRedrivePolicy)] = string(rp)
		}
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", q.Name, err)
		}
		q.URL = aws.ToString(out.QueueUrl)
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return fmt.Errorf("queue %s: %w", q.Name, err)
		}
		arns[id] = a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
		return nil
	}
	for id := range tpl.Queues {
		if err := create(id); err != nil {
			return err
		}
	}
	return nil
}

func (c *clients) streamARN(ctx context.Context, table string) (string, error) {
	out, err := c.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", table, err)
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

// ---- administration ----

// adminFunction is the function the template deploys for administration:
// the one whose name ends in -admin (the stack's AdminFunctionName).
func adminFunction(tpl *Template) (*Function, error) {
	for _, f := range tpl.Functions {
		if strings.HasSuffix(f.Name, "-admin") {
			return f, nil
		}
	}
	return nil, errors.New("the template has no admin function (a function named *-admin)")
}

// invokeAdmin runs one administrative request through the admin function.
func invokeAdmin(ctx context.Context, fns *Functions, tpl *Template, req adminpkg.Request) (json.RawMessage, error) {
	f, err := adminFunction(tpl)
	if err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(req)
	out, err := fns.Invoke(ctx, f.Logical, payload)
	if err != nil {
		return nil, err
	}
	var res struct {
		Data  json.RawMessage `json:"data"`
		Error *adminpkg.Error `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("admin function answered %s: %w", out, err)
	}
	if res.Error != nil {
		return nil, fmt.Errorf("%s: %s", res.Error.Code, res.Error.Detail)
	}
	return res.Data, nil
}

// admin is an administrative command: the admin function, invoked on the
// emulators of the serve running on --data.
func admin(ctx context.Context, name, action string, args []string, stdout io.Writer, define func(*flag.FlagSet, *adminpkg.Request)) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var c common
	commonFlags(fs, &c)
	req := adminpkg.Request{Action: action}
	define(fs, &req)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// The deployed admin function issues no token without an end; where
	// functions/local's default is none, the deployed maximum stands in.
	if req.Action == adminpkg.TokenIssue && req.ExpiresIn == "" {
		req.ExpiresIn = adminpkg.DeployedTokenLifetime.String()
	}
	b, err := os.ReadFile(statePath(c.data))
	if err != nil {
		return fmt.Errorf("no cloud serve runs on %s (%v): start one with: cloud serve --data %s", c.data, err, c.data)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", statePath(c.data), err)
	}
	if p, err := os.FindProcess(st.PID); err != nil || p.Signal(syscall.Signal(0)) != nil {
		return fmt.Errorf("the cloud serve of %s (pid %d) is not running: start one with: cloud serve --data %s", c.data, st.PID, c.data)
	}
	tplPath := st.Template
	if c.template != "" {
		tplPath = c.template
	}
	tpl, err := LoadTemplate(tplPath)
	if err != nil {
		return err
	}
	for _, q := range tpl.Queues {
		q.URL = "unused-by-admin"
	}
	if err := tpl.ResolveEnv(Addresses{APIEndpoint: strings.TrimSuffix(st.BaseURL, config.Default().BasePath()), Region: region()}); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "cloud-admin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fns, err := NewFunctions(ctx, tpl, baseEnv(st.Env), nil, io.Discard, dir)
	if err != nil {
		return err
	}
	defer fns.Close()
	data, err := invokeAdmin(ctx, fns, tpl, req)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"data": data})
}

// demo creates a first vendor and token through the admin function when
// the table is empty, and prints them as functions/local does.
func demo(ctx context.Context, tpl *Template, fns *Functions, c *clients, baseURL string, stdout io.Writer) error {
	out, err := c.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tpl.Table.Name), Limit: aws.Int32(1)})
	if err != nil {
		return fmt.Errorf("scan %s: %w", tpl.Table.Name, err)
	}
	if len(out.Items) > 0 {
		return nil
	}
	raw, err := invokeAdmin(ctx, fns, tpl, adminpkg.Request{Action: adminpkg.VendorCreate, Name: "Demo Vendor", Slug: "demo-vendor"})
	if err != nil {
		return fmt.Errorf("demo vendor: %w", err)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.ID == "" {
		return fmt.Errorf("demo vendor: the admin function answered %s", raw)
	}
	raw, err = invokeAdmin(ctx, fns, tpl, adminpkg.Request{Action: adminpkg.TokenIssue, Vendor: v.ID, Scopes: "all", ExpiresIn: adminpkg.DeployedTokenLifetime.String()})
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.Token == "" {
		return fmt.Errorf("demo token: the admin function answered %s", raw)
	}
	fmt.Fprintf(stdout, `First start on an empty store: created a demo vendor and a token with every scope (through the admin function).
  vendor id: %s
  token:     %s   (shown only now; issue more with "token issue")

Try it:
  curl -s -H "Authorization: Bearer %s" %s/vendors
  curl -s -H "Authorization: Bearer %s" %s/vendors/%s

`, v.ID, tok.Token, tok.Token, baseURL, tok.Token, baseURL, v.ID)
	return nil
}
