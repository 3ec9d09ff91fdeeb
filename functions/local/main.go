// Command local runs the whole Seller Platform API in one process on an
// embedded store (or on DynamoDB with --store dynamodb), and administers
// vendors and tokens on the same data directory while a server runs.
//
//	local [serve] --addr 127.0.0.1:8080 --data DIR [--rate-reads N] [--rate-writes N] [--allow-private-webhooks]
//	local vendor create --data DIR --name NAME --slug SLUG
//	local vendor set-owner --data DIR --id VENDOR_ID [--owner OWNER_ID]
//	local token issue --data DIR --vendor ID --scopes a,b|all [--expires-in 1h]
//	local token revoke --data DIR --id TOKEN_ID
//	local pairing review --data DIR --id PAIRING_ID [--reviewer NAME]
//	local cursor-key rotate --data DIR
//	local listen [--events a,b|*] [--forward-to URL] [--print-json] [--sqs QUEUE_URL [--secret S]] [--base URL] [--token T] [--vendor V]
//	local trigger TYPE [--base URL] [--token T] [--vendor V]
//
// listen and trigger are clients of a running server (through
// shared/client): listen subscribes a forwarder for event types (or, with
// --sqs, an SQS queue it receives from) and prints or forwards each
// verified delivery, removing its subscription on exit;
// trigger makes a real change that writes an event of TYPE.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/cmdline"
	"github.com/moku/sellerapi/shared/config"
)

func main() { runner().Main() }

func runner() cmdline.Runner {
	return cmdline.Runner{Serve: serve, Admin: admin, More: map[string]cmdline.Command{
		"listen":  func(ctx context.Context, args []string, stdout, _ io.Writer) error { return listen(ctx, args, stdout) },
		"trigger": func(ctx context.Context, args []string, stdout, _ io.Writer) error { return trigger(ctx, args, stdout) },
	}}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runner().Run(ctx, args, stdout, stderr)
}

// storeFlags are the flags every subcommand takes to find its store.
func storeFlags(fs *flag.FlagSet, cfg *config.Config) {
	fs.StringVar(&cfg.DataDir, "data", cfg.DataDir, "data directory of the embedded store")
	fs.StringVar(&cfg.Store, "store", cfg.Store, "store: sqlite or dynamodb")
	fs.StringVar(&cfg.Table, "table", cfg.Table, "DynamoDB table (also "+config.EnvTable+")")
}

func baseConfig() (config.Config, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return cfg, err
	}
	return cfg, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := baseConfig()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address")
	storeFlags(fs, &cfg)
	fs.IntVar(&cfg.RateReads, "rate-reads", cfg.RateReads, "reads per vendor per minute")
	fs.IntVar(&cfg.RateWrites, "rate-writes", cfg.RateWrites, "writes per vendor per minute")
	fs.BoolVar(&cfg.AllowPrivateWebhooks, "allow-private-webhooks", false, "let webhooks use plain http, any port and loopback addresses (127.0.0.0/8, ::1); other private addresses stay refused (local tests only)")
	baseURL := fs.String("base-url", "", "public base URL (default http://ADDR/v1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Listen first, so that --addr 127.0.0.1:0 reports the port it got.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	if *baseURL != "" {
		cfg.BaseURL = *baseURL
	} else if os.Getenv(config.EnvBaseURL) == "" {
		cfg.BaseURL = "http://" + ln.Addr().String() + "/v1"
		cfg.ErrorsURL = ""
	}
	a, err := open(ctx, cfg, stderr, true)
	if err != nil {
		return err
	}
	defer a.Close()

	if demo, ok, err := a.EnsureDemo(ctx); err != nil {
		return err
	} else if ok {
		printDemo(stdout, a.Config.BaseURL, demo)
	}
	h, err := a.Handler(ctx, app.AllGroups()...)
	if err != nil {
		return err
	}
	a.Log.Info("serving", "addr", ln.Addr().String(), "base_url", a.Config.BaseURL, "store", a.Config.Store)
	fmt.Fprintf(stdout, "Seller Platform API listening on %s\n", a.Config.BaseURL)

	go a.RunBackground(ctx, time.Second)
	return cmdline.Serve(ctx, ln, h)
}

func printDemo(w io.Writer, baseURL string, d app.Demo) {
	fmt.Fprintf(w, `First start on an empty store: created a demo vendor and a token with every scope.
  vendor id: %s
  token:     %s   (shown only now; issue more with "token issue")

Try it:
  curl -s -H "Authorization: Bearer %s" %s/vendors
  curl -s -H "Authorization: Bearer %s" %s/vendors/%s

`, d.Vendor.ID, d.Token.Token, d.Token.Token, baseURL, d.Token.Token, baseURL, d.Vendor.ID)
}

// admin runs one administrative command, as the admin Lambda does, on the
// store the flags name.
func admin(ctx context.Context, c cmdline.Admin, args []string, stdout io.Writer) error {
	cfg, err := baseConfig()
	if err != nil {
		return err
	}
	req, err := c.Parse(args, func(fs *flag.FlagSet) { storeFlags(fs, &cfg) })
	if err != nil {
		return err
	}
	a, err := open(ctx, cfg, io.Discard, false)
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.Services.Admin.Do(ctx, req)
	if err != nil {
		return err
	}
	if res.Error != nil {
		return fmt.Errorf("%s: %s", res.Error.Code, res.Error.Detail)
	}
	return cmdline.PrintData(stdout, res.Data)
}
