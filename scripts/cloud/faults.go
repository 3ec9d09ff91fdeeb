package main

// Faults and tuning, for proving that the deployed shape loses nothing
// when parts of it fail. A serve reads its faults from files in
// <data>/faults/, so that a test (or a developer) switches them on and off
// while it runs:
//
//	refuse-sqs-sends   while it exists, the SQS endpoint the functions use
//	                   refuses SendMessage and SendMessageBatch (503), as SQS
//	                   does in an outage; receives and deletes still work.
//	kill-<function>    the next invocation of the function whose name ends
//	                   in -<function> is killed with SIGKILL after the number
//	                   of milliseconds the file holds (Lambda's view of a
//	                   crash or a timeout); the file is then removed. After
//	                   the number, a word limits it to invocations whose
//	                   event contains it ("0 Records": a stream batch).
//	cap-sqs-delay      while it exists, every send's DelaySeconds above the
//	                   number of seconds the file holds is lowered to it, and
//	                   each lowered send is logged ("fault: send delay
//	                   capped", with the queue): a worker's 15-minute hops
//	                   of a long wait come every second, so that a wait of
//	                   hours shows its whole chain of hops in seconds.
//
// The tuning flags shorten the waits the template sets, so that the
// recovery it promises is seen in seconds: the stream router's sweep
// schedule and grace period, and the queues' visibility timeouts.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// faults reads the fault switches of a serve's data directory.
type faults struct {
	dir string
	log *slog.Logger
}

func newFaults(data string, log *slog.Logger) (faults, error) {
	f := faults{dir: filepath.Join(data, "faults"), log: log}
	return f, os.MkdirAll(f.dir, 0o755)
}

func (f faults) on(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil
}

// killAfter consumes the kill switch of the function called fnName, if set
// for an event like payload, and returns its delay.
func (f faults) killAfter(fnName string, payload []byte) (time.Duration, bool) {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		short, ok := strings.CutPrefix(e.Name(), "kill-")
		if !ok || !strings.HasSuffix(fnName, "-"+short) {
			continue
		}
		p := filepath.Join(f.dir, e.Name())
		b, _ := os.ReadFile(p)
		words := strings.Fields(string(b))
		if len(words) > 1 && !bytes.Contains(payload, []byte(words[1])) {
			continue
		}
		if os.Remove(p) != nil {
			return 0, false // another invocation took it
		}
		ms := 0
		if len(words) > 0 {
			ms, _ = strconv.Atoi(words[0])
		}
		f.log.Warn("fault: killing the next invocation", "function", fnName, "after_ms", ms)
		return time.Duration(ms) * time.Millisecond, true
	}
	return 0, false
}

// sqsSend tells whether r sends messages (JSON or query protocol).
func sqsSend(r *http.Request, body []byte) bool {
	switch r.Header.Get("X-Amz-Target") {
	case "AmazonSQS.SendMessage", "AmazonSQS.SendMessageBatch":
		return true
	}
	return bytes.Contains(body, []byte("Action=SendMessage"))
}

// delayCap is the cap-sqs-delay switch's number of seconds, if it is on.
func (f faults) delayCap() (int64, bool) {
	b, err := os.ReadFile(filepath.Join(f.dir, "cap-sqs-delay"))
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 32)
	if err != nil || n < 0 {
		f.log.Warn("fault: cap-sqs-delay holds no number of seconds; ignored", "content", string(b))
		return 0, false
	}
	return n, true
}

// capDelays lowers every DelaySeconds of a send above secs to secs (JSON
// or query protocol). It returns the new body, the queue sent to, and how
// many messages it changed (0: body is unchanged).
func capDelays(r *http.Request, body []byte, secs int64) ([]byte, string, int) {
	if r.Header.Get("X-Amz-Target") == "" {
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return body, "", 0
		}
		n := 0
		for k, v := range form {
			if !strings.HasSuffix(k, "DelaySeconds") || len(v) != 1 {
				continue
			}
			if d, err := strconv.ParseInt(v[0], 10, 64); err == nil && d > secs {
				form.Set(k, strconv.FormatInt(secs, 10))
				n++
			}
		}
		if n == 0 {
			return body, "", 0
		}
		return []byte(form.Encode()), form.Get("QueueUrl"), n
	}
	var req map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if dec.Decode(&req) != nil {
		return body, "", 0
	}
	n := 0
	lower := func(m map[string]any) {
		d, ok := m["DelaySeconds"].(json.Number)
		if v, err := d.Int64(); ok && err == nil && v > secs {
			m["DelaySeconds"] = secs
			n++
		}
	}
	lower(req)
	entries, _ := req["Entries"].([]any)
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok {
			lower(m)
		}
	}
	if n == 0 {
		return body, "", 0
	}
	out, err := json.Marshal(req)
	if err != nil {
		return body, "", 0
	}
	queue, _ := req["QueueUrl"].(string)
	return out, queue, n
}

// sqsProxy serves the SQS emulator at target on loopback, refusing sends
// while refuse-sqs-sends is on and capping their delays while
// cap-sqs-delay is. It returns the proxy's endpoint.
func (f faults) sqsProxy(ctx context.Context, target string) (string, error) {
	u, err := url.Parse(target)
	if err != nil {
		return "", err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if f.on("refuse-sqs-sends") && sqsSend(r, body) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.Header().Set("x-amzn-query-error", "ServiceUnavailable;Receiver")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"fault: sends refused (refuse-sqs-sends)"}`)
			return
		}
		if secs, ok := f.delayCap(); ok && sqsSend(r, body) {
			if capped, queue, n := capDelays(r, body, secs); n > 0 {
				f.log.Info("fault: send delay capped", "queue", queue, "sends", n, "cap_seconds", secs)
				r.Body = io.NopCloser(bytes.NewReader(capped))
				r.ContentLength = int64(len(capped))
				r.Header.Set("Content-Length", strconv.Itoa(len(capped)))
			}
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

// tuning shortens the template's waits (zero: as the template says).
type tuning struct {
	sweepEvery, sweepGrace, maxVisibility time.Duration
}

func tuningFlags(fs *flag.FlagSet) *tuning {
	t := &tuning{}
	fs.DurationVar(&t.sweepEvery, "sweep-every", 0, "run the stream router's sweep this often instead of the template's rate (tests)")
	fs.DurationVar(&t.sweepGrace, "sweep-grace", 0, "the sweep's grace period instead of the service's (tests; whole seconds)")
	fs.DurationVar(&t.maxVisibility, "max-visibility", 0, "cap every queue's visibility timeout (tests: a killed worker's messages return sooner)")
	return t
}

// apply changes tpl before its resources are made and its sources run.
func (tu tuning) apply(tpl *Template) error {
	for i, sc := range tpl.Schedules {
		var in map[string]map[string]any
		if sc.Input == nil || json.Unmarshal(sc.Input, &in) != nil || in["sweep"] == nil {
			continue
		}
		if tu.sweepEvery > 0 {
			tpl.Schedules[i].Every = tu.sweepEvery
		}
		if tu.sweepGrace > 0 {
			in["sweep"]["grace_seconds"] = int(tu.sweepGrace.Seconds())
			b, err := json.Marshal(in)
			if err != nil {
				return err
			}
			tpl.Schedules[i].Input = b
		}
	}
	if tu.maxVisibility > 0 {
		for _, q := range tpl.Queues {
			q.VisibilityTimeout = min(q.VisibilityTimeout, tu.maxVisibility)
		}
	}
	return nil
}
