// Command bill prices what BenchmarkAPI measured on DynamoDB Local: for
// each operation, and for a stated mix of them, the AWS cost per million
// requests by component, from the read and write units, store waits, CPU
// and log bytes each request took (scripts/bench runs it on its output).
// The rate window is priced apart, as the service's own limiter spends it
// at the default allowances (the benchmark lifts them): bill takes a
// vendor's whole window, and a single request, through a real Limiter on
// a counting embedded store.
//
// Usage: go run ./scripts/bill bench.txt
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/ratelimit"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// Prices in US dollars, us-east-1, on-demand, as AWS listed them in
// November 2026; a million requests or units unless said.
const (
	pricesAsOf     = "AWS list prices, us-east-1, November 2026"
	readUnit       = 0.125 // DynamoDB on-demand read request unit
	writeUnit      = 0.625 // DynamoDB on-demand write request unit
	httpAPI        = 1.00  // API Gateway HTTP API, first 300 million
	lambdaRequest  = 0.20  // Lambda invocations
	lambdaGBSecond = 0.0000133334
	logsPerGB      = 0.50 // CloudWatch Logs ingestion
	xrayTrace      = 5.00 // X-Ray traces recorded
	// prod's edge (infra/stack/edge.go): CloudFront's HTTPS requests
	// (United States, Europe) and AWS WAF's requests.
	cloudFrontHTTPS = 1.00
	wafRequest      = 0.60
	sqsRequest      = 0.40 // SQS standard queue requests, after the free tier
)

// The background work's assumptions (BenchmarkEventWork measures the
// store's part of it): each write makes one event; webhookShare of events
// match one subscription, and no subscription of their vendor could
// receive the others; each stream record and each delivery message
// is its own invocation (batches only make it cheaper); a receiver
// answers in receiverMS, which the webhook worker is billed for waiting.
//
// Pending markers follow the same share (pipeline.Pending.Mark): an
// event a subscription could receive is written with its marker, which
// the router deletes; the others with none. The benchmark's vendor has no
// subscription, so BenchmarkAPI measures writes without markers and
// reports what they would have cost (unmarked-wru/op), of which the bill
// adds webhookShare back; BenchmarkEventWork measures the router on a
// marked event (route-*) and on an unmarked one (route-unmarked-*), which
// the bill weighs by the same share.
const (
	webhookShare = 0.30
	receiverMS   = 100.0
)

// A delivery's SQS requests (https://aws.amazon.com/sqs/pricing/: every
// API action is a request, each 64 KB chunk of its payload billed as one).
// The router sends an event's delivery messages ten to a SendMessageBatch
// (pipeline.Router, issues 25 and 26), one request for ten messages of
// about deliveryMessageBytes each; the mix has subscriptionsPerEvent
// subscriptions an event, so a batch carries one message and saves
// nothing there. The worker's receive and its delete are one each, as the
// model has one message an invocation: the webhook worker deletes nothing
// itself (lambdaapi's SQS handler reports failures and Lambda deletes the
// rest, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html: "When
// your function successfully processes a batch, Lambda deletes its
// messages from the queue"), and how many requests Lambda's delete of a
// larger batch takes is not documented, so one a message is kept.
const (
	subscriptionsPerEvent = 1
	deliveryMessageBytes  = 400
)

// sendRequests is the SQS requests the router bills for one event's
// delivery messages to subs subscriptions: ten messages a call, each
// call's 64 KB chunks.
func sendRequests(subs int) float64 {
	var n float64
	for left := subs; left > 0; left -= 10 {
		n += math.Ceil(float64(min(left, 10)*deliveryMessageBytes) / (64 << 10))
	}
	return n
}

// deliverySQS is a delivery's SQS requests: its share of the router's
// send, the worker's receive and Lambda's delete.
func deliverySQS(subs int) float64 { return sendRequests(subs)/float64(subs) + 2 }

// The deployment's settings and the model's assumptions.
const (
	memoryMB = 512 // an API function's memory (infra/stack, Definition.Memory)
	// fullCoreMB is the memory at which Lambda gives a function one whole
	// vCPU; below it the CPU share is memory/fullCoreMB, so a request's
	// CPU time stretches by its inverse.
	fullCoreMB = 1769
	// roundTripMS is one DynamoDB round trip from Lambda in-region; the
	// emulator's latency on this machine says nothing of it, so the model
	// bills each sequential wait this long plus the measured CPU.
	roundTripMS = 6.0
	// traced is the share of requests X-Ray's default sampling records
	// (1 a second, then 5%).
	traced = 0.05
)

// The log lines a request writes beside the function's own request line
// (measured by the benchmark as a Lambda function writes it, with its
// embedded metrics): API Gateway's request id on that line, and the stage's
// access log line in infra's format (infra/stack/api.go,
// AccessLogFields), its values typical of each field. Lambda writes no
// platform line per invocation: the functions log at system level WARN
// (infra/stack/function.go).
const (
	apigwID       = `,"apigw_id":"Kx1bTg9ZIAMEVvA="`
	accessLogLine = `{"apigw_id":"Kx1bTg9ZIAMEVvA=","route":"GET /v1/vendors/{vendor_id}/products/{product_id}","status":"200","latency_ms":"23","ip":"203.0.113.9","integration_error":"-"}` + "\n"
)

// logBytes is what a request's lines weigh in CloudWatch Logs: the
// measured request line (the benchmark runs outside Lambda, so without
// API Gateway's request id) and the access log line.
func logBytes(measured float64) float64 {
	return measured + float64(len(apigwID)+len(accessLogLine))
}

// mix is the stated request mix: 80% reads, 20% writes.
var mix = map[string]float64{
	"get-vendor": 0.20, "get-product": 0.30, "list-inventory": 0.30,
	"create-product": 0.05, "adjust-inventory": 0.10, "reserve": 0.05,
}

var writes = map[string]bool{"create-product": true, "adjust-inventory": true, "reserve": true}

type op struct {
	name string
	m    map[string]float64
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: bill bench.txt")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "bill:", err)
		os.Exit(1)
	}
	defer f.Close()
	ops, err := parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bill:", err)
		os.Exit(1)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		fmt.Fprintln(os.Stderr, "bill:", err)
		os.Exit(1)
	}
	bg, err := parseEventWork(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bill:", err)
		os.Exit(1)
	}
	window, err := windowWrites()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bill:", err)
		os.Exit(1)
	}
	print(os.Stdout, ops, window, bg)
}

// parseEventWork reads BenchmarkEventWork's line (nil when the input has
// none, as when BENCH narrowed the run).
func parseEventWork(r io.Reader) (map[string]float64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkEventWork") {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		return m, nil
	}
	return nil, sc.Err()
}

// lambdaCost is one invocation of ms billed at memoryMB.
func lambdaCost(ms float64) float64 {
	return lambdaRequest + 1e6*math.Ceil(ms)/1000*memoryMB/1024*lambdaGBSecond
}

// backgroundCost is what one write's event costs after its request, per
// million writes: the stream router's part (every event) and a webhook
// delivery's (webhookShare of events), each priced as the API's requests
// are (store waits at roundTripMS, no CPU measured).
func backgroundCost(m map[string]float64) (router, delivery cost) {
	rru, wru := routedShare(m, "rru"), routedShare(m, "wru")
	router = cost{
		rru: rru, wru: wru,
		dynamo: rru*readUnit + wru*writeUnit,
		lambda: routedLambda(m),
		logs:   m["route-log-B/op"] * logsPerGB / 1e3,
	}
	delivery = cost{
		rru: m["delivery-rru/op"], wru: m["delivery-wru/op"],
		dynamo: m["delivery-rru/op"]*readUnit + m["delivery-wru/op"]*writeUnit,
		sqs:    deliverySQS(subscriptionsPerEvent) * sqsRequest, // the send's share, the receive and the delete
		lambda: lambdaCost(m["delivery-waits/op"]*roundTripMS + receiverMS),
		logs:   m["delivery-log-B/op"] * logsPerGB / 1e3,
	}
	return router, delivery
}

// routedShare is the stream router's measure unit (rru, wru, waits) per
// event: webhookShare of events marked (route-<unit>/op), the others not
// (route-unmarked-<unit>/op). Input without the unmarked measure (an
// older benchmark, every event marked) is taken as it is.
func routedShare(m map[string]float64, unit string) float64 {
	marked := m["route-"+unit+"/op"]
	unmarked, ok := m["route-unmarked-"+unit+"/op"]
	if !ok {
		return marked
	}
	return webhookShare*marked + (1-webhookShare)*unmarked
}

// routedLambda is the stream router's invocation per event, each billed
// for its own waits, weighed as routedShare weighs the units.
func routedLambda(m map[string]float64) float64 {
	marked := lambdaCost(m["route-waits/op"] * roundTripMS)
	unmarked, ok := m["route-unmarked-waits/op"]
	if !ok {
		return marked
	}
	return webhookShare*marked + (1-webhookShare)*lambdaCost(unmarked*roundTripMS)
}

// parse reads the BenchmarkAPI lines of the DynamoDB store.
func parse(r io.Reader) ([]op, error) {
	var ops []op
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkAPI/") {
			continue
		}
		parts := strings.Split(f[0], "/")
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "dynamodb") {
			continue
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err == nil {
				m[f[i+1]] = v
			}
		}
		ops = append(ops, op{name: parts[1], m: m})
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("no BenchmarkAPI results on dynamodb in the input")
	}
	return ops, sc.Err()
}

// windowWrites is the store writes per request the rate window costs at
// the default allowances: a busy vendor spending its whole window in one
// process, by class; a quiet vendor pays one write a request.
func windowWrites() (map[ratelimit.Class]float64, error) {
	dir, err := os.MkdirTemp("", "sellerapi-bill-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	c := clocktest.Fake(2026, 1, 1, 12, 0, 0)
	st, err := sqlite.Open(dir, sqlite.WithClock(c.Now))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	cfg := config.Default()
	out := map[ratelimit.Class]float64{}
	for class, limit := range map[ratelimit.Class]int{ratelimit.Read: cfg.RateReads, ratelimit.Write: cfg.RateWrites} {
		cs := &counting{Store: st}
		l := ratelimit.Limiter{Store: cs, Clock: c, Reads: cfg.RateReads, Writes: cfg.RateWrites, Leases: ratelimit.NewLeases()}
		for n := 0; n < limit; n++ {
			if _, err := l.Take(context.Background(), "ven_bill", class); err != nil {
				return nil, fmt.Errorf("take %d of %d %ss: %w", n+1, limit, class, err)
			}
		}
		if _, err := l.Take(context.Background(), "ven_bill", class); errs.As(err).Kind != errs.RateLimited {
			return nil, fmt.Errorf("the window of %d %ss admitted one more: %v", limit, class, err)
		}
		out[class] = float64(cs.writes) / float64(limit)
	}
	return out, nil
}

type counting struct {
	store.Store
	writes int
}

func (c *counting) Increment(ctx context.Context, k store.Key, attr string, by, max, expiresAt int64) (int64, error) {
	c.writes++
	return c.Store.Increment(ctx, k, attr, by, max, expiresAt)
}

// cost is one request's dollars per million by component.
type cost struct {
	rru, wru, dynamo, gateway, sqs, lambda, logs, xray float64
}

func (c cost) total() float64 { return c.dynamo + c.gateway + c.sqs + c.lambda + c.logs + c.xray }

// billedMS is a request's billed Lambda duration at a memory size: its
// sequential store waits, and its measured CPU (a whole core's) stretched
// by the share of a core that memory buys, rounded up to the millisecond.
func billedMS(o op, mb int) float64 {
	share := min(1, float64(mb)/fullCoreMB)
	return math.Ceil(o.m["waits/op"]*roundTripMS + o.m["cpu-us/op"]/1000/share)
}

func price(o op, windowWRU float64) cost {
	// The markers of the events a subscription receives (webhookShare):
	// the benchmark's vendor has none, so its writes carry no marker.
	rru, wru := o.m["rru/op"], o.m["wru/op"]+webhookShare*o.m["unmarked-wru/op"]+windowWRU
	ms := billedMS(o, memoryMB)
	logBytes := logBytes(o.m["log-B/op"])
	return cost{
		rru: rru, wru: wru,
		dynamo:  rru*readUnit + wru*writeUnit,
		gateway: httpAPI,
		lambda:  lambdaCost(ms),             // ms is billed, already whole
		logs:    logBytes * logsPerGB / 1e3, // bytes per request → $ per million requests
		xray:    traced * xrayTrace,
	}
}

func print(w io.Writer, ops []op, window map[ratelimit.Class]float64, bg map[string]float64) {
	sort.Slice(ops, func(i, j int) bool { return ops[i].name < ops[j].name })
	fmt.Fprintf(w, "The bill per million requests, in US dollars (%s)\n", pricesAsOf)
	fmt.Fprintf(w, "Rate window at the default allowances: %.2f write units a read, %.2f a write for a vendor using its whole window; 1 for a vendor's lone request.\n", window[ratelimit.Read], window[ratelimit.Write])
	fmt.Fprintf(w, "Lambda billed as %d MB for (sequential waits x %.0f ms + measured CPU at that size's share of a core); logs: the request line as measured + %d B (API Gateway's request id, the access log line; no platform lines at system level WARN); X-Ray: %.0f%% traced.\n", memoryMB, roundTripMS, int(logBytes(0)), traced*100)
	fmt.Fprintln(w, "Write units: each item of a transaction priced as AWS bills it (twice its size in KB, rounded up, per item), where DynamoDB Local reports the items' summed size.")
	fmt.Fprintf(w, "Pending markers: %.0f%% of events a subscription receives are written with their marker (the benchmark's vendor has none: the bill adds that share of the markers its writes left out); the others with none, and the router deletes none for them.\n", webhookShare*100)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| operation | read units | write units | DynamoDB | API Gateway | Lambda | Logs | X-Ray | all of AWS |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	var sum cost
	var weight float64
	for _, o := range ops {
		class := ratelimit.Read
		if writes[o.name] {
			class = ratelimit.Write
		}
		c := price(o, window[class])
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", o.name, c.rru, c.wru, c.dynamo, c.gateway, c.lambda, c.logs, c.xray, c.total())
		share := mix[o.name]
		weight += share
		sum.rru += share * c.rru
		sum.wru += share * c.wru
		sum.dynamo += share * c.dynamo
		sum.gateway += share * c.gateway
		sum.lambda += share * c.lambda
		sum.logs += share * c.logs
		sum.xray += share * c.xray
	}
	if weight > 0 {
		fmt.Fprintf(w, "| **mix** (80%% reads: 20 get-vendor, 30 get-product, 30 list-inventory; 20%% writes: 5 create-product, 10 adjust-inventory, 5 reserve) | %.2f | %.2f | **%.2f** | %.2f | %.2f | %.2f | %.2f | **%.2f** |\n",
			sum.rru/weight, sum.wru/weight, sum.dynamo/weight, sum.gateway/weight, sum.lambda/weight, sum.logs/weight, sum.xray/weight, sum.total()/weight)
	}
	var full float64 // the mix in all of AWS, its background work included when measured
	if weight > 0 {
		full = sum.total() / weight
	}
	if weight > 0 && bg != nil {
		router, delivery := backgroundCost(bg)
		var writeShare float64
		for name, share := range mix {
			if writes[name] {
				writeShare += share
			}
		}
		fmt.Fprintf(w, "\nThe background work a write starts (BenchmarkEventWork on DynamoDB Local; one event a write, %.0f%% of events delivered to one webhook that answers in %.0f ms, one invocation per record and per message; the router deletes the pending marker of the delivered share only; the SQS column holds the send, receive and delete, %.1f requests a delivery):\n", webhookShare*100, receiverMS, deliverySQS(subscriptionsPerEvent))
		fmt.Fprintln(w, "| part | read units | write units | DynamoDB | SQS | Lambda | Logs | all |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
		for _, p := range []struct {
			name string
			c    cost
		}{{"stream router, per event", router}, {"webhook delivery, per delivery", delivery}} {
			fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", p.name, p.c.rru, p.c.wru, p.c.dynamo, p.c.sqs, p.c.lambda, p.c.logs, p.c.total())
		}
		perWrite := router.total() + webhookShare*delivery.total()
		perWriteDynamo := router.dynamo + webhookShare*delivery.dynamo
		fmt.Fprintf(w, "Per write: %.2f (DynamoDB %.2f); on the mix (%.0f%% writes): +%.2f, the mix **%.2f** in DynamoDB and **%.2f** in all of AWS with its background work.\n",
			perWrite, perWriteDynamo, writeShare*100, writeShare*perWrite, sum.dynamo/weight+writeShare*perWriteDynamo, sum.total()/weight+writeShare*perWrite)
		full += writeShare * perWrite
		fmt.Fprintf(w, "The router sends ten delivery messages to a SendMessageBatch: with one subscription an event (the mix) a delivery's send is still one request; a vendor with 20 subscriptions pays %.0f send requests an event where it paid 20 (SQS %.2f a million deliveries, not %.2f).\n",
			sendRequests(20), deliverySQS(20)*sqsRequest, 3*sqsRequest)
	}
	if weight > 0 {
		edge := cloudFrontHTTPS + wafRequest
		fmt.Fprintf(w, "\nprod serves through its edge (CloudFront and AWS WAF, issue 25): +%.2f a request-million (CloudFront HTTPS requests %.2f, WAF requests %.2f), the mix **%.2f** in all of AWS; the web ACL's monthly fees and CloudFront's transfer out (about 0.09 per KB of response) are not in it.\n",
			edge, cloudFrontHTTPS, wafRequest, full+edge)
	}
	fmt.Fprintln(w, "\nNot in the figures: free tiers, the SQS event source mappings' empty long polls (a fixed monthly cost per queue, not per request), the sweep's schedule, and retries of failing receivers.")
	if weight > 0 {
		memoryChoice(w, ops)
	}
}

// memoryChoice prints what the mix's requests would take and cost in
// Lambda at each memory size: the CPU share a size buys against the
// GB-seconds it bills.
func memoryChoice(w io.Writer, ops []op) {
	fmt.Fprintln(w, "\nLambda memory for the API functions, the mix (CPU measured on a whole core, stretched by the share each size buys):")
	fmt.Fprintln(w, "| memory MB | mean billed ms | slowest op billed ms | Lambda $ per million |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, mb := range []int{256, 512, 1024, 1769} {
		var mean, slowest, weight float64
		for _, o := range ops {
			ms := billedMS(o, mb)
			mean += mix[o.name] * ms
			weight += mix[o.name]
			slowest = max(slowest, ms)
		}
		mean /= weight
		fmt.Fprintf(w, "| %d | %.1f | %.0f | %.2f |\n", mb, mean, slowest, lambdaRequest+1e6*mean/1000*float64(mb)/1024*lambdaGBSecond)
	}
}
