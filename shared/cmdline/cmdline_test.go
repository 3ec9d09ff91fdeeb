package cmdline_test

import (
	"context"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/cmdline"
)

// Every administrative command is found by its words and reads its flags
// into a request for its action; the runner's flags come along.
func TestAdmins(t *testing.T) {
	for _, c := range []struct {
		args   []string
		action string
		want   admin.Request
	}{
		{[]string{"vendor", "create", "--name", "Acme", "--slug", "acme"}, admin.VendorCreate, admin.Request{Name: "Acme", Slug: "acme"}},
		{[]string{"vendor", "set-owner", "--id", "ven_1", "--owner", "o"}, admin.VendorSetOwner, admin.Request{ID: "ven_1", Owner: "o"}},
		{[]string{"token", "issue", "--vendor", "ven_1", "--expires-in", "1h"}, admin.TokenIssue, admin.Request{Vendor: "ven_1", Scopes: "all", ExpiresIn: "1h"}},
		{[]string{"token", "revoke", "--id", "tok_1"}, admin.TokenRevoke, admin.Request{ID: "tok_1"}},
		{[]string{"pairing", "review", "--id", "pair_1", "--reviewer", "ops"}, admin.PairingReview, admin.Request{ID: "pair_1", Reviewer: "ops"}},
		{[]string{"cursor-key", "rotate"}, admin.CursorKeyRotate, admin.Request{}},
		{[]string{"store", "check", "--vendor", "ven_1"}, admin.StoreCheck, admin.Request{Vendor: "ven_1"}},
		{[]string{"webhook-secrets", "seal"}, admin.WebhookSecretsSeal, admin.Request{}},
		{[]string{"webhook-subscriptions", "recount"}, admin.WebhookSubscriptionsRecount, admin.Request{}},
	} {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			cmd, rest, ok := cmdline.FindAdmin(append(c.args, "--data", "d"))
			if !ok || cmd.Action != c.action {
				t.Fatalf("found %+v, %v; want the command of %s", cmd, ok, c.action)
			}
			var data string
			req, err := cmd.Parse(rest, func(fs *flag.FlagSet) { fs.StringVar(&data, "data", "", "") })
			c.want.Action = c.action
			if err != nil || req != c.want || data != "d" {
				t.Fatalf("parsed %+v, data %q, %v; want %+v and d", req, data, err, c.want)
			}
		})
	}
	for _, args := range [][]string{{"vendor"}, {"vendor", "delete"}, {"token"}, {"serve"}, {}} {
		if c, _, ok := cmdline.FindAdmin(args); ok {
			t.Errorf("%q found %s", args, c.Name)
		}
	}
	if got := strings.Join(cmdline.AdminNames(), ", "); got != "vendor create, vendor set-owner, token issue, token revoke, pairing review, cursor-key rotate, store check, webhook-secrets seal, webhook-subscriptions recount" {
		t.Errorf("names %s", got)
	}
}

// A flag the command does not take is refused.
func TestUnknownFlag(t *testing.T) {
	c, rest, _ := cmdline.FindAdmin([]string{"token", "revoke", "--vendor", "v"})
	if _, err := c.Parse(rest, func(*flag.FlagSet) {}); err == nil {
		t.Fatal("token revoke took --vendor")
	}
}

// Run picks serve for no arguments, a leading flag or "serve", the
// administrative commands by their words, and the runner's own by name.
func TestRun(t *testing.T) {
	var ran string
	cmd := func(name string) cmdline.Command {
		return func(_ context.Context, args []string, _, _ io.Writer) error {
			ran = name + " " + strings.Join(args, " ")
			return nil
		}
	}
	r := cmdline.Runner{Serve: cmd("serve"), More: map[string]cmdline.Command{"listen": cmd("listen")},
		Admin: func(_ context.Context, c cmdline.Admin, args []string, _ io.Writer) error {
			ran = c.Action + " " + strings.Join(args, " ")
			return nil
		}}
	for _, c := range []struct{ args, want string }{
		{"", "serve "},
		{"--addr :0", "serve --addr :0"},
		{"serve --addr :0", "serve --addr :0"},
		{"token revoke --id t", admin.TokenRevoke + " --id t"},
		{"listen --events *", "listen --events *"},
	} {
		ran = ""
		if err := r.Run(context.Background(), strings.Fields(c.args), io.Discard, io.Discard); err != nil || ran != c.want {
			t.Errorf("%q ran %q (%v), want %q", c.args, ran, err, c.want)
		}
	}
	err := r.Run(context.Background(), []string{"trigger"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "use serve, vendor create, vendor set-owner, token issue, token revoke, pairing review, cursor-key rotate, store check, webhook-secrets seal, webhook-subscriptions recount, listen") {
		t.Errorf("unknown command: %v", err)
	}
}
