// Command loadtest runs a multi-tenant load against a server it starts on
// loopback, functions/local (bin/local) by default or the deployed shape
// (bin/cloud, from `make cloud`) with -cli: hundreds of vendors, each
// staying within its one-minute allowances, a share of them with a webhook
// subscription to a fast loopback receiver, and a few hostile ones:
// vendors whose 20 subscriptions point at a tarpit that answers 500 after
// 19 s, forged bearers naming the well-behaved vendors, and crafted
// progressive JPEGs whose scans code one band again and again. It prints
// what the well-behaved vendors saw (API p50/p99 overall and for the worst
// vendor, 429s and 5xx, delivery p50/p99 and events never delivered) and
// the server's CPU and memory per 1,000 requests, as a Markdown table.
//
//	loadtest [-cli bin/local] [-vendors 200] [-duration 3m] [-check]
//
// All traffic stays on 127.0.0.1: the server, its webhook receivers and
// the load. Request loops are bounded by -duration and stop by themselves.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"time"
)

type options struct {
	cli        string
	vendors    int
	subscribed float64
	tarpits    int
	forgers    int
	forgeRate  int
	crafted    int
	duration   time.Duration
	drain      time.Duration
	reads      int
	writes     int
	warmup     time.Duration
	check      bool
	keep       bool
	serveArgs  string
}

func main() {
	var o options
	flag.StringVar(&o.cli, "cli", "bin/local", "the server's binary: bin/local (functions/local) or bin/cloud (the deployed shape)")
	flag.IntVar(&o.vendors, "vendors", 200, "well-behaved vendors")
	flag.Float64Var(&o.subscribed, "subscribed", 0.3, "share of well-behaved vendors with a webhook subscription")
	flag.IntVar(&o.tarpits, "tarpits", 3, "hostile vendors with 20 subscriptions each to a tarpit receiver, writing at their limit (every other write a replay of their latest event)")
	flag.IntVar(&o.forgers, "forgers", 2, "goroutines sending forged bearers that name well-behaved vendors")
	flag.IntVar(&o.forgeRate, "forge-rate", 50, "forged requests a second, per forger")
	flag.IntVar(&o.crafted, "crafted", 1, "hostile vendors uploading a crafted progressive JPEG every 10 s")
	flag.DurationVar(&o.duration, "duration", 3*time.Minute, "how long the load runs")
	flag.DurationVar(&o.warmup, "warmup", 20*time.Second, "how long the same load runs first, not counted: the processes, pools and connections a fresh server starts")
	flag.DurationVar(&o.drain, "drain", 70*time.Second, "how long to wait for deliveries after the load (also lets the rate windows roll over before the final reads)")
	flag.IntVar(&o.reads, "reads", 40, "reads a minute per well-behaved vendor (the allowance is 60)")
	flag.IntVar(&o.writes, "writes", 8, "writes a minute per well-behaved vendor (the allowance is 12)")
	flag.BoolVar(&o.check, "check", false, "exit 1 when a goal is missed (0 429s and 5xx, delivery p99 < 2 s, 0 undelivered, forged bearers all 401)")
	flag.BoolVar(&o.keep, "keep", false, "keep the data directory")
	flag.StringVar(&o.serveArgs, "serve-args", "", "more serve flags, space-separated")
	flag.Parse()

	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := run(ctx, log, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
	r.print(os.Stdout, o)
	if o.check {
		if missed := r.missed(); len(missed) > 0 {
			for _, m := range missed {
				fmt.Fprintln(os.Stderr, "loadtest: goal missed:", m)
			}
			os.Exit(1)
		}
	}
}
