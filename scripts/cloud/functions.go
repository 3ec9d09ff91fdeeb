package main

// The functions: a pool of warm processes per function, each an execution
// environment that serves one invocation at a time, started when every
// warm one is busy (a cold start) and reused afterwards.

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/moku/sellerapi/scripts/internal/lambdaruntime"
)

// Functions invokes the template's functions.
type Functions struct {
	tpl  *Template
	env  []string          // the process environment every function shares
	over map[string]string // variables the runner's flags set on every function
	logs io.Writer
	dir  string // extracted code
	ctx  context.Context

	mu    sync.Mutex
	pools map[string]*pool
	// kill, when set, says whether to kill the process of an invocation
	// of the function it names, and after how long (faults.go).
	kill func(name string, payload []byte) (time.Duration, bool)
	// trace, when set, gets a line per invocation (trace.go).
	trace *Trace
}

type pool struct {
	fn    *Function
	bin   string
	mu    sync.Mutex
	idle  []*lambdaruntime.Process
	all   []*lambdaruntime.Process
	busy  int // invocations under way, held to fn.Reserved
	cold  []time.Duration
	warm  []time.Duration
	ready []time.Duration
}

// FunctionError is an invocation that failed: the function's own error
// document, a timeout or a crash.
type FunctionError struct {
	Function string
	Message  string
}

func (e *FunctionError) Error() string { return e.Function + ": " + e.Message }

// NewFunctions prepares every function of tpl: its code is taken from the
// cloud assembly (a directory or a zip holding bootstrap).
func NewFunctions(ctx context.Context, tpl *Template, env []string, over map[string]string, logs io.Writer, dir string) (*Functions, error) {
	fs := &Functions{tpl: tpl, env: env, over: over, logs: logs, dir: dir, ctx: ctx, pools: map[string]*pool{}}
	for id, f := range tpl.Functions {
		bin, err := extract(f, filepath.Join(dir, f.Name))
		if err != nil {
			return nil, fmt.Errorf("function %s (%s): %w", f.Name, id, err)
		}
		fs.pools[id] = &pool{fn: f, bin: bin}
	}
	return fs, nil
}

func extract(f *Function, dir string) (string, error) {
	st, err := os.Stat(f.Asset)
	if err != nil {
		return "", fmt.Errorf("code asset: %w", err)
	}
	if st.IsDir() {
		return filepath.Join(f.Asset, "bootstrap"), nil
	}
	zr, err := zip.OpenReader(f.Asset)
	if err != nil {
		return "", fmt.Errorf("code asset %s: %w", f.Asset, err)
	}
	defer zr.Close()
	for _, zf := range zr.File {
		if zf.Name != "bootstrap" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		in, err := zf.Open()
		if err != nil {
			return "", err
		}
		defer in.Close()
		bin := filepath.Join(dir, "bootstrap")
		out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return "", err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return "", err
		}
		return bin, out.Close()
	}
	return "", fmt.Errorf("code asset %s has no bootstrap", f.Asset)
}

// Invoke runs one event through the function (a logical id) and returns
// its response document, or a *FunctionError.
func (fs *Functions) Invoke(ctx context.Context, id string, payload []byte) ([]byte, error) {
	p := fs.pools[id]
	if p == nil {
		return nil, fmt.Errorf("no function %s in the template", id)
	}
	if len(payload) > 6*1024*1024 {
		return nil, &FunctionError{Function: p.fn.Name, Message: fmt.Sprintf("request payload of %d bytes exceeds Lambda's 6 MB synchronous limit", len(payload))}
	}
	if !p.enter() {
		return nil, &FunctionError{Function: p.fn.Name, Message: fmt.Sprintf("TooManyRequestsException: Rate Exceeded (reserved concurrency %d)", p.fn.Reserved)}
	}
	defer p.leave()
	called := time.Now()
	proc, cold, err := fs.acquire(p)
	if err != nil {
		return nil, &FunctionError{Function: p.fn.Name, Message: err.Error()}
	}
	if fs.kill != nil {
		if after, ok := fs.kill(p.fn.Name, payload); ok {
			time.AfterFunc(after, proc.Stop) // SIGKILL, as a crash or Lambda's timeout
		}
	}
	start := time.Now()
	out, err := proc.Invoke(ctx, payload, start.Add(p.fn.Timeout))
	took := time.Since(start)
	fs.trace.write(TraceLine{Kind: "invoke", Function: p.fn.Name, Cold: cold, Start: ms(called), Took: msOf(time.Since(called)), Failed: err != nil || out.Failed})
	if err != nil {
		p.drop(proc)
		if errors.Is(err, lambdaruntime.ErrTimeout) {
			return nil, &FunctionError{Function: p.fn.Name, Message: fmt.Sprintf("Task timed out after %s", p.fn.Timeout)}
		}
		return nil, &FunctionError{Function: p.fn.Name, Message: err.Error()}
	}
	p.release(proc, cold, took)
	if out.Failed {
		var doc struct{ ErrorMessage, ErrorType string }
		_ = json.Unmarshal(out.Body, &doc)
		return nil, &FunctionError{Function: p.fn.Name, Message: fmt.Sprintf("%s: %s", doc.ErrorType, doc.ErrorMessage)}
	}
	return out.Body, nil
}

func (fs *Functions) acquire(p *pool) (*lambdaruntime.Process, bool, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		proc := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		select {
		case <-proc.Exited():
			continue
		default:
		}
		p.mu.Unlock()
		return proc, false, nil
	}
	p.mu.Unlock()
	env := slices.Clone(fs.env)
	for k, v := range p.fn.Env {
		if _, set := fs.over[k]; !set {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range fs.over {
		env = append(env, k+"="+v)
	}
	proc, err := lambdaruntime.Start(fs.ctx, lambdaruntime.Spec{
		Name:   p.fn.Name,
		ARN:    "arn:aws:lambda:" + region() + ":" + localAccount + ":function:" + p.fn.Name,
		Bin:    p.bin,
		Env:    env,
		Memory: p.fn.Memory,
		Logs:   &prefixed{to: fs.logs, prefix: "[" + p.fn.Name + "] "},
	})
	if err != nil {
		return nil, false, err
	}
	p.mu.Lock()
	p.all = append(p.all, proc)
	p.mu.Unlock()
	return proc, true, nil
}

// enter counts an invocation in, unless the function's reserved
// concurrency is taken.
func (p *pool) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fn.Reserved > 0 && p.busy >= p.fn.Reserved {
		return false
	}
	p.busy++
	return true
}

func (p *pool) leave() {
	p.mu.Lock()
	p.busy--
	p.mu.Unlock()
}

func (p *pool) release(proc *lambdaruntime.Process, cold bool, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cold {
		p.cold = append(p.cold, time.Since(proc.Started))
		if !proc.Ready.IsZero() {
			p.ready = append(p.ready, proc.Ready.Sub(proc.Started))
		}
	} else {
		p.warm = append(p.warm, took)
	}
	p.idle = append(p.idle, proc)
}

func (p *pool) drop(proc *lambdaruntime.Process) {
	proc.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.all = slices.DeleteFunc(p.all, func(x *lambdaruntime.Process) bool { return x == proc })
}

// Close stops every process.
func (fs *Functions) Close() {
	for _, p := range fs.pools {
		p.mu.Lock()
		all := slices.Clone(p.all)
		p.all, p.idle = nil, nil
		p.mu.Unlock()
		for _, proc := range all {
			proc.Stop()
		}
	}
}

// Latency is one function's measured invocation times: a cold one from
// the process's start to its response, a warm one from the event's hand-over
// to the response.
type Latency struct {
	Function          string
	Cold, Warm, Ready []time.Duration
}

// Latencies reports what was measured, by function name.
func (fs *Functions) Latencies() []Latency {
	var out []Latency
	for _, p := range fs.pools {
		p.mu.Lock()
		if len(p.cold)+len(p.warm) > 0 {
			out = append(out, Latency{Function: p.fn.Name, Cold: slices.Clone(p.cold), Warm: slices.Clone(p.warm), Ready: slices.Clone(p.ready)})
		}
		p.mu.Unlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Function < out[j].Function })
	return out
}

// FormatLatencies is the table serve prints when it stops.
func FormatLatencies(ls []Latency) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-36s %6s %12s %12s %6s %12s %12s\n", "function", "cold", "init p50", "cold p50", "warm", "warm p50", "warm p99")
	for _, l := range ls {
		fmt.Fprintf(&b, "%-36s %6d %12s %12s %6d %12s %12s\n", l.Function, len(l.Cold), pct(l.Ready, 50), pct(l.Cold, 50), len(l.Warm), pct(l.Warm, 50), pct(l.Warm, 99))
	}
	return b.String()
}

func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "-"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(100 * time.Microsecond).String()
}

// prefixed writes each line with a prefix.
type prefixed struct {
	mu     sync.Mutex
	to     io.Writer
	prefix string
}

func (w *prefixed) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line != "" {
			io.WriteString(w.to, w.prefix+line)
		}
	}
	return len(b), nil
}

func region() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return "us-east-1"
}
