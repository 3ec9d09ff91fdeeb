// Command lambdarun runs a function's bootstrap binary the way Lambda's
// provided runtimes do: it serves the Lambda Runtime API on a loopback port,
// starts the binary with AWS_LAMBDA_RUNTIME_API pointing at it, hands it one
// event, prints the response and stops it. `make invoke` uses it, and so
// does the README's start-to-first-response measurement (-n).
//
//	lambdarun [-data DIR] [-n N] BINARY EVENT.json
//
// The binary inherits the environment, so SELLERAPI_* and AWS_ENDPOINT_URL*
// choose its store; without SELLERAPI_STORE it runs on the embedded store
// in DIR (default: a fresh temporary directory).
//
// Each {{KEY}} in the event is replaced by the environment variable KEY.
// When VENDOR_ID, TOKEN or TOKEN_ID is wanted and not given, lambdarun
// first creates a vendor and a token with every scope in the same store and
// fills those in (it says so on standard error).
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/vendor"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "lambdarun:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("lambdarun", flag.ContinueOnError)
	data := fs.String("data", "", "embedded store directory when SELLERAPI_STORE is unset (default: a fresh temporary one)")
	n := fs.Int("n", 1, "cold starts to run and time (each a new process); the response is printed once")
	timeout := fs.Duration("timeout", 30*time.Second, "the invocation's deadline")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: lambdarun [-data DIR] [-n N] BINARY EVENT.json")
	}
	bin, eventPath := fs.Arg(0), fs.Arg(1)
	if os.Getenv(config.EnvStore) == "" {
		if *data == "" {
			dir, err := os.MkdirTemp("", "lambdarun-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			*data = dir
		}
		os.Setenv(config.EnvStore, config.StoreSQLite)
		os.Setenv(config.EnvDataDir, *data)
	}
	raw, err := os.ReadFile(eventPath)
	if err != nil {
		return err
	}
	event, err := fill(ctx, string(raw), stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", eventPath, err)
	}

	var ready, first []time.Duration
	for i := 0; i < *n; i++ {
		// The function's own logs are shown for the first run only.
		logs := stderr
		if i > 0 {
			logs = io.Discard
		}
		r, err := invoke(ctx, bin, []byte(event), *timeout, logs)
		if err != nil {
			return err
		}
		ready, first = append(ready, r.ready), append(first, r.response)
		if i == 0 {
			if r.failed {
				fmt.Fprintf(stderr, "the function returned an error:\n")
			}
			var pretty bytes.Buffer
			if json.Indent(&pretty, r.body, "", "  ") != nil {
				pretty.Reset()
				pretty.Write(r.body)
			}
			fmt.Fprintln(stdout, pretty.String())
		}
	}
	fmt.Fprintf(stderr, "%s: start to ready %s, start to first response %s", filepath.Base(bin), stat(ready), stat(first))
	if *n > 1 {
		fmt.Fprintf(stderr, " (median of %d cold starts)", *n)
	}
	fmt.Fprintln(stderr)
	return nil
}

func stat(ds []time.Duration) string {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	med := s[len(s)/2]
	if len(s) == 1 {
		return med.Round(100 * time.Microsecond).String()
	}
	return fmt.Sprintf("%s [%s..%s]", med.Round(100*time.Microsecond), s[0].Round(100*time.Microsecond), s[len(s)-1].Round(100*time.Microsecond))
}

var placeholder = regexp.MustCompile(`\{\{([A-Z0-9_]+)\}\}`)

// fill replaces each {{KEY}} with $KEY, seeding a vendor and a token when
// the event wants one that the environment does not give.
func fill(ctx context.Context, event string, log io.Writer) (string, error) {
	vars := map[string]string{}
	var missing []string
	for _, m := range placeholder.FindAllStringSubmatch(event, -1) {
		k := m[1]
		if _, done := vars[k]; done {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			vars[k] = v
		} else if !slices.Contains(missing, k) {
			missing = append(missing, k)
		}
	}
	var seedable = []string{"VENDOR_ID", "TOKEN", "TOKEN_ID"}
	var rest []string
	for _, k := range missing {
		if !slices.Contains(seedable, k) {
			rest = append(rest, k)
		}
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("the event needs %s: pass them as KEY=value (e.g. make invoke ... %s=...)", strings.Join(rest, ", "), rest[0])
	}
	if len(missing) > 0 {
		seeded, err := seed(ctx)
		if err != nil {
			return "", err
		}
		for _, k := range missing {
			vars[k] = seeded[k]
		}
		fmt.Fprintf(log, "created vendor %s and token %s (every scope) for the event's %s\n", seeded["VENDOR_ID"], seeded["TOKEN_ID"], strings.Join(missing, ", "))
	}
	return placeholder.ReplaceAllStringFunc(event, func(m string) string { return vars[m[2:len(m)-2]] }), nil
}

// seed creates a vendor and a token in the store the function will use.
func seed(ctx context.Context) (map[string]string, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, err
	}
	st, err := app.OpenStore(ctx, cfg, clock.System{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	v, err := vendor.Service{Store: st, Clock: clock.System{}}.Create(ctx, "Invoke Vendor", "invoke-"+hex.EncodeToString(b[:]))
	if err != nil {
		return nil, fmt.Errorf("seed vendor: %w", err)
	}
	tok, err := auth.Service{Store: st, Clock: clock.System{}}.Issue(ctx, v.ID, auth.AllScopes(), 0)
	if err != nil {
		return nil, fmt.Errorf("seed token: %w", err)
	}
	return map[string]string{"VENDOR_ID": v.ID, "TOKEN": tok.Token, "TOKEN_ID": tok.ID}, nil
}

type result struct {
	body            []byte
	failed          bool
	ready, response time.Duration
}

// invoke starts bin as a fresh process, serves it event through the
// Runtime API and returns its answer and how long it took, measured from
// just before the process starts: to its first request for an event
// (ready: init done) and to its response.
func invoke(ctx context.Context, bin string, event []byte, timeout time.Duration, stderr io.Writer) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	const requestID = "8476a536-e9f4-11e8-9739-2dfe598c3fcd"
	type answer struct {
		body   []byte
		failed bool
		at     time.Time
	}
	answers := make(chan answer, 1)
	readyAt := make(chan time.Time, 1)
	var served atomic.Bool
	stop := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		if served.Swap(true) {
			// One event per process: the next poll waits until we stop it.
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		readyAt <- time.Now()
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", requestID)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(timeout).UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:"+filepath.Base(bin))
		h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
		w.Header().Set("Content-Type", "application/json")
		w.Write(event)
	})
	reply := func(failed bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			select {
			case answers <- answer{body: b, failed: failed, at: time.Now()}:
			default:
			}
		}
	}
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", reply(false))
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", reply(true))
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", reply(true))
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	defer close(stop)

	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(os.Environ(),
		"AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME="+filepath.Base(bin),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512",
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
	)
	if os.Getenv("AWS_REGION") == "" {
		cmd.Env = append(cmd.Env, "AWS_REGION=us-east-1")
	}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	exited := make(chan error, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()

	var r result
	select {
	case a := <-answers:
		r.body, r.failed, r.response = a.body, a.failed, a.at.Sub(start)
	case err := <-exited:
		exited <- err // for the deferred wait
		return r, fmt.Errorf("%s exited before answering: %v", bin, err)
	case <-time.After(timeout):
		return r, fmt.Errorf("%s gave no answer within %s", bin, timeout)
	}
	select {
	case at := <-readyAt:
		r.ready = at.Sub(start)
	default:
		r.ready = r.response // an init error: it never asked for an event
	}
	return r, nil
}
