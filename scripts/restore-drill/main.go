// Command restore-drill restores the service's DynamoDB table as it was at
// a point in time, under a new name, makes it ready to serve, and reads it
// the way the API does, printing how many minutes each part took. It is
// the drill of the recovery runbook (docs/operations.md, "Restoring the
// table"): run it on a schedule, and for real when data was lost.
//
//	restore-drill [-table NAME] [-at 2026-03-04T10:00:00Z] [-target NAME] [-vendor ID] [-from-scan]
//
// It restores with RestoreTableToPointInTime (the latest restorable time
// when -at is not given) under -target (default NAME-restore-YYYYMMDD-HHMM),
// keeping the source's KMS key and on-demand maximums; re-applies what a
// restore does not carry (the stream, TTL, point-in-time recovery, deletion
// protection, the tags) and reads each back; then runs the admin
// function's store.check on it (vendors counted, a vendor's product pages
// through a cursor signed with the restored cursor keys, its webhook
// secrets opened with the stack's KMS key). Nothing points at the restored
// table until an operator cuts over to it.
//
// The environment names the table (SELLERAPI_TABLE) and the key of secrets
// at rest (SELLERAPI_KMS_KEY_ARN, else the local master key of
// SELLERAPI_KEY_FILE or the data directory), as for the functions. On
// DynamoDB Local (AWS_ENDPOINT_URL_DYNAMODB set), which has no
// point-in-time recovery, or with -from-scan, the table is restored from a
// consistent scan of the source instead: the rest of the drill is the
// same, and what the emulator does not implement (point-in-time recovery,
// tags) is reported as not re-applied.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/moku/sellerapi/shared/app/awsapp"
	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "restore-drill:", err)
		stop()
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := config.FromEnv()
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("restore-drill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	table := fs.String("table", cfg.Table, "the table to restore (default $SELLERAPI_TABLE)")
	atFlag := fs.String("at", "", "the point in time to restore, RFC 3339 (default: the latest restorable time)")
	target := fs.String("target", "", "the restored table's name (default TABLE-restore-YYYYMMDD-HHMM)")
	vendor := fs.String("vendor", "", "the vendor store.check reads (default: the first)")
	fromScan := fs.Bool("from-scan", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") != "", "restore from a scan of the table (DynamoDB Local has no point-in-time recovery)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var at time.Time
	if *atFlag != "" {
		if at, err = time.Parse(time.RFC3339, *atFlag); err != nil {
			return fmt.Errorf("-at: %w", err)
		}
	}
	now := func() time.Time { return time.Now().UTC() }
	if *target == "" {
		*target = *table + "-restore-" + now().Format("20060102-1504")
	}
	client, err := dynamodb.NewClient(ctx)
	if err != nil {
		return err
	}
	var src envelope.Source = envelope.NewKeyFile(cfg.LocalKeyFile())
	if cfg.KMSKeyARN != "" {
		if src, err = awsapp.OpenKMS(ctx, cfg); err != nil {
			return err
		}
	}
	d := &Drill{Client: client, Source: *table, Target: *target, At: at, Export: *fromScan, Secrets: envelope.New(src), Vendor: *vendor, Now: now, Log: stderr}
	r, err := d.Run(ctx)
	if err != nil {
		return err
	}
	return printReport(stdout, r)
}

// printReport prints the report as JSON, then the minutes in a line of
// its own.
func printReport(w io.Writer, r Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]any{
		"source": r.Source, "target": r.Target, "as_of": at(r.At), "items_copied": r.Items,
		"reapplied": r.Settings, "not_reapplied": r.Unsupported, "check": r.Check,
		"restore_minutes": r.Restored.Minutes(), "total_minutes": r.Total.Minutes(),
	}); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "restored %s as %s in %.1f minutes (restore %.1f, settings and checks %.1f)\n",
		r.Source, r.Target, r.Total.Minutes(), r.Restored.Minutes(), (r.Total - r.Restored).Minutes())
	return err
}
