package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// The administrative commands are functions/local's (shared/cmdline): each
// parses its flags and then looks for the serve running on --data.
func TestAdminCommandsNeedARunningServe(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"vendor", "create", "--name", "Acme", "--slug", "acme"},
		{"token", "issue", "--vendor", "ven_1", "--scopes", "all", "--store", "sqlite"},
		{"pairing", "review", "--id", "pair_1"},
	} {
		err := run(context.Background(), append(args, "--data", dir), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "no cloud serve runs on "+dir) {
			t.Errorf("%q: %v, want no cloud serve on %s", args, err, dir)
		}
	}
	if err := run(context.Background(), []string{"vendor", "delete"}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "use serve, vendor create") {
		t.Errorf("vendor delete: %v", err)
	}
}
