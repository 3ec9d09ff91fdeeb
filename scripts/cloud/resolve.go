package main

// Resolving the template's intrinsic functions (Ref, Fn::GetAtt, Fn::Join,
// ...) to this machine's names and addresses.

import (
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// str resolves a value needing no runtime address (names).
func (t *Template) str(v any) (string, error) { return t.resolve(v, nil) }

// Addresses are what only exists once the runner runs: the API's endpoint
// and each queue's URL.
type Addresses struct {
	APIEndpoint string
	Region      string
}

// resolve evaluates a property value: literals, Ref, Fn::GetAtt, Fn::Join
// and Fn::Sub over the template's resources and the local pseudo
// parameters. a is nil while parsing, when addresses are not known yet.
func (t *Template) resolve(v any, a *Addresses) (string, error) {
	region := "us-east-1"
	if a != nil && a.Region != "" {
		region = a.Region
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case float64, bool:
		return fmt.Sprint(x), nil
	case map[string]any:
		if len(x) != 1 {
			break
		}
		if r, ok := x["Ref"].(string); ok {
			return t.ref(r, region, a)
		}
		if g, ok := x["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			return t.getAtt(fmt.Sprint(g[0]), fmt.Sprint(g[1]), region, a)
		}
		if j, ok := x["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			var parts []string
			for _, p := range list(j[1]) {
				s, err := t.resolve(p, a)
				if err != nil {
					return "", err
				}
				parts = append(parts, s)
			}
			return strings.Join(parts, sep), nil
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			var err error
			out := regexp.MustCompile(`\$\{([^}]+)\}`).ReplaceAllStringFunc(s, func(m string) string {
				name := m[2 : len(m)-1]
				var r string
				var e error
				if id, attr, ok := strings.Cut(name, "."); ok {
					r, e = t.getAtt(id, attr, region, a)
				} else {
					r, e = t.ref(name, region, a)
				}
				if e != nil && err == nil {
					err = e
				}
				return r
			})
			return out, err
		}
	}
	return "", fmt.Errorf("value %v is not played by the cloud runner", v)
}

var errUnresolved = errors.New("known only once the runner runs")

// errNoCounterpart: a resource that is not played here (the stage's KMS
// key, the webhooks' delivery role); a variable naming it is left unset.
var errNoCounterpart = errors.New("no local counterpart")

func (t *Template) ref(id, region string, a *Addresses) (string, error) {
	switch id {
	case "AWS::Region":
		return region, nil
	case "AWS::AccountId":
		return localAccount, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return strings.TrimSuffix(filepath.Base(t.Path), ".template.json"), nil
	}
	r, ok := t.resources[id]
	if !ok {
		return "", fmt.Errorf("Ref %s: no such resource", id)
	}
	p := props(r.Properties)
	switch r.Type {
	case "AWS::DynamoDB::Table":
		return t.resolve(p["TableName"], a)
	case "AWS::S3::Bucket":
		return t.resolve(p["BucketName"], a)
	case "AWS::Lambda::Function":
		return t.resolve(p["FunctionName"], a)
	case "AWS::SQS::Queue":
		if q := t.Queues[id]; q != nil && q.URL != "" {
			return q.URL, nil
		}
		return "", fmt.Errorf("the URL of queue %s is %w", id, errUnresolved)
	case "AWS::ApiGatewayV2::Api":
		return localAPIID, nil
	case "AWS::ApiGatewayV2::Integration":
		return id, nil
	}
	return "", fmt.Errorf("Ref %s (%s) is not played by the cloud runner", id, r.Type)
}

func (t *Template) getAtt(id, attr, region string, a *Addresses) (string, error) {
	r, ok := t.resources[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s: no such resource", id)
	}
	arn := func(service, rest string) string {
		return "arn:aws:" + service + ":" + region + ":" + localAccount + ":" + rest
	}
	switch r.Type + "." + attr {
	case "AWS::DynamoDB::Table.Arn":
		n, err := t.ref(id, region, a)
		return arn("dynamodb", "table/"+n), err
	case "AWS::DynamoDB::Table.StreamArn":
		n, err := t.ref(id, region, a)
		return arn("dynamodb", "table/"+n+"/stream/local"), err
	case "AWS::SQS::Queue.Arn":
		n, err := t.resolve(props(r.Properties)["QueueName"], a)
		return arn("sqs", n), err
	case "AWS::SQS::Queue.QueueName":
		return t.resolve(props(r.Properties)["QueueName"], a)
	case "AWS::SQS::Queue.QueueUrl":
		return t.ref(id, region, a)
	case "AWS::Lambda::Function.Arn":
		n, err := t.ref(id, region, a)
		return arn("lambda", "function:"+n), err
	case "AWS::S3::Bucket.Arn":
		n, err := t.ref(id, region, a)
		return "arn:aws:s3:::" + n, err
	case "AWS::KMS::Key.Arn":
		// The functions use their local key source.
		return "", errNoCounterpart
	case "AWS::IAM::Role.Arn":
		// The delivery role (SELLERAPI_WEBHOOK_ROLE_ARN): without it the
		// webhook deliveries to SQS destinations send with the process's
		// own credentials, and an emulator's queue on loopback (accepted
		// under --allow-private-webhooks) gets dummy ones.
		return "", errNoCounterpart
	case "AWS::ApiGatewayV2::Api.ApiEndpoint":
		if a == nil || a.APIEndpoint == "" {
			return "", fmt.Errorf("the API's endpoint is %w", errUnresolved)
		}
		return a.APIEndpoint, nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s (%s) is not played by the cloud runner", id, attr, r.Type)
}

// ResolveEnv resolves every function's environment once the queues exist
// and the API listens.
func (t *Template) ResolveEnv(a Addresses) error {
	for _, f := range t.Functions {
		f.Env = map[string]string{}
		for k, v := range f.env {
			s, err := t.resolve(v, &a)
			if errors.Is(err, errNoCounterpart) {
				continue
			}
			if err != nil {
				return fmt.Errorf("function %s: environment variable %s: %w", f.Name, k, err)
			}
			f.Env[k] = s
		}
	}
	return nil
}

// FunctionByName finds a function by its FunctionName.
func (t *Template) FunctionByName(name string) *Function {
	for _, f := range t.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}
