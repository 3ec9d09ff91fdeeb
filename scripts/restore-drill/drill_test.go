package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/connection"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/dynamodb"
	"github.com/moku/sellerapi/shared/store/dynamodb/ddbtest"
	"github.com/moku/sellerapi/shared/webhook"
)

// seed writes what the drill reads back, through the services: two
// vendors, three products of the first, one webhook subscription with its
// sealed secret, and the sealed cursor keys.
func seed(t *testing.T, st store.Store, c *clock.Fake, box *envelope.Box) account.Vendor {
	t.Helper()
	ctx := context.Background()
	vendors := account.Service{Store: st, Clock: c}
	first, err := vendors.Create(ctx, "Acme Goods", "acme-goods")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vendors.Create(ctx, "Other Goods", "other-goods"); err != nil {
		t.Fatal(err)
	}
	products := catalog.Service{Store: st, Clock: c, Authority: connection.Masters{Store: st}}
	for i := range 3 {
		p, err := products.PrepareCreate(ctx, first.ID, catalog.Input{Kind: "simple", Name: fmt.Sprintf("Shirt %d", i), Slug: fmt.Sprintf("shirt-%d", i), Price: 4500})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Transact(ctx, p.Ops...); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := webhook.Service{Store: st, Clock: c, Policy: webhook.Policy{AllowLoopback: true}, Secrets: box}.
		PrepareCreate(ctx, first.ID, webhook.CreateInput{Destination: webhook.HTTPS("http://127.0.0.1:9/hook"), EventTypes: []string{"product.created"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(ctx, sub.Ops...); err != nil {
		t.Fatal(err)
	}
	if _, err := (cursor.Keyring{Store: st, Box: box, Clock: c}).Codec(ctx); err != nil {
		t.Fatal(err)
	}
	return first
}

// count counts a table's items; lasting, those without an expiry (the
// emulator deletes expired items of a table with TTL by the wall clock,
// which the test's clock does not move).
func count(t *testing.T, client *ddb.Client, table string, lasting bool) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		in := &ddb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start}
		if lasting {
			in.FilterExpression = aws.String("attribute_not_exists(#ttl)")
			in.ExpressionAttributeNames = map[string]string{"#ttl": ttlAttr}
		}
		out, err := client.Scan(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		n += len(out.Items)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return n
		}
	}
}

// dropRestored deletes a table the drill made, whose deletion protection
// must be turned off first, as an operator would after the drill.
func dropRestored(t *testing.T, client *ddb.Client, table string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.UpdateTable(ctx, &ddb.UpdateTableInput{TableName: aws.String(table), DeletionProtectionEnabled: aws.Bool(false)}); err != nil {
		t.Logf("restore-drill: %s: %v", table, err)
	}
	if err := waitActive(ctx, client, table, time.Minute); err != nil {
		t.Logf("restore-drill: %v", err)
	}
	if _, err := client.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
		t.Errorf("restore-drill: delete %s: %v", table, err)
	}
}

// The drill on DynamoDB Local: the table restored from a scan holds every
// item, gets the stream, TTL and deletion protection a restore does not
// carry (reported and read back; point-in-time recovery and tags are
// reported as missing from the emulator), and the admin function's
// store.check reads it as the API would, opening the sealed cursor keys
// and webhook secret with the stack's key source.
func TestDrillOnDynamoDBLocal(t *testing.T) {
	ctx := context.Background()
	c := clocktest.Fake(2026, 3, 4, 10, 0, 0)
	client, table := ddbtest.NewTable(t)
	st := dynamodb.New(client, table, dynamodb.WithClock(c.Now))
	keys := envelope.NewKeyFile(filepath.Join(t.TempDir(), "master.key"))
	first := seed(t, st, c, envelope.New(keys))
	items, lasting := count(t, client, table, false), count(t, client, table, true)

	target := table + "-restored"
	t.Cleanup(func() { dropRestored(t, client, target) })
	var log bytes.Buffer
	d := &Drill{Client: client, Source: table, Target: target, Export: true, Secrets: envelope.New(keys), Vendor: first.ID, Now: c.Now, Log: &log}
	r, err := d.Run(ctx)
	if err != nil {
		t.Fatalf("drill: %v\n%s", err, log.String())
	}
	if got := count(t, client, target, true); r.Items != items || got != lasting {
		t.Fatalf("copied %d items of %d, the restored table holds %d of the %d that do not expire", r.Items, items, got, lasting)
	}
	for _, want := range []string{"stream NEW_AND_OLD_IMAGES", "TTL on ttl", "deletion protection"} {
		if !slices.Contains(r.Settings, want) {
			t.Errorf("re-applied %v, want %q among them", r.Settings, want)
		}
	}
	if got := append(slices.Clone(r.Settings), r.Unsupported...); len(got) != 5 || !slices.Contains(got, "point-in-time recovery") || !slices.Contains(got, "tags") {
		t.Errorf("settings %v and unsupported %v: want point-in-time recovery and tags among them", r.Settings, r.Unsupported)
	}
	out, err := client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(target)})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Table.StreamSpecification; s == nil || !aws.ToBool(s.StreamEnabled) || s.StreamViewType != types.StreamViewTypeNewAndOldImages || !aws.ToBool(out.Table.DeletionProtectionEnabled) {
		t.Errorf("the restored table: stream %+v, deletion protection %v", out.Table.StreamSpecification, aws.ToBool(out.Table.DeletionProtectionEnabled))
	}
	ttl, err := client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(target)})
	if err != nil || ttl.TimeToLiveDescription == nil || aws.ToString(ttl.TimeToLiveDescription.AttributeName) != "ttl" {
		t.Errorf("the restored table's TTL: %+v, %v", ttl, err)
	}
	ck := r.Check
	if ck.Vendors != 2 || ck.Vendor == nil || ck.Vendor.ID != first.ID || !slices.Equal(ck.Products, []int{2, 1}) ||
		ck.CursorKeys != 1 || ck.Subscriptions != 1 || ck.SecretsOpened != 1 {
		t.Errorf("store.check on the restored table: %+v (vendor %+v)", ck, ck.Vendor)
	}
	var printed bytes.Buffer
	if err := printReport(&printed, r); err != nil || !strings.Contains(printed.String(), "minutes") {
		t.Errorf("report: %v\n%s", err, printed.String())
	}

	// The check fails where the API would: secrets sealed under a key
	// the drill cannot use do not open.
	other := &Drill{Client: client, Target: target, Secrets: envelope.New(envelope.NewKeyFile(filepath.Join(t.TempDir(), "other.key"))), Now: c.Now}
	if _, err := other.check(ctx); err == nil {
		t.Error("store.check passed without the key the table's secrets are sealed under")
	}
	// The target exists: a second drill under its name fails before it
	// copies anything.
	if _, err := d.Run(ctx); err == nil {
		t.Error("a drill restored onto an existing table")
	}
}
