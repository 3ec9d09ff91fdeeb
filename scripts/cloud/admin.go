package main

// Administration: the administrative commands through the template's admin
// function, and the first start's demo vendor and token.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	adminpkg "github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/cmdline"
	"github.com/moku/sellerapi/shared/config"
)

// adminFunction is the function the template deploys for administration:
// the one whose name ends in -admin (the stack's AdminFunctionName).
func adminFunction(tpl *Template) (*Function, error) {
	for _, f := range tpl.Functions {
		if strings.HasSuffix(f.Name, "-admin") {
			return f, nil
		}
	}
	return nil, errors.New("the template has no admin function (a function named *-admin)")
}

// invokeAdmin runs one administrative request through the admin function.
func invokeAdmin(ctx context.Context, fns *Functions, tpl *Template, req adminpkg.Request) (json.RawMessage, error) {
	f, err := adminFunction(tpl)
	if err != nil {
		return nil, err
	}
	payload, _ := json.Marshal(req)
	out, err := fns.Invoke(ctx, f.Logical, payload)
	if err != nil {
		return nil, err
	}
	var res struct {
		Data  json.RawMessage `json:"data"`
		Error *adminpkg.Error `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("admin function answered %s: %w", out, err)
	}
	if res.Error != nil {
		return nil, fmt.Errorf("%s: %s", res.Error.Code, res.Error.Detail)
	}
	return res.Data, nil
}

// admin is an administrative command: the admin function, invoked on the
// emulators of the serve running on --data.
func admin(ctx context.Context, cmd cmdline.Admin, args []string, stdout io.Writer) error {
	var c common
	req, err := cmd.Parse(args, func(fs *flag.FlagSet) { commonFlags(fs, &c) })
	if err != nil {
		return err
	}
	// The deployed admin function issues no token without an end; where
	// functions/local's default is none, the deployed maximum stands in.
	if req.Action == adminpkg.TokenIssue && req.ExpiresIn == "" {
		req.ExpiresIn = adminpkg.DeployedTokenLifetime.String()
	}
	b, err := os.ReadFile(statePath(c.data))
	if err != nil {
		return fmt.Errorf("no cloud serve runs on %s (%v): start one with: cloud serve --data %s", c.data, err, c.data)
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s: %w", statePath(c.data), err)
	}
	if p, err := os.FindProcess(st.PID); err != nil || p.Signal(syscall.Signal(0)) != nil {
		return fmt.Errorf("the cloud serve of %s (pid %d) is not running: start one with: cloud serve --data %s", c.data, st.PID, c.data)
	}
	tplPath := st.Template
	if c.template != "" {
		tplPath = c.template
	}
	tpl, err := LoadTemplate(tplPath)
	if err != nil {
		return err
	}
	for _, q := range tpl.Queues {
		q.URL = "unused-by-admin"
	}
	if err := tpl.ResolveEnv(Addresses{APIEndpoint: strings.TrimSuffix(st.BaseURL, config.Default().BasePath()), Region: region()}); err != nil {
		return err
	}
	// Only the admin function runs: extracting every function's code
	// (two dozen binaries) took an admin command seconds of CPU.
	f, err := adminFunction(tpl)
	if err != nil {
		return err
	}
	tpl.Functions = map[string]*Function{f.Logical: f}
	dir, err := os.MkdirTemp("", "cloud-admin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fns, err := NewFunctions(ctx, tpl, baseEnv(st.Env), localKeys(c.data), io.Discard, dir)
	if err != nil {
		return err
	}
	defer fns.Close()
	data, err := invokeAdmin(ctx, fns, tpl, req)
	if err != nil {
		return err
	}
	return cmdline.PrintData(stdout, data)
}

// demo creates a first vendor and token through the admin function when
// the table is empty, and prints them as functions/local does.
func demo(ctx context.Context, tpl *Template, fns *Functions, c *clients, baseURL string, stdout io.Writer) error {
	out, err := c.ddb.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(tpl.Table.Name), Limit: aws.Int32(1)})
	if err != nil {
		return fmt.Errorf("scan %s: %w", tpl.Table.Name, err)
	}
	if len(out.Items) > 0 {
		return nil
	}
	raw, err := invokeAdmin(ctx, fns, tpl, adminpkg.Request{Action: adminpkg.VendorCreate, Name: "Demo Vendor", Slug: "demo-vendor"})
	if err != nil {
		return fmt.Errorf("demo vendor: %w", err)
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.ID == "" {
		return fmt.Errorf("demo vendor: the admin function answered %s", raw)
	}
	raw, err = invokeAdmin(ctx, fns, tpl, adminpkg.Request{Action: adminpkg.TokenIssue, Vendor: v.ID, Scopes: "all", ExpiresIn: adminpkg.DeployedTokenLifetime.String()})
	if err != nil {
		return fmt.Errorf("demo token: %w", err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &tok); err != nil || tok.Token == "" {
		return fmt.Errorf("demo token: the admin function answered %s", raw)
	}
	fmt.Fprintf(stdout, `First start on an empty store: created a demo vendor and a token with every scope (through the admin function).
  vendor id: %s
  token:     %s   (shown only now; issue more with "token issue")

Try it:
  curl -s -H "Authorization: Bearer %s" %s/vendors
  curl -s -H "Authorization: Bearer %s" %s/vendors/%s

`, v.ID, tok.Token, tok.Token, baseURL, tok.Token, baseURL, v.ID)
	return nil
}

// localKeys are the functions' environment overrides of where secrets at
// rest are sealed: no emulator stands in for KMS, so every function of a
// serve, and the admin function of its commands, seals with the local
// master key of the data directory instead of the stack's KMS key.
func localKeys(data string) map[string]string {
	if abs, err := filepath.Abs(data); err == nil {
		data = abs
	}
	return map[string]string{config.EnvKMSKeyARN: "", config.EnvKeyFile: filepath.Join(data, "master.key")}
}
