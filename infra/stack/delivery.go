package stack

// The delivery role of webhooks' AWS destinations. A seller's EventBridge
// bus or SQS queue admits our deliveries by a resource policy naming this
// role; every seller's does, so the role alone would let one seller's
// subscription name another's queue (a confused deputy). The functions
// that deliver never put or send with their own roles: they assume this
// one for each vendor with the session tag moku_vendor_id (the vendor's
// id; shared/webhook/awsdest), and a seller's policy conditions on
// aws:PrincipalTag/moku_vendor_id (docs/operations.md). The role may do
// nothing but put events on buses and send messages to queues; the trust
// policy admits only the delivering functions' roles, and only with the
// vendor tag set. One resource: the policy is inline.

import (
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/webhook/awsdest"
)

// DeliveryActions are what the delivery role may do, on DeliveryResources:
// one PutEvents on an event bus, one SendMessage to a queue, in any
// account (the seller's resource policy decides).
var (
	DeliveryActions   = []string{"events:PutEvents", "sqs:SendMessage"}
	DeliveryResources = map[string]string{
		"events:PutEvents": "arn:aws:events:*:*:event-bus/*",
		"sqs:SendMessage":  "arn:aws:sqs:*:*:*",
	}
	// AssumeDeliveryActions are what a delivering function may do with
	// the delivery role.
	AssumeDeliveryActions = []string{"sts:AssumeRole", "sts:TagSession"}
)

// DeliveryRoleName is the delivery role's name, sellerapi-<stage>-webhook-delivery:
// the role a seller's bus or queue policy names (docs/operations.md).
func (s *Stack) DeliveryRoleName() string { return s.Names.Stack() + "-webhook-delivery" }

// deliveryRole adds the delivery role, trusted by the roles of the
// functions in fns, and tells them its ARN (config.EnvWebhookRoleARN).
func (s *Stack) deliveryRole(fns []awslambda.Function) {
	if len(fns) == 0 {
		return
	}
	var principals []awsiam.IPrincipal
	for _, f := range fns {
		principals = append(principals, awsiam.NewArnPrincipal(f.Role().RoleArn()))
	}
	statements := []awsiam.PolicyStatement{}
	for _, a := range DeliveryActions {
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(a),
			Resources: jsii.Strings(DeliveryResources[a]),
		}))
	}
	role := awsiam.NewRole(s.Stack, jsii.String("WebhookDeliveryRole"), &awsiam.RoleProps{
		// A name of our choosing: sellers' policies name this role's ARN,
		// which must not change when the stack is updated.
		RoleName:    jsii.String(s.DeliveryRoleName()),
		Description: jsii.String("Webhook deliveries to sellers' EventBridge buses and SQS queues, assumed per vendor with the session tag " + awsdest.VendorTag),
		AssumedBy:   awsiam.NewCompositePrincipal(principals...),
		InlinePolicies: &map[string]awsiam.PolicyDocument{
			"Deliver": awsiam.NewPolicyDocument(&awsiam.PolicyDocumentProps{Statements: &statements}),
		},
	})
	// The trust policy: the delivering roles, only with the vendor tag.
	role.AssumeRolePolicy().AddStatements(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("TagTheVendor"),
		Actions:    jsii.Strings("sts:TagSession"),
		Principals: &principals,
		Conditions: &map[string]any{"StringLike": map[string]any{"aws:RequestTag/" + awsdest.VendorTag: "?*"}},
	}))
	s.deliveryRoleARN = role.RoleArn()
	for _, f := range fns {
		f.Role().AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WebhookDeliveryRole"),
			Actions:   jsii.Strings(AssumeDeliveryActions...),
			Resources: &[]*string{role.RoleArn()},
		}))
		f.AddEnvironment(jsii.String(config.EnvWebhookRoleARN), role.RoleArn(), nil)
	}
}
