// Package lambdaruntime runs a function's bootstrap binary the way Lambda's
// provided runtimes do: a process with AWS_LAMBDA_RUNTIME_API pointing at a
// Runtime API served on a loopback port of its own, which hands it one
// event at a time and takes its response. A Process stays warm between
// invocations, like an execution environment; scripts/lambdarun uses one
// per cold start, scripts/cloud a pool per function.
package lambdaruntime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Spec is what a process runs.
type Spec struct {
	// Name is the function's name (AWS_LAMBDA_FUNCTION_NAME).
	Name string
	// ARN is the invoked function's ARN.
	ARN string
	// Bin is the bootstrap binary.
	Bin string
	// Env is the whole environment of the process, without the
	// AWS_LAMBDA_* variables Start adds.
	Env []string
	// Memory is AWS_LAMBDA_FUNCTION_MEMORY_SIZE, in MB.
	Memory int
	// Logs receives the process's standard output and error, line by line.
	Logs io.Writer
}

// Outcome is an invocation's answer.
type Outcome struct {
	Body []byte
	// Failed is set when the function reported an error (Body is its
	// errorMessage/errorType document).
	Failed bool
}

// ErrTimeout is the error of an invocation that ran past its deadline; the
// process is then stopped, as Lambda resets the execution environment.
var ErrTimeout = errors.New("task timed out")

// Process is one warm execution environment.
type Process struct {
	spec    Spec
	srv     *http.Server
	cmd     *exec.Cmd
	next    chan invocation
	answers chan answer
	exited  chan struct{}
	exitErr error
	initErr atomic.Pointer[answer]
	tail    *tail
	// Started is when the process was started; Ready when it first asked
	// for an event (its init done).
	Started time.Time
	ready   chan time.Time
	Ready   time.Time
	seq     atomic.Int64
}

type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
}

type answer struct {
	id     string
	body   []byte
	failed bool
}

// Start starts the process; it is ready for an invocation at once (the
// first one waits for its init).
func Start(ctx context.Context, spec Spec) (*Process, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Process{spec: spec, next: make(chan invocation), answers: make(chan answer, 1), exited: make(chan struct{}), tail: &tail{}, ready: make(chan time.Time, 1)}
	mux := http.NewServeMux()
	var asked atomic.Bool
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		if !asked.Swap(true) {
			p.ready <- time.Now()
		}
		var inv invocation
		select {
		case inv = <-p.next:
		case <-r.Context().Done():
			return
		case <-p.exited:
			return
		}
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", spec.ARN)
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
		h.Set("Content-Type", "application/json")
		w.Write(inv.payload)
	})
	reply := func(failed bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			select {
			case p.answers <- answer{id: r.PathValue("id"), body: b, failed: failed}:
			default:
			}
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", reply(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", reply(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		p.initErr.Store(&answer{body: b, failed: true})
	})
	p.srv = &http.Server{Handler: mux}
	go p.srv.Serve(ln)

	memory := spec.Memory
	if memory == 0 {
		memory = 128
	}
	// Not CommandContext: the process lives as long as the pool keeps it.
	cmd := exec.Command(spec.Bin)
	cmd.Env = append(append([]string{}, spec.Env...),
		"AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME="+spec.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(memory),
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"_HANDLER=bootstrap",
	)
	logs := spec.Logs
	if logs == nil {
		logs = io.Discard
	}
	out := &lineWriter{to: logs, tail: p.tail}
	cmd.Stdout, cmd.Stderr = out, out
	p.cmd = cmd
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		p.srv.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Bin, err)
	}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Invoke hands the process one event and waits for its answer until
// deadline. An error means the process is unusable (it exited, failed its
// init, or timed out and was stopped); a function error is an Outcome.
func (p *Process) Invoke(ctx context.Context, payload []byte, deadline time.Time) (Outcome, error) {
	inv := invocation{id: fmt.Sprintf("%s-%08d-0000-4000-8000-%012d", "c10d0000", p.seq.Add(1), time.Now().UnixNano()%1e12), payload: payload, deadline: deadline}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case p.next <- inv:
	case <-p.exited:
		return Outcome{}, p.deadErr()
	case <-timer.C:
		p.Stop()
		return Outcome{}, fmt.Errorf("%s: init did not finish by the deadline: %w", p.spec.Name, ErrTimeout)
	case <-ctx.Done():
		p.Stop()
		return Outcome{}, ctx.Err()
	}
	if p.Ready.IsZero() {
		select {
		case p.Ready = <-p.ready:
		default:
		}
	}
	for {
		select {
		case a := <-p.answers:
			if a.id != inv.id {
				continue // a late answer to an earlier invocation
			}
			return Outcome{Body: a.body, Failed: a.failed}, nil
		case <-p.exited:
			return Outcome{}, p.deadErr()
		case <-timer.C:
			p.Stop()
			return Outcome{}, fmt.Errorf("%s: %w after %s", p.spec.Name, ErrTimeout, time.Until(deadline).Round(time.Millisecond))
		case <-ctx.Done():
			p.Stop()
			return Outcome{}, ctx.Err()
		}
	}
}

func (p *Process) deadErr() error {
	msg := fmt.Sprintf("%s exited (%v)", p.spec.Name, p.exitErr)
	if ie := p.initErr.Load(); ie != nil {
		msg = fmt.Sprintf("%s failed its init: %s", p.spec.Name, ie.body)
	}
	if t := p.tail.String(); t != "" {
		msg += "; its last output:\n" + t
	}
	return errors.New(msg)
}

// Exited is closed when the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Stop kills the process and its Runtime API and waits for it to exit.
func (p *Process) Stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	<-p.exited
	p.srv.Close()
}

// lineWriter copies whole lines to a writer and keeps the last ones.
type lineWriter struct {
	mu   sync.Mutex
	to   io.Writer
	buf  []byte
	tail *tail
}

func (w *lineWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := strings.IndexByte(string(w.buf), '\n')
		if i < 0 {
			break
		}
		line := w.buf[:i+1]
		w.to.Write(line)
		w.tail.add(string(line))
		w.buf = w.buf[i+1:]
	}
	return len(b), nil
}

// tail keeps the last lines a process wrote, for error messages.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > 10 {
		t.lines = t.lines[len(t.lines)-10:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString("  " + l)
	}
	return b.String()
}
