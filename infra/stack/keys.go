package stack

// The stage's customer-managed KMS key: it encrypts the table (and so its
// stream and its PITR and on-demand backups), and the functions that
// envelope-encrypt secrets (webhook signing secrets, the cursor key) make
// and open their data keys with it.

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// EnvKMSKeyARN tells a function the stage key's ARN, for the envelope
// encryption of the secrets it reads (webhook signing secrets, the cursor
// key). Only the functions granted SecretKeyActions get it.
const EnvKMSKeyARN = "SELLERAPI_KMS_KEY_ARN"

// TableKeyActions are what a function that uses the table needs of its
// key, only through DynamoDB (kms:ViaService): DynamoDB opens and caches
// the table key on the caller's behalf.
var TableKeyActions = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"}

// SecretKeyActions are what a function that envelope-encrypts secrets may
// ask of the key directly: a new data key, and opening one.
var SecretKeyActions = []string{"kms:Decrypt", "kms:GenerateDataKey"}

// newKey adds the stage's key: rotated yearly by KMS (old key material
// stays to decrypt), retained with the table, its alias alias/<stack>.
func (s *Stack) newKey(d Definition) {
	s.Key = awskms.NewKey(s.Stack, jsii.String("Key"), &awskms.KeyProps{
		Alias:             jsii.String("alias/" + s.Names.Stack()),
		Description:       jsii.String("Seller Platform API, stage " + d.Stage + ": the table and the envelope of its secrets"),
		EnableKeyRotation: jsii.Bool(true),
		PendingWindow:     awscdk.Duration_Days(jsii.Number(30)),
		RemovalPolicy:     d.removal(),
	})
}

// KeyARN is the stage key's ARN, the value of EnvKMSKeyARN.
func (s *Stack) KeyARN() *string { return s.Key.KeyArn() }

// grantTableKey lets f use the table's key through DynamoDB only.
func (s *Stack) grantTableKey(f awslambda.Function) {
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("TableKey"),
		Actions:    jsii.Strings(TableKeyActions...),
		Resources:  &[]*string{s.Key.KeyArn()},
		Conditions: &map[string]any{"StringEquals": map[string]any{"kms:ViaService": "dynamodb." + *s.Stack.Region() + ".amazonaws.com"}},
	}))
}

// grantSecretKey lets f make and open data keys with the stage key and
// tells it the key (EnvKMSKeyARN).
func (s *Stack) grantSecretKey(f awslambda.Function) {
	f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("SecretKey"),
		Actions:   jsii.Strings(SecretKeyActions...),
		Resources: &[]*string{s.Key.KeyArn()},
	}))
	f.AddEnvironment(jsii.String(EnvKMSKeyARN), s.Key.KeyArn(), nil)
}
