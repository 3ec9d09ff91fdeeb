// Package cmdline is the command line functions/local (the embedded
// runner) and scripts/cloud (the deployed shape on one machine) share, so
// that whatever drives one drives the other unchanged: which command runs
// (Runner), the administrative commands and their flags, the {"data": …}
// answer they print, and serving HTTP until interrupted. How each runner carries out a command (the store
// directly, or the template's admin function) stays with the runner.
package cmdline

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/moku/sellerapi/shared/admin"
)

// Command is a subcommand run with the arguments after its name.
type Command func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Runner is a runner's command line: serve, the administrative commands,
// and commands of its own.
type Runner struct {
	Serve Command
	// Admin carries out an administrative command with the arguments
	// after its words.
	Admin func(ctx context.Context, c Admin, args []string, stdout io.Writer) error
	More  map[string]Command
}

// Run runs the command args name: serve when they are empty or start with
// a flag.
func (r Runner) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return r.Serve(ctx, args, stdout, stderr)
	}
	if args[0] == "serve" {
		return r.Serve(ctx, args[1:], stdout, stderr)
	}
	if c, rest, ok := FindAdmin(args); ok {
		return r.Admin(ctx, c, rest, stdout)
	}
	if cmd, ok := r.More[args[0]]; ok {
		return cmd(ctx, args[1:], stdout, stderr)
	}
	names := append([]string{"serve"}, AdminNames()...)
	names = append(names, slices.Sorted(maps.Keys(r.More))...)
	return fmt.Errorf("unknown command %q; use %s", args, strings.Join(names, ", "))
}

// Main is a runner's whole main: Run with the process's arguments and
// standard streams, under a context an interrupt or SIGTERM ends; a
// failure is printed as "error: …" and exits with status 1.
func (r Runner) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		stop()
		os.Exit(1)
	}
}

// Admin is an administrative command: its words on the command line
// ("vendor create"), the admin action it asks for, and its own flags.
type Admin struct {
	Name   string
	Action string
	Flags  func(*flag.FlagSet, *admin.Request)
}

// Admins are the administrative commands, in the order usage lists them.
func Admins() []Admin {
	return []Admin{
		{"vendor create", admin.VendorCreate, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.Name, "name", "", "vendor name")
			fs.StringVar(&r.Slug, "slug", "", "vendor slug")
		}},
		{"vendor set-owner", admin.VendorSetOwner, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.ID, "id", "", "vendor id")
			fs.StringVar(&r.Owner, "owner", "", "new owner id (default: a fresh one)")
		}},
		{"token issue", admin.TokenIssue, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.Vendor, "vendor", "", "vendor id")
			fs.StringVar(&r.Scopes, "scopes", "all", "comma-separated scopes, or all")
			fs.StringVar(&r.ExpiresIn, "expires-in", "", "lifetime, e.g. 1h (default: no expiry on the embedded runner; the deployed maximum, a year, on the deployed shape)")
		}},
		{"token revoke", admin.TokenRevoke, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.ID, "id", "", "token id")
		}},
		{"pairing review", admin.PairingReview, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.ID, "id", "", "store pairing id")
			fs.StringVar(&r.Reviewer, "reviewer", "", "who reviewed the activation (default: admin)")
		}},
		{"cursor-key rotate", admin.CursorKeyRotate, func(*flag.FlagSet, *admin.Request) {}},
		{"store check", admin.StoreCheck, func(fs *flag.FlagSet, r *admin.Request) {
			fs.StringVar(&r.Vendor, "vendor", "", "vendor to read (default: the first)")
		}},
		{"webhook-secrets seal", admin.WebhookSecretsSeal, func(*flag.FlagSet, *admin.Request) {}},
		{"webhook-subscriptions recount", admin.WebhookSubscriptionsRecount, func(*flag.FlagSet, *admin.Request) {}},
	}
}

// FindAdmin is the administrative command args start with, and the
// arguments after its words.
func FindAdmin(args []string) (Admin, []string, bool) {
	for _, c := range Admins() {
		words := strings.Fields(c.Name)
		if len(args) >= len(words) && strings.Join(args[:len(words)], " ") == c.Name {
			return c, args[len(words):], true
		}
	}
	return Admin{}, nil, false
}

// AdminNames are the administrative commands' names, for a usage message.
func AdminNames() []string {
	var names []string
	for _, c := range Admins() {
		names = append(names, c.Name)
	}
	return names
}

// Parse reads a command's flags from args into a request for its action;
// more adds the runner's own flags (where its store is).
func (c Admin) Parse(args []string, more func(*flag.FlagSet)) (admin.Request, error) {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	more(fs)
	req := admin.Request{Action: c.Action}
	c.Flags(fs, &req)
	err := fs.Parse(args)
	return req, err
}

// PrintData prints v as a command's answer: {"data": v}, indented.
func PrintData(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"data": v})
}

// Serve serves h on ln until ctx ends, then shuts down, giving requests in
// flight ten seconds.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
