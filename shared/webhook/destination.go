package webhook

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/fields"
)

// Destination types: where a subscription's deliveries go.
const (
	// DestinationHTTPS is the contract's signed POST to a URL.
	DestinationHTTPS = "https"
	// DestinationEventBridge is PutEvents to an event bus of the seller's
	// account.
	DestinationEventBridge = "eventbridge"
	// DestinationSQS is SendMessage to a queue of the seller's account.
	DestinationSQS = "sqs"
)

// Destination is where a subscription's deliveries go: an HTTPS URL, an
// Amazon EventBridge event bus, or an Amazon SQS queue. Exactly the field
// of its type is set.
type Destination struct {
	Type        string `json:"type"`
	URL         string `json:"url,omitempty"`
	EventBusARN string `json:"event_bus_arn,omitempty"`
	QueueURL    string `json:"queue_url,omitempty"`
}

// Address is the destination's one address: the URL, the bus's ARN or
// the queue's URL. A subscription's view shows it as url.
func (d Destination) Address() string {
	switch d.Type {
	case DestinationEventBridge:
		return d.EventBusARN
	case DestinationSQS:
		return d.QueueURL
	}
	return d.URL
}

// IsAWS reports whether deliveries go through an AWS API, not an HTTP POST.
func (d Destination) IsAWS() bool {
	return d.Type == DestinationEventBridge || d.Type == DestinationSQS
}

// HTTPS is the destination of a plain URL (the url field alone).
func HTTPS(u string) Destination { return Destination{Type: DestinationHTTPS, URL: u} }

// The shapes of AWS addresses: commercial partition only, as the stack's
// grants are.
var (
	regionPattern   = `[a-z]{2}(?:-[a-z]+)+-[0-9]{1,2}`
	eventBusPattern = regexp.MustCompile(`^arn:aws:events:(` + regionPattern + `):([0-9]{12}):event-bus/([A-Za-z0-9._-]{1,256})$`)
	queueHost       = regexp.MustCompile(`^sqs\.(` + regionPattern + `)\.amazonaws\.com$`)
	queuePath       = regexp.MustCompile(`^/([0-9]{12})/([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)$`)
)

func destErr(field, format string, args ...any) error {
	return errs.Ef(errs.CodeInvalidRequest, "%s: %s", field, fmt.Sprintf(format, args...))
}

// EventBusRegion is the region of a bus ARN checked by CheckDestination.
func EventBusRegion(arn string) string {
	if m := eventBusPattern.FindStringSubmatch(arn); m != nil {
		return m[1]
	}
	return ""
}

// QueueEndpoint splits a queue URL checked by CheckDestination into the
// queue's region, or, for a loopback emulator's URL, the endpoint to send
// to (scheme and host).
func QueueEndpoint(raw string) (region, endpoint string) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", ""
	}
	if m := queueHost.FindStringSubmatch(u.Host); m != nil && u.Scheme == "https" {
		return m[1], ""
	}
	return "", u.Scheme + "://" + u.Host
}

// CheckDestination checks a destination's shape under p, naming field
// (destination, or url) in its refusals; an https destination is checked
// as ParseURL does (its host is resolved by CheckURL when it is stored).
// An event bus must be arn:aws:events:<region>:<12 digits>:event-bus/<name>
// and a queue https://sqs.<region>.amazonaws.com/<12 digits>/<name>; under
// AllowLoopback a queue may also be on a loopback address (an emulator:
// http or https, any port, the same path).
func (p Policy) CheckDestination(d Destination, field string) error {
	switch d.Type {
	case DestinationHTTPS:
		_, err := p.ParseURL(d.URL)
		return err
	case DestinationEventBridge:
		if !eventBusPattern.MatchString(d.EventBusARN) {
			return destErr(field+".event_bus_arn", "must be an event bus ARN, arn:aws:events:<region>:<account id, 12 digits>:event-bus/<name>")
		}
		return nil
	case DestinationSQS:
		return p.checkQueueURL(d.QueueURL, field+".queue_url")
	}
	return destErr(field+".type", "must be one of https, eventbridge, sqs")
}

func (p Policy) checkQueueURL(raw, field string) error {
	shape := "must be a queue URL, https://sqs.<region>.amazonaws.com/<account id, 12 digits>/<queue name>"
	u, err := url.Parse(raw)
	if err != nil || len(raw) > MaxURLLength || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.Contains(raw, "#") ||
		u.Opaque != "" || !queuePath.MatchString(u.EscapedPath()) {
		return destErr(field, "%s", shape)
	}
	if u.Scheme == "https" && queueHost.MatchString(u.Host) {
		return nil
	}
	if p.AllowLoopback && (u.Scheme == "http" || u.Scheme == "https") && u.Port() != "" {
		if addr, err := netip.ParseAddr(u.Hostname()); err == nil && addr.Zone() == "" && !addr.Is4In6() && addr.IsLoopback() {
			return nil
		}
	}
	return destErr(field, "%s", shape)
}

// readDestination reads the destination object of a create or PATCH
// body; its fields are those of its type only.
func readDestination(o *fields.Object) (Destination, bool) {
	raw := o.Raw("destination")
	if raw == nil {
		return Destination{}, false
	}
	c, err := fields.Parse(raw, o.Name("destination"))
	if err != nil {
		o.Fail("destination", "must be an object")
		return Destination{}, false
	}
	addr := fields.StringRule{Min: 1, Max: MaxURLLength}
	d := Destination{Type: c.String("type", fields.Required, fields.StringRule{OneOf: []string{DestinationHTTPS, DestinationEventBridge, DestinationSQS}})}
	switch d.Type {
	case DestinationHTTPS:
		d.URL = c.String("url", fields.Required, addr)
	case DestinationEventBridge:
		d.EventBusARN = c.String("event_bus_arn", fields.Required, addr)
	case DestinationSQS:
		d.QueueURL = c.String("queue_url", fields.Required, addr)
	}
	o.Child(c)
	return d, true
}
