// Command lambdarun runs a function's bootstrap binary the way Lambda's
// provided runtimes do: it serves the Lambda Runtime API on a loopback port,
// starts the binary with AWS_LAMBDA_RUNTIME_API pointing at it, hands it one
// event, prints the response and stops it. `make invoke` uses it, and so
// does docs/performance.md's start-to-first-response measurement (-n).
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
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/moku/sellerapi/scripts/internal/lambdaruntime"
	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
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
	var st store.Store
	if cfg.Store == config.StoreSQLite {
		st, err = sqlite.Open(cfg.DataDir, sqlite.WithClock(clock.System{}.Now))
	} else {
		st, err = awsapp.OpenDynamoDB(ctx, cfg, clock.System{})
	}
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var b [4]byte
	_, _ = rand.Read(b[:])
	v, err := account.Service{Store: st, Clock: clock.System{}}.Create(ctx, "Invoke Vendor", "invoke-"+hex.EncodeToString(b[:]))
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

// invoke starts bin as a fresh process (scripts/internal/lambdaruntime,
// the Runtime API scripts/cloud runs its warm functions on), serves it
// event and returns its answer and how long it took, measured from just
// before the process starts: to its first request for an event (ready:
// init done) and to its response.
func invoke(ctx context.Context, bin string, event []byte, timeout time.Duration, stderr io.Writer) (result, error) {
	env := os.Environ()
	if os.Getenv("AWS_REGION") == "" {
		env = append(env, "AWS_REGION=us-east-1")
	}
	name := filepath.Base(bin)
	p, err := lambdaruntime.Start(ctx, lambdaruntime.Spec{
		Name: name, ARN: "arn:aws:lambda:us-east-1:123456789012:function:" + name,
		Bin: bin, Env: env, Memory: 512, Logs: stderr,
	})
	if err != nil {
		return result{}, err
	}
	defer p.Stop()
	out, err := p.Invoke(ctx, event, time.Now().Add(timeout))
	if err != nil {
		return result{}, fmt.Errorf("%s gave no answer: %w", bin, err)
	}
	r := result{body: out.Body, failed: out.Failed, response: time.Since(p.Started)}
	r.ready = r.response // an init error: it never asked for an event
	if !p.Ready.IsZero() {
		r.ready = p.Ready.Sub(p.Started)
	}
	return r, nil
}
