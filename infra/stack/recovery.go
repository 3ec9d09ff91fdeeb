package stack

// Recovery: an AWS Backup plan for the table and the media bucket, each
// day's recovery point kept in the stage's region and copied to a vault in
// a second region, in a stack of its own there.

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsbackup"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/resources"
)

// Backup is a stage's backup plan: a recovery point of the table and the
// media bucket every day, kept RetentionDays in the stage's region and
// copied to a vault in CopyRegion, kept as long there.
type Backup struct {
	CopyRegion    string
	RetentionDays int
}

// DefaultBackup is the prod stage's: 35 days, copied to us-west-2 (cdk -c
// backupRegion=... to choose; it must differ from the stack's region).
func DefaultBackup() *Backup { return &Backup{CopyRegion: "us-west-2", RetentionDays: 35} }

// BackupVaultName is the name of the stage's vault, the same in both
// regions.
func (s *Stack) BackupVaultName() string { return s.Names.Stack() + "-backups" }

// newBackups adds the vault and plan in the ops stack and the copy
// vault's stack in b.CopyRegion (sellerapi-<stage>-backup-copy).
func (s *Stack) newBackups(scope constructs.Construct, d Definition) error {
	b := d.Backup
	if region := *s.Stack.Region(); !*awscdk.Token_IsUnresolved(jsii.String(region)) && region == b.CopyRegion {
		return fmt.Errorf("stack: stage %s copies its backups to %s, its own region: choose another (-c backupRegion=...)", d.Stage, region)
	}
	name := s.Names.Stack() + "-backup-copy"
	s.BackupCopyStack = awscdk.NewStack(scope, jsii.String(name), &awscdk.StackProps{
		StackName:   jsii.String(name),
		Description: jsii.String("Seller Platform API, stage " + d.Stage + ": the vault its backups are copied to, in a second region"),
		Env:         &awscdk.Environment{Account: s.Stack.Account(), Region: jsii.String(b.CopyRegion)},
		// The copies outlive the stage's region: prod's cannot be
		// deleted by accident either.
		TerminationProtection: jsii.Bool(d.Stage == "prod"),
	})
	awscdk.Tags_Of(s.BackupCopyStack).Add(jsii.String("service"), jsii.String(resources.Service), nil)
	awscdk.Tags_Of(s.BackupCopyStack).Add(jsii.String("stage"), jsii.String(d.Stage), nil)
	vault := func(st awscdk.Stack) awsbackup.BackupVault {
		return awsbackup.NewBackupVault(st, jsii.String("Vault"), &awsbackup.BackupVaultProps{
			BackupVaultName: jsii.String(s.BackupVaultName()),
			RemovalPolicy:   d.removal(),
		})
	}
	vault(s.BackupCopyStack)
	// The copy's ARN is written out rather than referenced, so that the
	// ops stack needs no cross-region reference: it deploys after the
	// copy's stack, which makes the vault of that name.
	copyARN := fmt.Sprintf("arn:%s:backup:%s:%s:backup-vault:%s", *awscdk.Aws_PARTITION(), b.CopyRegion, *s.Stack.Account(), s.BackupVaultName())
	s.OpsStack.AddDependency(s.BackupCopyStack, jsii.String("the backup plan copies to its vault"))
	s.BackupVault = vault(s.OpsStack)
	retention := awscdk.Duration_Days(jsii.Number(float64(b.RetentionDays)))
	s.BackupPlan = awsbackup.NewBackupPlan(s.OpsStack, jsii.String("BackupPlan"), &awsbackup.BackupPlanProps{
		BackupPlanName: jsii.String(s.Names.Stack()),
		BackupVault:    s.BackupVault,
	})
	s.BackupPlan.AddRule(awsbackup.NewBackupPlanRule(&awsbackup.BackupPlanRuleProps{
		RuleName: jsii.String("daily"),
		// 03:00 UTC, outside the busiest hours; the table's PITR covers
		// the day between two points.
		ScheduleExpression: awsevents.Schedule_Cron(&awsevents.CronOptions{Hour: jsii.String("3"), Minute: jsii.String("0")}),
		StartWindow:        awscdk.Duration_Hours(jsii.Number(1)),
		CompletionWindow:   awscdk.Duration_Hours(jsii.Number(8)),
		DeleteAfter:        retention,
		CopyActions: &[]*awsbackup.BackupPlanCopyActionProps{{
			DestinationBackupVault: awsbackup.BackupVault_FromBackupVaultArn(s.OpsStack, jsii.String("CopyVault"), jsii.String(copyARN)),
			DeleteAfter:            retention,
		}},
	}))
	// AWS Backup's role: its managed policies for backups and restores,
	// and S3's own pair for the bucket.
	var managed []awsiam.IManagedPolicy
	for _, p := range []string{"AWSBackupServiceRolePolicyForBackup", "AWSBackupServiceRolePolicyForRestores", "AWSBackupServiceRolePolicyForS3Backup", "AWSBackupServiceRolePolicyForS3Restore"} {
		path := "service-role/" + p
		if strings.Contains(p, "S3") {
			path = p
		}
		managed = append(managed, awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String(path)))
	}
	role := awsiam.NewRole(s.OpsStack, jsii.String("BackupRole"), &awsiam.RoleProps{
		AssumedBy:       awsiam.NewServicePrincipal(jsii.String("backup.amazonaws.com"), nil),
		Description:     jsii.String("AWS Backup's role for " + s.Names.Stack() + "'s table and media bucket"),
		ManagedPolicies: &managed,
	})
	s.BackupPlan.AddSelection(jsii.String("Selection"), &awsbackup.BackupSelectionOptions{
		Role:                role,
		BackupSelectionName: jsii.String(s.Names.Stack() + "-table-and-media"),
		Resources: &[]awsbackup.BackupResource{
			awsbackup.BackupResource_FromDynamoDbTable(s.Table),
			awsbackup.BackupResource_FromArn(s.Bucket.BucketArn()),
		},
	})
	return nil
}
