// Package awsdest sends webhook deliveries to the AWS destinations a
// seller names, through the AWS SDK: one SendMessage to an SQS queue, one
// PutEvents entry to an EventBridge bus (webhook.QueueSender and
// webhook.BusSender). Each call goes to the region of its queue or bus,
// and, where a delivery role is configured, with that role's credentials
// assumed for the delivery's vendor with a session tag of its vendor id
// (Roles), so that a seller's resource policy can admit only its own
// deliveries.
package awsdest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"
	"github.com/aws/smithy-go"

	"github.com/moku/sellerapi/shared/webhook"
)

const (
	// Source is the source of every EventBridge entry we put.
	Source = "moku.sellerapi"
	// VendorTag is the session tag that carries the delivery's vendor id:
	// a seller's policy conditions on aws:PrincipalTag/moku_vendor_id.
	VendorTag = "moku_vendor_id"
	// maxCached bounds the vendors whose role credentials are kept.
	maxCached = 10000
)

// SQSAPI is the part of the SQS client a delivery uses.
type SQSAPI interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// EventBridgeAPI is the part of the EventBridge client a delivery uses.
type EventBridgeAPI interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// Roles gives each vendor's deliveries the credentials of the delivery
// role (RoleARN) assumed with the session tag VendorTag set to the
// vendor's id, each kept per vendor for the hour it lasts (a role assumed
// by a role lasts at most that) and renewed a minute before it ends.
// A nil Roles, or one without RoleARN, gives none: the client's own
// credentials are used (local runs against an emulator).
type Roles struct {
	STS     stscreds.AssumeRoleAPIClient
	RoleARN string

	mu    sync.Mutex
	creds map[string]aws.CredentialsProvider
}

// For returns the credentials of vendorID's deliveries; nil means the
// client's own.
func (r *Roles) For(vendorID string) aws.CredentialsProvider {
	if r == nil || r.RoleARN == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.creds[vendorID]; ok {
		return p
	}
	if r.creds == nil || len(r.creds) >= maxCached {
		r.creds = map[string]aws.CredentialsProvider{}
	}
	p := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(r.STS, r.RoleARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = sessionName(vendorID)
		o.Tags = []ststypes.Tag{{Key: aws.String(VendorTag), Value: aws.String(vendorID)}}
		o.Duration = time.Hour
	}), func(o *aws.CredentialsCacheOptions) {
		// Renewed a minute early: an attempt may take RequestTimeout.
		o.ExpiryWindow = time.Minute
	})
	r.creds[vendorID] = p
	return p
}

// sessionName names a vendor's role session (CloudTrail shows it): at
// most 64 characters of [\w+=,.@-].
func sessionName(vendorID string) string {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_+=,.@-", r) {
			return r
		}
		return '-'
	}, vendorID)
	s := "delivery-" + clean
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// SQS sends deliveries to SQS queues (webhook.QueueSender).
type SQS struct {
	API   SQSAPI
	Roles *Roles
}

// SendToQueue sends m's body as one message with m's headers as message
// attributes, to the region its queue URL names (or to the loopback
// emulator it names, which only a deployment allowing private webhooks
// accepts); a FIFO queue gets the subscription as the message group and
// the delivery id as the deduplication id.
func (s SQS) SendToQueue(ctx context.Context, m webhook.AWSMessage) (string, error) {
	q := m.Destination.QueueURL
	attrs := map[string]sqstypes.MessageAttributeValue{}
	for k, v := range m.Attributes() {
		attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String(string(m.Body)), MessageAttributes: attrs}
	if strings.HasSuffix(q, ".fifo") {
		in.MessageGroupId, in.MessageDeduplicationId = aws.String(m.SubscriptionID), aws.String(m.DeliveryID)
	}
	out, err := s.API.SendMessage(ctx, in, QueueOptions(q, s.Roles.For(m.VendorID)))
	if err != nil {
		return "", apiErr("sqs SendMessage", err)
	}
	return aws.ToString(out.MessageId), nil
}

// QueueOptions point an SQS call at the queue of queueURL: to the region
// its URL names with creds (nil: the client's own), or to the loopback
// emulator it names with dummy credentials (it needs none, and gets none
// of ours). A delivery sends with them and local listen --sqs receives.
func QueueOptions(queueURL string, creds aws.CredentialsProvider) func(*sqs.Options) {
	region, endpoint := webhook.QueueEndpoint(queueURL)
	if endpoint != "" {
		creds = credentials.NewStaticCredentialsProvider("local", "local", "")
	}
	return func(o *sqs.Options) {
		if region != "" {
			o.Region = region
		}
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			if o.Region == "" {
				o.Region = "us-east-1"
			}
		}
		if creds != nil {
			o.Credentials = creds
		}
	}
}

// EventBridge puts deliveries on EventBridge buses (webhook.BusSender).
type EventBridge struct {
	API   EventBridgeAPI
	Roles *Roles
}

// PutOnBus puts one entry on m's bus, in its region: source Source,
// detail type the event's type, detail the body, time the event's. An
// entry the bus refused (FailedEntryCount > 0) is an error.
func (e EventBridge) PutOnBus(ctx context.Context, m webhook.AWSMessage) (string, error) {
	bus := m.Destination.EventBusARN
	in := &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(bus), Source: aws.String(Source), DetailType: aws.String(m.EventType),
		Detail: aws.String(string(m.Body)), Time: aws.Time(m.EventTime),
	}}}
	region := webhook.EventBusRegion(bus)
	creds := e.Roles.For(m.VendorID)
	out, err := e.API.PutEvents(ctx, in, func(o *eventbridge.Options) {
		if region != "" {
			o.Region = region
		}
		if creds != nil {
			o.Credentials = creds
		}
	})
	if err != nil {
		return "", apiErr("eventbridge PutEvents", err)
	}
	if out.FailedEntryCount > 0 || len(out.Entries) != 1 {
		code, msg := "", ""
		if len(out.Entries) > 0 {
			code, msg = aws.ToString(out.Entries[0].ErrorCode), aws.ToString(out.Entries[0].ErrorMessage)
		}
		return "", fmt.Errorf("eventbridge PutEvents: the bus did not take the entry (%d failed): %s: %s", out.FailedEntryCount, code, msg)
	}
	return aws.ToString(out.Entries[0].EventId), nil
}

// apiError is an error the AWS API answered, as an attempt records it:
// the operation, the API's code and message (not the SDK's request ids).
type apiError struct {
	op  string
	api smithy.APIError
	err error
}

func (e apiError) Error() string {
	return e.op + ": " + e.api.ErrorCode() + ": " + e.api.ErrorMessage()
}

func (e apiError) Unwrap() error { return e.err }

// apiErr names the operation an error came from.
func apiErr(op string, err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return apiError{op: op, api: ae, err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// New builds the senders from the default AWS configuration; roleARN,
// when set, is the delivery role each vendor's deliveries assume.
// Building sends no request.
func New(ctx context.Context, roleARN string) (webhook.Senders, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return webhook.Senders{}, fmt.Errorf("awsdest: aws config: %w", err)
	}
	roles := &Roles{STS: sts.NewFromConfig(cfg), RoleARN: roleARN}
	return webhook.Senders{
		SQS:         SQS{API: sqs.NewFromConfig(cfg), Roles: roles},
		EventBridge: EventBridge{API: eventbridge.NewFromConfig(cfg), Roles: roles},
	}, nil
}
