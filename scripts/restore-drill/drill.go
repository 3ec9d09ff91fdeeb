package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/admin"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/store/dynamodb"
)

// ttlAttr is the table's expiry attribute (dynamodb.CreateTable).
const ttlAttr = "ttl"

// Drill restores Source as of At under the name Target, re-applies what a
// restore does not carry, and reads the restored table through the admin
// function's store.check.
type Drill struct {
	Client *ddb.Client
	Source string
	Target string
	// At is the point in time to restore; zero means the latest
	// restorable time.
	At time.Time
	// Export restores from a consistent scan of Source instead of
	// point-in-time recovery: DynamoDB Local has none. The table it makes
	// carries no stream, TTL or settings, as a restored one does not.
	Export bool
	// Secrets opens the restored table's sealed keys and secrets (the
	// stack's KMS key, or the local master key).
	Secrets *envelope.Box
	// Vendor is the vendor store.check reads; empty means the first.
	Vendor string
	// Now is the wall clock the minutes are measured on.
	Now func() time.Time
	// Log receives one line per step.
	Log io.Writer
}

// Report is what a drill did and found.
type Report struct {
	Source, Target string
	At             time.Time
	// Restored is how long the restore took until the table was active;
	// Total the whole drill.
	Restored, Total time.Duration
	Items           int
	// Settings are the settings re-applied, each as checked afterwards;
	// Unsupported those the emulator does not implement.
	Settings    []string
	Unsupported []string
	Check       admin.Check
}

func (d *Drill) logf(format string, args ...any) {
	if d.Log != nil {
		fmt.Fprintf(d.Log, format+"\n", args...)
	}
}

// Run runs the drill.
func (d *Drill) Run(ctx context.Context) (Report, error) {
	start := d.Now()
	r := Report{Source: d.Source, Target: d.Target, At: d.At}
	src, err := d.Client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(d.Source)})
	if err != nil {
		return r, fmt.Errorf("describe %s: %w", d.Source, err)
	}
	if d.Export {
		d.logf("restoring %s from a scan of %s (the emulator has no point-in-time recovery)", d.Target, d.Source)
		if r.Items, err = d.restoreFromScan(ctx); err != nil {
			return r, err
		}
	} else {
		d.logf("restoring %s to %s as of %s", d.Source, d.Target, at(d.At))
		if err := d.restorePITR(ctx, src.Table); err != nil {
			return r, err
		}
	}
	if err := waitActive(ctx, d.Client, d.Target, 24*time.Hour); err != nil {
		return r, err
	}
	r.Restored = d.Now().Sub(start)
	d.logf("restored in %.1f minutes", r.Restored.Minutes())
	if err := d.reapply(ctx, src.Table, &r); err != nil {
		return r, err
	}
	check, err := d.check(ctx)
	if err != nil {
		return r, err
	}
	r.Check = check
	r.Total = d.Now().Sub(start)
	return r, nil
}

func at(t time.Time) string {
	if t.IsZero() {
		return "the latest restorable time"
	}
	return t.UTC().Format(time.RFC3339)
}

// restorePITR asks DynamoDB for the table as of At, under the source's
// encryption key and on-demand maximums (which a restore can set).
func (d *Drill) restorePITR(ctx context.Context, src *types.TableDescription) error {
	in := &ddb.RestoreTableToPointInTimeInput{
		SourceTableName:     aws.String(d.Source),
		TargetTableName:     aws.String(d.Target),
		BillingModeOverride: types.BillingModePayPerRequest,
	}
	if d.At.IsZero() {
		in.UseLatestRestorableTime = aws.Bool(true)
	} else {
		in.RestoreDateTime = aws.Time(d.At)
	}
	if sse := src.SSEDescription; sse != nil && sse.SSEType == types.SSETypeKms && sse.KMSMasterKeyArn != nil {
		in.SSESpecificationOverride = &types.SSESpecification{Enabled: aws.Bool(true), SSEType: types.SSETypeKms, KMSMasterKeyId: sse.KMSMasterKeyArn}
	}
	if odt := src.OnDemandThroughput; odt != nil {
		in.OnDemandThroughputOverride = odt
	}
	if _, err := d.Client.RestoreTableToPointInTime(ctx, in); err != nil {
		return fmt.Errorf("restore %s to %s: %w", d.Source, d.Target, err)
	}
	return nil
}

// restoreFromScan makes the target with the table's keys and nothing else,
// and copies every item of a consistent scan of the source into it.
func (d *Drill) restoreFromScan(ctx context.Context) (int, error) {
	_, err := d.Client.CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(d.Target),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", d.Target, err)
	}
	if err := waitActive(ctx, d.Client, d.Target, 5*time.Minute); err != nil {
		return 0, err
	}
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := d.Client.Scan(ctx, &ddb.ScanInput{TableName: aws.String(d.Source), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			return n, fmt.Errorf("scan %s: %w", d.Source, err)
		}
		for i := 0; i < len(out.Items); i += 25 {
			batch := out.Items[i:min(i+25, len(out.Items))]
			if err := d.write(ctx, batch); err != nil {
				return n, err
			}
			n += len(batch)
		}
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		start = out.LastEvaluatedKey
	}
}

// write puts a batch of items, sending again what DynamoDB left
// unprocessed.
func (d *Drill) write(ctx context.Context, items []map[string]types.AttributeValue) error {
	reqs := make([]types.WriteRequest, 0, len(items))
	for _, it := range items {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	for attempt := 0; len(reqs) > 0; attempt++ {
		if attempt == 10 {
			return fmt.Errorf("write to %s: %d items left unprocessed after 10 attempts", d.Target, len(reqs))
		}
		out, err := d.Client.BatchWriteItem(ctx, &ddb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{d.Target: reqs}})
		if err != nil {
			return fmt.Errorf("write to %s: %w", d.Target, err)
		}
		reqs = out.UnprocessedItems[d.Target]
		if len(reqs) > 0 {
			if err := clock.Sleep(ctx, time.Duration(50<<attempt)*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// unsupported reports whether err is the emulator's refusal of an
// operation it does not implement.
func unsupported(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "UnknownOperationException"
}

// step runs one re-application; in a drill from a scan, an operation the
// emulator does not implement is reported as such rather than failing.
func (d *Drill) step(r *Report, name string, f func() error) error {
	err := f()
	switch {
	case err == nil:
		r.Settings = append(r.Settings, name)
		d.logf("re-applied: %s", name)
		return nil
	case d.Export && unsupported(err):
		r.Unsupported = append(r.Unsupported, name)
		d.logf("not re-applied: %s (the emulator does not implement it)", name)
		return nil
	}
	return fmt.Errorf("%s on %s: %w", name, d.Target, err)
}

// reapply sets on the restored table what a restore does not carry: the
// stream (its consumer is then pointed at the new stream's ARN), TTL,
// point-in-time recovery, deletion protection, the on-demand maximums
// (when the restore could not set them) and the source's tags. Each is
// read back before it counts as done.
func (d *Drill) reapply(ctx context.Context, src *types.TableDescription, r *Report) error {
	tgt, err := d.Client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(d.Target)})
	if err != nil {
		return fmt.Errorf("describe %s: %w", d.Target, err)
	}
	update := func(in *ddb.UpdateTableInput, holds func(*types.TableDescription) bool) error {
		in.TableName = aws.String(d.Target)
		if _, err := d.Client.UpdateTable(ctx, in); err != nil {
			return err
		}
		if err := waitActive(ctx, d.Client, d.Target, time.Hour); err != nil {
			return err
		}
		out, err := d.Client.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: aws.String(d.Target)})
		if err != nil {
			return err
		}
		if !holds(out.Table) {
			return errors.New("not in effect after the update")
		}
		return nil
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"stream NEW_AND_OLD_IMAGES", func() error {
			if s := tgt.Table.StreamSpecification; s != nil && aws.ToBool(s.StreamEnabled) && s.StreamViewType == types.StreamViewTypeNewAndOldImages {
				return nil
			}
			return update(&ddb.UpdateTableInput{StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages}},
				func(t *types.TableDescription) bool { return t.LatestStreamArn != nil })
		}},
		{"TTL on " + ttlAttr, func() error {
			if _, err := d.Client.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{TableName: aws.String(d.Target),
				TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(ttlAttr), Enabled: aws.Bool(true)}}); err != nil {
				return err
			}
			out, err := d.Client.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: aws.String(d.Target)})
			if err != nil {
				return err
			}
			if t := out.TimeToLiveDescription; t == nil || aws.ToString(t.AttributeName) != ttlAttr ||
				(t.TimeToLiveStatus != types.TimeToLiveStatusEnabled && t.TimeToLiveStatus != types.TimeToLiveStatusEnabling) {
				return errors.New("not in effect after the update")
			}
			return nil
		}},
		{"point-in-time recovery", func() error {
			if _, err := d.Client.UpdateContinuousBackups(ctx, &ddb.UpdateContinuousBackupsInput{TableName: aws.String(d.Target),
				PointInTimeRecoverySpecification: &types.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: aws.Bool(true)}}); err != nil {
				return err
			}
			out, err := d.Client.DescribeContinuousBackups(ctx, &ddb.DescribeContinuousBackupsInput{TableName: aws.String(d.Target)})
			if err != nil {
				return err
			}
			if c := out.ContinuousBackupsDescription; c == nil || c.PointInTimeRecoveryDescription == nil ||
				c.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusEnabled {
				return errors.New("not in effect after the update")
			}
			return nil
		}},
		{"deletion protection", func() error {
			return update(&ddb.UpdateTableInput{DeletionProtectionEnabled: aws.Bool(true)},
				func(t *types.TableDescription) bool { return aws.ToBool(t.DeletionProtectionEnabled) })
		}},
	}
	if odt := src.OnDemandThroughput; odt != nil && (aws.ToInt64(odt.MaxReadRequestUnits) > 0 || aws.ToInt64(odt.MaxWriteRequestUnits) > 0) {
		steps = append(steps, struct {
			name string
			f    func() error
		}{fmt.Sprintf("on-demand maximums (%d reads, %d writes a second)", aws.ToInt64(odt.MaxReadRequestUnits), aws.ToInt64(odt.MaxWriteRequestUnits)), func() error {
			if cur := tgt.Table.OnDemandThroughput; cur != nil && aws.ToInt64(cur.MaxReadRequestUnits) == aws.ToInt64(odt.MaxReadRequestUnits) &&
				aws.ToInt64(cur.MaxWriteRequestUnits) == aws.ToInt64(odt.MaxWriteRequestUnits) {
				return nil
			}
			return update(&ddb.UpdateTableInput{OnDemandThroughput: odt}, func(t *types.TableDescription) bool {
				return t.OnDemandThroughput != nil && aws.ToInt64(t.OnDemandThroughput.MaxReadRequestUnits) == aws.ToInt64(odt.MaxReadRequestUnits)
			})
		}})
	}
	steps = append(steps, struct {
		name string
		f    func() error
	}{"tags", func() error { return d.copyTags(ctx, src, tgt.Table) }})
	for _, s := range steps {
		if err := d.step(r, s.name, s.f); err != nil {
			return err
		}
	}
	return nil
}

// copyTags gives the target the source's tags, and two of its own naming
// what it was restored from.
func (d *Drill) copyTags(ctx context.Context, src, tgt *types.TableDescription) error {
	tags := []types.Tag{{Key: aws.String("sellerapi:restored-from"), Value: aws.String(d.Source)}, {Key: aws.String("sellerapi:restored-as-of"), Value: aws.String(at(d.At))}}
	var next *string
	for {
		out, err := d.Client.ListTagsOfResource(ctx, &ddb.ListTagsOfResourceInput{ResourceArn: src.TableArn, NextToken: next})
		if err != nil {
			return err
		}
		tags = append(tags, out.Tags...)
		if next = out.NextToken; next == nil {
			break
		}
	}
	_, err := d.Client.TagResource(ctx, &ddb.TagResourceInput{ResourceArn: tgt.TableArn, Tags: tags})
	return err
}

// check runs the admin function's store.check on the restored table.
func (d *Drill) check(ctx context.Context) (admin.Check, error) {
	st := dynamodb.New(d.Client, d.Target, dynamodb.WithClock(d.Now))
	res, err := admin.Service{Store: st, Clock: clockFunc(d.Now), Secrets: d.Secrets,
		Vendors: account.Service{Store: st, Clock: clockFunc(d.Now)}, Catalog: catalog.Service{Store: st, Clock: clockFunc(d.Now)}}.Do(ctx, admin.Request{Action: admin.StoreCheck, Vendor: d.Vendor})
	if err != nil {
		return admin.Check{}, fmt.Errorf("store.check on %s: %w", d.Target, err)
	}
	if res.Error != nil {
		return admin.Check{}, fmt.Errorf("store.check on %s: %s: %s", d.Target, res.Error.Code, res.Error.Detail)
	}
	c, _ := res.Data.(admin.Check)
	d.logf("store.check: %d vendors; vendor %v: products %v, %d cursor keys, %d of %d webhook secrets opened",
		c.Vendors, c.Vendor, c.Products, c.CursorKeys, c.SecretsOpened, c.Subscriptions)
	return c, nil
}

// clockFunc is a clock.Clock of a function.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// waitActive waits for the table to be active (a restore can take hours).
func waitActive(ctx context.Context, c *ddb.Client, name string, maxWait time.Duration) error {
	w := ddb.NewTableExistsWaiter(c, func(o *ddb.TableExistsWaiterOptions) { o.MinDelay, o.MaxDelay = time.Second, 30*time.Second })
	if err := w.Wait(ctx, &ddb.DescribeTableInput{TableName: aws.String(name)}, maxWait); err != nil {
		return fmt.Errorf("wait for %s to be active: %w", name, err)
	}
	return nil
}
