package stack

import (
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/moku/sellerapi/shared/webhook/awsdest"
)

// deliveryRoleID is the logical id of the stack's one webhook delivery
// role: the role whose inline policy is named Deliver.
func deliveryRoleID(tb testing.TB, t tmpl) string {
	tb.Helper()
	var found []string
	for _, id := range t.ofType("AWS::IAM::Role") {
		policies, _ := t.res[id].Properties["Policies"].([]any)
		for _, p := range policies {
			if p.(map[string]any)["PolicyName"] == "Deliver" {
				found = append(found, id)
			}
		}
	}
	if len(found) != 1 {
		tb.Fatalf("roles with inline policies: %v, want the delivery role alone", found)
	}
	return found[0]
}

// TestTheWebhookDeliveryRole: deliveries to sellers' buses and queues are
// made as one role, which may do nothing but PutEvents on an event bus and
// SendMessage to a queue (the shapes of ARN a destination may name, in any
// account: the seller's resource policy decides), which only the
// delivering functions' roles may assume, and only with the session tag
// of the vendor (what a seller's policy conditions on). It is one
// resource: the policy is inline, the grants to assume it are statements
// of the functions' existing policies.
func TestTheWebhookDeliveryRole(t *testing.T) {
	id := deliveryRoleID(t, prod)
	p := prod.res[id].Properties
	if p["RoleName"] != "sellerapi-prod-webhook-delivery" || p["ManagedPolicyArns"] != nil || p["PermissionsBoundary"] != nil {
		t.Errorf("delivery role: %v", p)
	}
	if got := prod.statements(t, id); len(got) != 0 {
		t.Errorf("the delivery role has attached policies: %v", got)
	}
	policies := p["Policies"].([]any)
	if len(policies) != 1 {
		t.Fatalf("inline policies: %v", policies)
	}
	grants := map[string]string{}
	for _, s := range policies[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
		st := s.(map[string]any)
		acts := actions(st)
		res, ok := st["Resource"].(string)
		if st["Effect"] != "Allow" || st["Condition"] != nil || st["NotAction"] != nil || st["NotResource"] != nil || len(acts) != 1 || !ok {
			t.Fatalf("delivery statement %v", st)
		}
		if _, dup := grants[acts[0]]; dup {
			t.Fatalf("%s granted twice", acts[0])
		}
		grants[acts[0]] = res
	}
	want := map[string]string{"events:PutEvents": "arn:aws:events:*:*:event-bus/*", "sqs:SendMessage": "arn:aws:sqs:*:*:*"}
	if !reflect.DeepEqual(grants, want) || !reflect.DeepEqual(grants, DeliveryResources) {
		t.Errorf("the delivery role may %v, want %v", grants, want)
	}

	// Trusted by the delivering functions' roles only, the tag required.
	var deliverers []string
	for fnID, fn := range prod.functionsByID() {
		if prod.def.delivers(fn) {
			roleID, _ := getAtt(prod.res[fnID].Properties["Role"])
			deliverers = append(deliverers, roleID)
		}
	}
	sort.Strings(deliverers)
	if len(deliverers) != 2 {
		t.Fatalf("delivering functions' roles: %v, want the webhook worker's and the webhooks API's", deliverers)
	}
	// Each action's principals, over the trust policy's statements.
	trusted := map[string][]string{}
	tagged := false
	for _, s := range p["AssumeRolePolicyDocument"].(map[string]any)["Statement"].([]any) {
		st := s.(map[string]any)
		if st["Effect"] != "Allow" || st["NotPrincipal"] != nil || st["NotAction"] != nil {
			t.Fatalf("trust statement %v", st)
		}
		var who []string
		switch aws := st["Principal"].(map[string]any)["AWS"].(type) {
		case []any:
			for _, a := range aws {
				id, _ := getAtt(a)
				who = append(who, id)
			}
		default:
			id, _ := getAtt(aws)
			who = append(who, id)
		}
		for _, a := range actions(st) {
			trusted[a] = append(trusted[a], who...)
		}
		if cond := st["Condition"]; cond != nil {
			j, _ := json.Marshal(cond)
			if string(j) != `{"StringLike":{"aws:RequestTag/`+awsdest.VendorTag+`":"?*"}}` || !slices.Equal(actions(st), []string{"sts:TagSession"}) {
				t.Errorf("trust condition %s on %v", j, actions(st))
			}
			tagged = true
		} else if slices.Contains(actions(st), "sts:TagSession") {
			t.Errorf("sts:TagSession without the vendor tag's condition: %v", st)
		}
	}
	for a, who := range trusted {
		sort.Strings(who)
		if !slices.Equal(who, deliverers) {
			t.Errorf("%s trusted to %v, want %v", a, who, deliverers)
		}
	}
	if !tagged || len(trusted) != 2 || trusted["sts:AssumeRole"] == nil || trusted["sts:TagSession"] == nil {
		t.Errorf("trust: %v (tag required: %v)", trusted, tagged)
	}
}
