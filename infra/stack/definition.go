package stack

// What a stage deploys: the definition a stack is made from, its defaults
// and its checks.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/resources"
)

// Definition is what one stage deploys.
type Definition struct {
	Stage string
	// Retain keeps the table, bucket and log groups when the stack or the
	// resource is deleted, and turns on the table's deletion protection.
	Retain bool
	// Domain, when set, serves the API at https://<Domain.Name>/v1 and turns
	// the execute-api endpoint off.
	Domain *Domain
	// Assets is the directory holding <function>.zip as `make build` makes
	// them (dist/). Placeholder, when set, is a directory used as every
	// function's code instead, so that a synth needs no build (tests).
	Assets, Placeholder string
	// API lists the operation groups behind the HTTP API, one function per
	// group, named after the group (functions/<group.Name>).
	API []API
	// CatchAll is the function behind the $default route.
	CatchAll string
	// Admin is the function for vendor and token administration, invoked
	// with IAM only.
	Admin string
	// Scheduled are functions EventBridge invokes on a fixed rate.
	Scheduled []Scheduled
	// StreamRouter, when set, is the function that reads the table's stream
	// and sends work to the workers' queues.
	StreamRouter string
	// Sweep is how often EventBridge asks the stream router to route again
	// the changes its stream mapping gave up on (pipeline.Sweep): older
	// than pipeline.SweepGrace, still marked pending. Zero: never.
	Sweep time.Duration
	// Workers are the background functions, each fed by its own queue.
	Workers []Worker
	// LogRetention applies to every function's log group.
	LogRetention awslogs.RetentionDays
	// Canary publishes a version of every triggered function behind an
	// alias, live, which the triggers invoke; CodeDeploy shifts 10% of the
	// traffic to a new version for 5 minutes, then the rest, and rolls back
	// when the function's errors alarm or the API's 5xx-rate or latency
	// alarm goes off. Default: the prod stage.
	Canary bool
	// MediaEdge serves uploaded images through CloudFront (media.go).
	// Default: every stage but local (the deployed shape run on one
	// machine, scripts/cloud) and localstack (make localstack), where no
	// CloudFront runs; there the API's own media route serves them.
	MediaEdge bool
	// Edge puts CloudFront with an AWS WAF web ACL of per-client
	// rate-based rules in front of the API, and makes the API refuse what
	// did not come through it (edge.go). The web ACL is made in a stack of
	// its own in us-east-1, so the stage's stack needs an explicit region.
	// Default: the prod stage (cdk -c edge=true|false to choose).
	Edge bool
	// EdgeLimits shape the web ACL's rules (DefaultEdgeLimits).
	EdgeLimits EdgeLimits
	// Backup, when set, backs the table and the media bucket up every day
	// and copies the recovery points to a second region (recovery.go).
	// Default: the prod stage (cdk -c backupRegion=... for the copy's).
	Backup *Backup
	// Cost, when set, bounds what the stage may spend before the topic
	// hears of it (cost.go). Default: every stage but local and localstack.
	Cost *Cost
	// DeployHook is the function each canary's BeforeAllowTraffic hook
	// runs: it invokes the new version with a smoke request and fails the
	// deployment on a wrong answer. Deployed only with Canary.
	DeployHook string
	// Throttle is the stage's limit on every route; PublicThrottle the
	// tighter one on each route that takes no credential (the pairing
	// code exchange, media reads, the contract), which no vendor's rate
	// window covers.
	Throttle, PublicThrottle Throttle
}

// Throttle is API Gateway's token bucket: a steady rate of requests per
// second and the burst it absorbs above it.
type Throttle struct {
	Rate  float64
	Burst int
}

// API is an operation group's function behind the HTTP API.
type API struct {
	Group httpapi.Group
	// Media lets the function read and write the media bucket's objects
	// (under media/) and tells it the bucket (SELLERAPI_MEDIA_BUCKET).
	Media bool
	// Memory is the function's memory in MB (default 512); Lambda gives
	// CPU in proportion to it.
	Memory int
	// Delivers: the function makes webhook deliveries (the test delivery),
	// so it may assume the delivery role of AWS destinations (delivery.go).
	Delivers bool
}

// Domain is a custom domain for the API, with an ACM certificate for it in
// the stack's region.
type Domain struct{ Name, CertificateARN string }

// Scheduled is a function run on a fixed rate with no input.
type Scheduled struct {
	// Name is the folder in functions/.
	Name string
	// Every is the rate, a whole number of minutes.
	Every time.Duration
	// Timeout is the function's (default 60s).
	Timeout time.Duration
	// Exclusive reserves a concurrency of one, so that a run that outlasts
	// the rate never overlaps the next (the next is throttled and retried).
	Exclusive bool
}

// Worker is a background function fed by its own SQS queue, which has a
// dead-letter queue with an alarm on it.
type Worker struct {
	// Name is the folder in functions/.
	Name string
	// QueueURLEnv names the variable (a shared/config constant) that gives
	// the stream router this worker's queue URL.
	QueueURLEnv string
	// SendsTo names the workers (itself included) whose queues this one may
	// send to. Every worker and the router are told every queue's URL (the
	// service opens all its queues at start); sending is what is granted.
	SendsTo []string
	// BatchSize is the most messages per invocation (default 10).
	BatchSize int
	// MaxReceiveCount is how many receives a message gets before it goes
	// to the dead-letter queue (default 5).
	MaxReceiveCount int
	// Timeout is the function's; the queue's visibility timeout is six
	// times it, as AWS advises (default 60s).
	Timeout time.Duration
	// MaxConcurrency caps the concurrent invocations the queue's mapping
	// makes (2 to 1000, default 5), so that a burst of background work
	// cannot take the account's concurrency from the API's functions.
	MaxConcurrency int
	// Secrets: the worker opens envelope-encrypted secrets (webhook
	// signing secrets), so it may use the stage key (keys.go).
	Secrets bool
	// Delivers: the worker makes webhook deliveries, so it may assume the
	// delivery role of AWS destinations (delivery.go).
	Delivers bool
	// OldestAlarm is the age of the oldest waiting message that raises the
	// queue's alarm (default 15 minutes). Work that waits by design (a
	// webhook retry delayed by SQS) is not visible and does not age.
	OldestAlarm time.Duration
	// Lanes are further queues the worker's function drains, each with
	// its own dead-letter queue, alarms and mapping (the worker's other
	// settings): work of one kind kept apart, so that a slow part of it
	// never holds the pollers of the rest. A lane costs a few resources of
	// the stack's 500, a function a score.
	Lanes []Lane
}

// Lane is a further queue of a worker's function.
type Lane struct {
	// Name names the queue (shared/resources.Worker.Name); SendsTo may
	// name it.
	Name        string
	QueueURLEnv string
	// MaxConcurrency caps its mapping's invocations (default the worker's).
	MaxConcurrency int
}

// queues are the queues every worker drains (Worker.queues).
func (d Definition) queues() []Worker {
	var all []Worker
	for _, w := range d.Workers {
		all = append(all, w.queues()...)
	}
	return all
}

// queues are the queues w's function drains: its own, then its lanes,
// each as a Worker of the lane's name with w's settings.
func (w Worker) queues() []Worker {
	qs := []Worker{w}
	for _, l := range w.Lanes {
		lw := w
		lw.Name, lw.QueueURLEnv, lw.Lanes = l.Name, l.QueueURLEnv, nil
		if l.MaxConcurrency != 0 {
			lw.MaxConcurrency = l.MaxConcurrency
		}
		qs = append(qs, lw)
	}
	return qs
}

// Default is the service's definition for stage. Retain defaults to true
// for the prod stage only.
func Default(stage string) Definition {
	return Definition{
		Stage:      stage,
		Retain:     stage == "prod",
		Canary:     stage == "prod",
		Edge:       stage == "prod",
		EdgeLimits: DefaultEdgeLimits(),
		MediaEdge:  stage != "local" && stage != "localstack",
		Backup: func() *Backup {
			if stage == "prod" {
				return DefaultBackup()
			}
			return nil
		}(),
		Cost:       DefaultCost(stage),
		DeployHook: "deploy-hook",
		Assets:     "../dist",
		// One line per operation group (the local server mounts
		// app.AllGroups); its routes come from the group.
		API: []API{
			{Group: httpapi.Vendors},
			{Group: httpapi.Products},
			{Group: httpapi.Inventory},
			{Group: httpapi.Connections},
			{Group: httpapi.Listings},
			{Group: httpapi.Reservations},
			{Group: httpapi.ExternalOrders},
			{Group: httpapi.SellerOrders},
			{Group: httpapi.Events},
			{Group: httpapi.Webhooks, Delivers: true},
			{Group: httpapi.SyncJobs},
			{Group: httpapi.BulkOperations},
			{Group: httpapi.Conflicts},
			// Re-encoding the largest upload peaks near 130 MB and takes
			// about 0.65 s of one core (docs/decisions.md, "Media function
			// memory"); 1024 MB gives it 0.6 of a vCPU.
			{Group: httpapi.Media, Media: true, Memory: 1024},
			{Group: httpapi.StorePairings},
		},
		CatchAll: "vendors",
		Admin:    "admin",
		Scheduled: []Scheduled{
			{Name: "reservation-expirer", Every: time.Minute, Exclusive: true},
		},
		// The table's stream feeds the router, which sends work to the
		// workers' queues; one line per worker.
		StreamRouter: "stream-router",
		Sweep:        5 * time.Minute,
		Workers: []Worker{
			// Makes the fresh deliveries' attempts, and sends what may wait
			// on a slow receiver (a retry, a deferral, a delivery to a
			// receiver marked slow) to the slow lane (webhook/lanes.go). A
			// batch's attempts are made at once (app.Work.Parallel), each
			// within 12 s (webhook.RequestTimeout); the timeout leaves room for
			// the store and queue calls around them. Its concurrency is the
			// largest: each invocation mostly waits on receivers; a vendor
			// holds at most webhook.VendorSlots (4) attempts in flight across
			// all environments of both lanes (slot items in the table).
			// The slow lane is a queue of its own with a mapping of its own,
			// so that its batches, which last as long as their slowest
			// receiver, never hold the fresh lane's pollers. It sends a
			// recovery on to its next page (replay-worker).
			{Name: "webhook-worker", QueueURLEnv: config.EnvQueueURLWebhookDeliveries, SendsTo: []string{"webhook-worker", "webhook-slow-lane", "replay-worker"}, Timeout: 5 * time.Minute, MaxConcurrency: 20, Secrets: true, Delivers: true,
				Lanes: []Lane{{Name: "webhook-slow-lane", QueueURLEnv: config.EnvQueueURLWebhookSlowLane}}},
			// Fans a replay out into deliveries; runs a recovery page by page,
			// its deliveries in the slow lane, each page sent on by the
			// delivery that settles the page before it (webhook/recover.go),
			// hence the webhook worker's sending here.
			{Name: "replay-worker", QueueURLEnv: config.EnvQueueURLEventReplays, SendsTo: []string{"webhook-worker", "webhook-slow-lane", "replay-worker"}, BatchSize: 1},
			// Paces a job by sending it again after the vendor's window.
			{Name: "bulk-worker", QueueURLEnv: config.EnvQueueURLBulkOperations, SendsTo: []string{"bulk-worker"}, BatchSize: 1, Timeout: 5 * time.Minute},
			// Projects committed moku external orders into seller orders.
			{Name: "seller-order-worker", QueueURLEnv: config.EnvQueueURLSellerOrders},
			// Decides sync jobs item by item; continues a job after a failed
			// attempt by sending it again with a backoff.
			{Name: "sync-worker", QueueURLEnv: config.EnvQueueURLSyncJobs, SendsTo: []string{"sync-worker"}, BatchSize: 1, Timeout: 5 * time.Minute},
		},
		LogRetention: awslogs.RetentionDays_ONE_MONTH,
		// Each vendor's own window (60 reads, 12 writes a minute) is the
		// real limit; the stage's is a ceiling against floods.
		Throttle:       Throttle{Rate: 500, Burst: 1000},
		PublicThrottle: Throttle{Rate: 20, Burst: 40},
	}
}

// Functions lists every function the definition deploys, by folder name.
func (d Definition) Functions() []string {
	var fns []string
	for _, a := range d.API {
		fns = append(fns, a.Group.Name)
	}
	fns = append(fns, d.Admin)
	for _, sc := range d.Scheduled {
		fns = append(fns, sc.Name)
	}
	if d.StreamRouter != "" {
		fns = append(fns, d.StreamRouter)
	}
	for _, w := range d.Workers {
		fns = append(fns, w.Name)
	}
	if d.Canary && d.DeployHook != "" {
		fns = append(fns, d.DeployHook)
	}
	return fns
}

// check validates the definition before any construct is made.
func (d Definition) check() error {
	if _, err := resources.For(d.Stage); err != nil {
		return err
	}
	fns := d.Functions()
	for i, fn := range fns {
		if fn == "" || slices.Contains(fns[:i], fn) {
			return fmt.Errorf("stack: function name %q is empty or used twice", fn)
		}
	}
	if d.Admin == "" {
		return errors.New("stack: no admin function")
	}
	if len(d.Workers) > 0 && d.StreamRouter == "" {
		return errors.New("stack: workers need a stream router to feed their queues")
	}
	workers := map[string]bool{}
	for _, w := range d.Workers {
		for _, q := range w.queues() {
			if q.QueueURLEnv == "" {
				return fmt.Errorf("stack: worker %s: no QueueURLEnv for the stream router", q.Name)
			}
			workers[q.Name] = true
		}
	}
	for _, w := range d.Workers {
		for _, to := range w.SendsTo {
			if !workers[to] {
				return fmt.Errorf("stack: worker %s sends to %q, which is not a worker", w.Name, to)
			}
		}
	}
	for _, w := range d.Workers {
		for _, q := range w.queues() {
			if q.MaxConcurrency != 0 && (q.MaxConcurrency < 2 || q.MaxConcurrency > 1000) {
				return fmt.Errorf("stack: worker %s: maximum concurrency %d is outside SQS's 2..1000", q.Name, q.MaxConcurrency)
			}
		}
	}
	if err := d.catchAllKnowsThePaths(); err != nil {
		return err
	}
	if d.Throttle.Rate <= 0 || d.Throttle.Burst <= 0 || d.PublicThrottle.Rate <= 0 || d.PublicThrottle.Burst <= 0 {
		return errors.New("stack: the stage and public throttles need a positive rate and burst")
	}
	for _, sc := range d.Scheduled {
		if sc.Every < time.Minute || sc.Every%time.Minute != 0 {
			return fmt.Errorf("stack: scheduled %s: rate %v is not a whole number of minutes", sc.Name, sc.Every)
		}
	}
	if d.Sweep != 0 && (d.StreamRouter == "" || d.Sweep < time.Minute || d.Sweep%time.Minute != 0) {
		return fmt.Errorf("stack: sweep every %v needs a stream router and a whole number of minutes", d.Sweep)
	}
	if d.Backup != nil && (d.Backup.CopyRegion == "" || d.Backup.RetentionDays < 1) {
		return errors.New("stack: a backup plan needs a copy region and a retention of at least a day")
	}
	if d.Cost != nil && (d.Cost.MonthlyBudget <= 0 || d.Cost.AnomalyImpact <= 0) {
		return errors.New("stack: the cost guard needs a positive monthly budget and anomaly impact")
	}
	if d.Canary && d.DeployHook == "" {
		return errors.New("stack: a stage deployed by canary needs a deploy hook")
	}
	if d.Domain != nil && (d.Domain.Name == "" || d.Domain.CertificateARN == "") {
		return errors.New("stack: a custom domain needs a name and a certificate ARN")
	}
	if d.Edge && d.Domain != nil && !strings.HasPrefix(d.Domain.CertificateARN, "arn:aws:acm:"+EdgeRegion+":") {
		return fmt.Errorf("stack: behind the edge the custom domain is CloudFront's, whose certificate must be in %s, not %s", EdgeRegion, d.Domain.CertificateARN)
	}
	if d.Edge {
		if slices.Contains([]string{"local", "localstack"}, d.Stage) {
			return fmt.Errorf("stack: stage %s runs no CloudFront or WAF; it cannot have an edge", d.Stage)
		}
		// One address must not be able to take the stage's throttle from
		// everyone: at most a tenth of it.
		l, cfg := d.EdgeLimits, config.Default()
		perAddress := float64(l.VendorsPerAddress*l.Headroom*(cfg.RateReads+cfg.RateWrites)*windowsIn(l.Window)) / l.Window.Seconds()
		if l.Window <= 0 || perAddress > d.Throttle.Rate/10 {
			return fmt.Errorf("stack: the edge admits %.1f requests/s from one address, more than a tenth of the stage's %.0f/s", perAddress, d.Throttle.Rate)
		}
	}
	if d.Placeholder == "" {
		for _, fn := range fns {
			if _, err := os.Stat(d.zip(fn)); err != nil {
				return fmt.Errorf("stack: no package for function %s (%v): run make build", fn, err)
			}
		}
	}
	return nil
}

// catchAllKnowsThePaths checks that the groups behind the API serve
// exactly the routes of app.AllGroups, whose paths every API function
// knows (app.Mounted): the catch-all answers a method a path does not take
// 405 with the path's Allow only for those, so a path deployed beyond them
// would answer 404, and one of them not deployed 405.
func (d Definition) catchAllKnowsThePaths() error {
	table := func(groups ...httpapi.Group) ([]string, error) {
		srv, err := httpapi.New(httpapi.Deps{Config: config.Default(), CursorKey: make([]byte, 32)}, groups...)
		if err != nil {
			return nil, fmt.Errorf("stack: %w", err)
		}
		var keys []string
		for _, r := range srv.Routes() {
			keys = append(keys, r.Method+" "+r.Path)
		}
		slices.Sort(keys)
		return keys, nil
	}
	deployed, err := table(d.groups()...)
	if err != nil {
		return err
	}
	known, err := table(app.AllGroups()...)
	if err != nil {
		return err
	}
	if !slices.Equal(deployed, known) {
		return fmt.Errorf("stack: the API's groups serve %d routes, app.AllGroups %d: the catch-all knows the paths of app.AllGroups only", len(deployed), len(known))
	}
	return nil
}

// sendsToItself tells whether fn is a worker that re-sends to a queue it
// drains (its own or a lane's).
func (d Definition) sendsToItself(fn string) bool {
	for _, w := range d.Workers {
		if w.Name != fn {
			continue
		}
		for _, q := range w.queues() {
			if slices.Contains(w.SendsTo, q.Name) {
				return true
			}
		}
	}
	return false
}

// memory is fn's memory in MB.
func (d Definition) memory(fn string) int {
	for _, a := range d.API {
		if a.Group.Name == fn && a.Memory > 0 {
			return a.Memory
		}
	}
	return 512
}

// isAPI tells whether fn serves an operation group behind the API.
func (d Definition) isAPI(fn string) bool {
	return slices.ContainsFunc(d.API, func(a API) bool { return a.Group.Name == fn })
}

// delivers tells whether fn makes webhook deliveries (API.Delivers,
// Worker.Delivers).
func (d Definition) delivers(fn string) bool {
	return slices.ContainsFunc(d.API, func(a API) bool { return a.Group.Name == fn && a.Delivers }) ||
		slices.ContainsFunc(d.Workers, func(w Worker) bool { return w.Name == fn && w.Delivers })
}

// exclusive tells whether fn is a scheduled function that must not overlap
// itself.
func (d Definition) exclusive(fn string) bool {
	for _, sc := range d.Scheduled {
		if sc.Name == fn && sc.Exclusive {
			return true
		}
	}
	return false
}

func (d Definition) groups() []httpapi.Group {
	var gs []httpapi.Group
	for _, a := range d.API {
		gs = append(gs, a.Group)
	}
	return gs
}

func (d Definition) zip(fn string) string { return filepath.Join(d.Assets, fn+".zip") }

func (d Definition) code(fn string) awslambda.Code {
	if d.Placeholder != "" {
		return awslambda.Code_FromAsset(jsii.String(d.Placeholder), nil)
	}
	return awslambda.Code_FromAsset(jsii.String(d.zip(fn)), nil)
}

func (d Definition) removal() awscdk.RemovalPolicy {
	if d.Retain {
		return awscdk.RemovalPolicy_RETAIN
	}
	return awscdk.RemovalPolicy_DESTROY
}
